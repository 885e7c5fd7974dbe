package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// answer is the JSON object a judge must reply with. Scores is either the
// keyed form the json_schema asks for, {"1": {"explanation", "score"}, …},
// or ART's list form, [{"trajectory_id", "explanation", "score"}, …], which
// judges without structured output may still write.
type answer struct {
	Scores json.RawMessage `json:"scores"`
}

// keyedScore is one entry of the keyed form.
type keyedScore struct {
	Explanation explanation `json:"explanation"`
	Score       scoreNumber `json:"score"`
}

// explanation is an entry's explanation: a string (null reads as none).
// Anything else is an error naming the value, not encoding/json's wording
// with Go type names.
type explanation string

func (e *explanation) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("explanation is %s: want a string", prefix(string(b), 40))
	}
	if s != nil {
		*e = explanation(*s)
	}
	return nil
}

// rawScore is one entry of either form as the judge wrote it; Score is
// nil when the judge left it out or wrote null.
type rawScore struct {
	ID          string
	Explanation string
	Score       scoreNumber
}

// listScore is one entry of ART's list form as decoded.
type listScore struct {
	ID          listID      `json:"trajectory_id"`
	Explanation explanation `json:"explanation"`
	Score       scoreNumber `json:"score"`
}

// scoreNumber is a score as the judge wrote it: a JSON number, or a
// string holding one, which a judge without structured output writes and
// ART's pydantic answer model reads; v is nil when it is missing or null.
// Anything else is an error naming the value, not encoding/json's
// wording with Go type names (it may end up in a row's error field).
type scoreNumber struct{ v *float64 }

func (n *scoreNumber) UnmarshalJSON(b []byte) error {
	n.v = nil
	var num json.Number
	var text string
	switch {
	case string(b) == "null":
		return nil
	case json.Unmarshal(b, &num) == nil:
		text = num.String()
	case json.Unmarshal(b, &text) == nil:
		// Decimal only, as ART's pydantic model reads a number in a
		// string: ParseFloat would also take hex ("0x1p-1"), "Inf",
		// "NaN" and underscores.
		if text = strings.TrimSpace(text); !decimal(text) {
			return fmt.Errorf("score is %s: want a number written in decimal", prefix(string(b), 40))
		}
	default:
		return fmt.Errorf("score is %s: want a number", prefix(string(b), 40))
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		// The text is a number (json.Number, decimal): out of float64's
		// range, as 1e999 is.
		return fmt.Errorf("score is %s: a number out of range, want one in [0,1]", prefix(string(b), 40))
	}
	n.v = &f
	return nil
}

// decimal reports whether s is a decimal number: an optional sign,
// digits with at most one point (at least one digit), and an optional
// exponent.
func decimal(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	digits, point := 0, false
	for _, r := range mant {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.' && !point:
			point = true
		default:
			return false
		}
	}
	if digits == 0 {
		return false
	}
	if !hasExp {
		return true
	}
	if len(exp) > 0 && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	if exp == "" {
		return false
	}
	for _, r := range exp {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// listID is a trajectory_id of ART's list form: a string, or a whole
// number written without quotes (1 for "1").
type listID string

func (id *listID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*id = listID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("trajectory_id is %s: want a string", prefix(string(b), 40))
	}
	*id = listID(n.String())
	// 1.0 and 1e0 are the whole number 1 too, id "1"; digits alone stay
	// as written (no float rounding of a long one).
	if strings.ContainsAny(n.String(), ".eE") {
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			*id = listID(strconv.FormatInt(int64(f), 10))
		}
	}
	return nil
}

// SchemaOptions tunes the answer schema to what a judge server enforces.
type SchemaOptions struct {
	// ExplanationMaxChars, when > 0, adds maxLength to each explanation.
	// Servers that decode under the schema (hone-serve, vLLM) then finish
	// every answer within a known number of tokens, even with a weak model
	// that would otherwise ramble until max_tokens cuts the JSON off.
	// OpenAI's strict structured outputs do not list maxLength among the
	// keywords they accept, so it is off (0) unless asked for.
	ExplanationMaxChars int
}

// Schema returns the JSON schema of the answer for the trajectory ids, as
// sent in the json_schema response format. The scores are an object keyed
// by trajectory id, every id a required property and no other allowed,
// rather than ART's list of {trajectory_id, …}: a list item's schema
// cannot say "a different id at each position", so a constrained decoder
// could still repeat an id, whereas here each id appears exactly once by
// construction. Every keyword is one OpenAI's strict mode accepts
// (type, properties, required, additionalProperties: false, description,
// minimum, maximum) except the optional maxLength (see SchemaOptions).
// Servers that enforce it cannot produce a missing or unknown id or an
// out-of-range score; Parse checks anyway, since not all do.
func Schema(ids []string, o SchemaOptions) map[string]any {
	explanation := map[string]any{"type": "string", "description": "one or two sentences on how this trajectory did"}
	if o.ExplanationMaxChars > 0 {
		explanation["maxLength"] = o.ExplanationMaxChars
	}
	entry := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"explanation": explanation,
			"score":       map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		},
		// Explanation first: a model that writes its reason before its
		// number grades better, and schema-ordered decoders emit it so.
		"required":             []string{"explanation", "score"},
		"additionalProperties": false,
	}
	props := make(map[string]any, len(ids))
	for _, id := range ids {
		props[id] = entry
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"scores": map[string]any{
				"type":                 "object",
				"properties":           props,
				"required":             append([]string(nil), ids...),
				"additionalProperties": false,
			},
		},
		"required":             []string{"scores"},
		"additionalProperties": false,
	}
}

// Parse decodes and checks a judge's answer against the request: a JSON
// object {"scores": …}, keyed by id or a list (see answer), with exactly
// one entry per requested id, each
// with a score (a missing or null one is not 0) that is a finite number in
// [0,1]. The scores come back in the order of
// req.IDs, matched by id, not by position. A Markdown code fence around
// the JSON is tolerated, with text before or after the fence (the last
// fenced block that is JSON is the answer), and so is a reasoning model's thinking before it
// (text up to "</think>", which a server without a reasoning parser leaves
// in the content) when the answer is not JSON as it stands. Errors are
// *Error of kind "malformed" (retryable).
func Parse(req Request, content string) ([]Score, error) {
	bad := func(format string, args ...any) error {
		return &Error{Kind: "malformed", Retryable: true, Err: fmt.Errorf(format, args...)}
	}
	raw := strings.TrimSpace(content)
	text := stripFence(raw)
	if i := strings.Index(raw, thinkEnd); i >= 0 && !json.Valid([]byte(text)) {
		// As vLLM's DeepSeek-R1 reasoning parser splits it: what precedes
		// the first </think> is thinking (its <think> may have been in the
		// prompt), the answer follows.
		raw = strings.TrimSpace(raw[i+len(thinkEnd):])
		text = stripFence(raw)
	}
	if !json.Valid([]byte(text)) {
		if block, ok := fencedJSON(raw); ok {
			text = block
		}
	}
	if text == "" {
		return nil, bad("empty answer")
	}
	var a answer
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&a); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field == "" && typeErr.Value == "array" {
			// ART's list of scores with its "scores" key left out: say
			// which key, rather than name the Go type it was decoded to.
			return nil, bad(`answer is a list without "scores" around it: want {"scores": …}, keyed by trajectory id or holding ART's list (answer starts %q)`, prefix(text, 80))
		}
		return nil, bad("answer is not the expected JSON object: %v (answer starts %q)", err, prefix(text, 80))
	}
	if dec.More() {
		return nil, bad("trailing text after the JSON answer")
	}
	scores, err := entries(a.Scores)
	if err != nil {
		return nil, bad("answer's scores: %v", err)
	}
	var errs []string
	if len(scores) != len(req.IDs) {
		// Counted first, then named below: which ids are missing or made
		// up tells a cut answer (the last blocks missing) from a judge
		// that numbered the attempts its own way.
		errs = append(errs, fmt.Sprintf("answer has %d scores for %d trajectories", len(scores), len(req.IDs)))
	}
	want := make(map[string]int, len(req.IDs))
	for i, id := range req.IDs {
		want[id] = i
	}
	out := make([]Score, len(req.IDs))
	seen := make([]bool, len(req.IDs))
	for _, r := range scores {
		i, ok := want[r.ID]
		score := r.Score.v
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("unknown trajectory_id %q", r.ID))
			continue
		case seen[i]:
			errs = append(errs, fmt.Sprintf("trajectory_id %q scored twice", r.ID))
			continue
		case score == nil:
			errs = append(errs, fmt.Sprintf("trajectory_id %q: no score", r.ID))
		case math.IsNaN(*score) || *score < 0 || *score > 1:
			errs = append(errs, fmt.Sprintf("trajectory_id %q: score %v is outside [0,1]", r.ID, *score))
		}
		seen[i] = true
		out[i] = Score{ID: r.ID, Explanation: r.Explanation}
		if score != nil {
			out[i].Score = *score
		}
	}
	if len(errs) > 0 {
		for i, ok := range seen {
			if !ok {
				errs = append(errs, fmt.Sprintf("no score for trajectory_id %q", req.IDs[i]))
			}
		}
		// One line: the error goes into a log line and each marked row's
		// error column, where a newline would split it.
		return nil, bad("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// thinkEnd ends a reasoning model's thinking in its content.
const thinkEnd = "</think>"

// fencedJSON returns the content of the last Markdown code fence in s
// that is valid JSON: a judge without structured output often writes a
// sentence before or after its fenced answer, and may echo the prompt's
// example (the one-attempt template's is valid JSON) or a draft before
// it; the answer comes last. A fence opens at the start of a line, as in
// Markdown, or ends a line of prose ("Here are the scores: ```json", as
// models write it too), so that one named inline in a sentence ("a
// ```json``` fence") is not paired with the answer's opening; it closes
// at the next ```.
func fencedJSON(s string) (string, bool) {
	var last string
	found := false
	take := func(block string) {
		if block = strings.TrimSpace(block); json.Valid([]byte(block)) {
			last, found = block, true
		}
	}
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		open, ok := fenceOpen(line)
		switch {
		case !ok:
			s = rest
		case strings.Contains(open, fence): // a fence of one line
			take(open[:strings.Index(open, fence)])
			s = rest
		default: // past the language tag line, to the closing fence's line
			end := strings.Index(rest, fence)
			if end < 0 {
				return last, found
			}
			take(rest[:end])
			_, s, _ = strings.Cut(rest[end:], "\n")
		}
	}
	return last, found
}

// fence opens and closes a Markdown code block.
const fence = "```"

// fenceOpen reports whether line opens a code fence, and returns what
// follows the fence on it: the line starts with one (after spaces), or
// its only fence ends it, followed by a language tag at most (letters,
// digits, _, + or -), which a sentence naming a fence inline is not.
func fenceOpen(line string) (string, bool) {
	if open, ok := strings.CutPrefix(strings.TrimLeft(line, " "), fence); ok {
		return open, true
	}
	i := strings.Index(line, fence)
	if i < 0 || strings.Count(line, fence) != 1 {
		return "", false
	}
	open := line[i+len(fence):]
	for _, r := range strings.TrimSpace(open) {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_+-", r) {
			return "", false
		}
	}
	return open, true
}

func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:] // drop the language tag line
	}
	s = strings.TrimSpace(s)
	return strings.TrimSpace(strings.TrimSuffix(s, "```"))
}

// prefix returns s cut to at most n bytes, on a character boundary, and
// marked as cut: the text may end up in a row's error field (under
// --on-judge-error mark), a Parquet string that must be valid UTF-8.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// entries reads the scores in either form, in the answer's order. In the
// keyed form a repeated key is kept as a repeated entry (a plain map would
// silently keep the last), so Parse reports it like a repeated list id.
func entries(raw json.RawMessage) ([]rawScore, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil
	case raw[0] == '[':
		var list []listScore
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		out := make([]rawScore, len(list))
		for i, l := range list {
			out[i] = rawScore{ID: string(l.ID), Explanation: string(l.Explanation), Score: l.Score}
		}
		return out, nil
	case raw[0] != '{':
		return nil, fmt.Errorf("want an object keyed by trajectory id or a list, got %q", prefix(string(raw), 40))
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, err
	}
	var out []rawScore
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		id, _ := tok.(string) // object keys are always strings
		var k keyedScore
		if err := dec.Decode(&k); err != nil {
			return nil, fmt.Errorf("trajectory_id %q: %w", id, err)
		}
		out = append(out, rawScore{ID: id, Explanation: string(k.Explanation), Score: k.Score})
	}
	return out, nil
}
