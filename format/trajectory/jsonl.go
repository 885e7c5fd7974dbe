package trajectory

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"

	"github.com/hone-rl/hone/format/chatmsg"
)

// jsonLine is one JSON Lines record: the OpenAI chat shape ({"messages",
// "tools"}) plus Hone's fields, each omitted when empty. Field names match
// the Parquet column names.
type jsonLine struct {
	Messages         []json.RawMessage `json:"messages"`
	Tools            []Tool            `json:"tools,omitempty"`
	Run              string            `json:"run,omitempty"`
	Step             int64             `json:"step,omitempty"`
	Model            string            `json:"model,omitempty"`
	Adapter          string            `json:"adapter,omitempty"`
	ScenarioID       string            `json:"scenario_id,omitempty"`
	Split            string            `json:"split,omitempty"`
	Payload          json.RawMessage   `json:"payload,omitempty"`
	GroupID          string            `json:"group_id,omitempty"`
	TrajectoryID     string            `json:"trajectory_id,omitempty"`
	Env              string            `json:"env,omitempty"`
	Reward           *jsonFloat        `json:"reward,omitempty"`
	RewardComponents jsonComponents    `json:"reward_components,omitempty"`
	Metrics          jsonMetrics       `json:"metrics,omitempty"`
	Metadata         jsonMetadata      `json:"metadata,omitempty"`
	Error            string            `json:"error,omitempty"`
	CreatedAt        *time.Time        `json:"created_at,omitempty"`
	StartedAt        *time.Time        `json:"started_at,omitempty"`
	FinishedAt       *time.Time        `json:"finished_at,omitempty"`
	// Schema version 2.
	AdditionalHistories []jsonHistory `json:"additional_histories,omitempty"`
	Logs                []string      `json:"logs,omitempty"`
	GroupMetadata       jsonMetadata  `json:"group_metadata,omitempty"`
	GroupMetrics        jsonMetrics   `json:"group_metrics,omitempty"`

	nulls []NullMetric // read, not written: the metrics given as null
}

// jsonMetrics are metrics as a line holds them. A value that is not finite
// is written as the string strconv writes ("NaN", "+Inf", "-Inf"), since
// JSON has no such numbers, and read back so. A boolean reads as 1 or 0:
// ART's metrics may be booleans.
type jsonMetrics map[string]float64

func (m jsonMetrics) MarshalJSON() ([]byte, error) {
	out := make(map[string]jsonFloat, len(m))
	for k, v := range m {
		out[k] = jsonFloat(v)
	}
	return json.Marshal(out)
}

func (m *jsonMetrics) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*m = nil
		return nil
	}
	out := make(jsonMetrics, len(raw))
	for k, v := range raw {
		// The live routes' reading (MetricValue), a null left out of the
		// row as they leave it (ImportJSONL reports it), except that a
		// file holds the non-finite values as strings.
		var f jsonFloat
		value, isNull, ok := MetricValue(v)
		switch {
		case isNull:
			continue
		case ok:
			out[k] = value
		case f.UnmarshalJSON(v) == nil:
			out[k] = float64(f)
		default:
			return fmt.Errorf("metric %q is %s: want a number, true or false, or \"NaN\", \"+Inf\" or \"-Inf\"", k, v)
		}
	}
	*m = out
	return nil
}

// jsonFloat is a number as JSON holds it in this package's lines and
// summaries (a reward, a reward component, a metric, a RewardSummary
// figure): one that is not finite (a NaN reward is an unscored one) as the
// string strconv writes, "NaN", "+Inf" or "-Inf", since JSON has no such
// numbers. null leaves it as it is, as encoding/json does for a number.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return json.Marshal(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return json.Marshal(v)
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err == nil {
		*f = jsonFloat(v)
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil && isNonFinite(s) {
		v, _ = strconv.ParseFloat(s, 64)
		*f = jsonFloat(v)
		return nil
	}
	return fmt.Errorf("%s: want a number, or \"NaN\", \"+Inf\" or \"-Inf\"", b)
}

// jsonComponent is a RewardComponent as a line holds it (its value a
// jsonFloat).
type jsonComponent struct {
	Name        string    `json:"name"`
	Value       jsonFloat `json:"value"`
	Explanation string    `json:"explanation,omitempty"`
}

// jsonComponents are a line's reward components. encoding/json would
// take a null component, or one whose value is null or missing, as a
// value of 0: a score the scorer never gave, which the trainer's reward
// sums and the report's charts would then count. Each is refused, by its
// index, as a null metric is.
type jsonComponents []jsonComponent

func (cs *jsonComponents) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("reward_components: %w", err)
	}
	if raw == nil {
		*cs = nil
		return nil
	}
	out := make(jsonComponents, len(raw))
	for i, r := range raw {
		if string(bytes.TrimSpace(r)) == "null" {
			return fmt.Errorf("reward_components[%d] is null: want {\"name\": …, \"value\": …}", i)
		}
		var c struct {
			Name        string          `json:"name"`
			Value       json.RawMessage `json:"value"`
			Explanation string          `json:"explanation"`
		}
		if err := json.Unmarshal(r, &c); err != nil {
			return fmt.Errorf("reward_components[%d]: %w", i, err)
		}
		if len(c.Value) == 0 || string(bytes.TrimSpace(c.Value)) == "null" {
			return fmt.Errorf("reward_components[%d] (%q): value is missing or null: want a number, or \"NaN\", \"+Inf\" or \"-Inf\"", i, c.Name)
		}
		out[i] = jsonComponent{Name: c.Name, Explanation: c.Explanation}
		if err := out[i].Value.UnmarshalJSON(c.Value); err != nil {
			return fmt.Errorf("reward_components[%d] (%q): value %w", i, c.Name, err)
		}
	}
	*cs = out
	return nil
}

func importComponents(cs []jsonComponent) []RewardComponent {
	if cs == nil {
		return nil
	}
	out := make([]RewardComponent, len(cs))
	for i, c := range cs {
		out[i] = RewardComponent{Name: c.Name, Value: float64(c.Value), Explanation: c.Explanation}
	}
	return out
}

func exportComponents(cs []RewardComponent) []jsonComponent {
	if cs == nil {
		return nil
	}
	out := make([]jsonComponent, len(cs))
	for i, c := range cs {
		out[i] = jsonComponent{Name: c.Name, Value: jsonFloat(c.Value), Explanation: c.Explanation}
	}
	return out
}

// isNonFinite reports whether s spells a number that is not finite.
func isNonFinite(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && (math.IsNaN(f) || math.IsInf(f, 0))
}

// jsonMetadata is metadata as a line holds it. A value that is not a
// string (ART's metadata may hold numbers, booleans and null) is kept as
// its JSON text, compacted.
type jsonMetadata map[string]string

func (m *jsonMetadata) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*m = nil
		return nil
	}
	out := make(jsonMetadata, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil && string(v) != "null" {
			out[k] = s
		} else {
			out[k] = compact(v)
		}
	}
	*m = out
	return nil
}

// jsonHistory is one additional history: {"messages": [...], "tools":
// [...]}, where ART's "messages_and_choices" is read as "messages".
type jsonHistory struct {
	Messages           []json.RawMessage `json:"messages"`
	MessagesAndChoices []json.RawMessage `json:"messages_and_choices,omitempty"`
	Tools              []Tool            `json:"tools,omitempty"`
}

// turnFields are Hone's fields of a message line, written after the chat
// message's own (chatmsg.MarshalWith).
type turnFields struct {
	Trainable    bool         `json:"trainable,omitempty"`
	TokenIDs     []int32      `json:"token_ids,omitempty"`
	Logprobs     jsonLogprobs `json:"logprobs,omitempty"`
	FinishReason string       `json:"finish_reason,omitempty"`
	AnswerModel  string       `json:"answer_model,omitempty"`
	LatencyMS    float64      `json:"latency_ms,omitempty"`
}

// jsonLogprobs are a turn's sampling logprobs as a line holds them: numbers,
// and one that is not finite (NaN is an unknown logprob) the string
// strconv writes, "NaN", "+Inf" or "-Inf", as for a metric, since JSON has
// no such numbers.
type jsonLogprobs []float32

func (l jsonLogprobs) MarshalJSON() ([]byte, error) {
	if !slices.ContainsFunc(l, func(v float32) bool { return isNonFiniteFloat(float64(v)) }) {
		return json.Marshal([]float32(l)) // the common case, as encoding/json writes float32s
	}
	out := make([]any, len(l))
	for i, v := range l {
		if isNonFiniteFloat(float64(v)) {
			out[i] = strconv.FormatFloat(float64(v), 'g', -1, 32)
		} else {
			out[i] = v
		}
	}
	return json.Marshal(out)
}

func (l *jsonLogprobs) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*l = nil
		return nil
	}
	out := make(jsonLogprobs, len(raw))
	for i, v := range raw {
		var f float32
		var s string
		switch {
		case json.Unmarshal(v, &f) == nil && string(v) != "null":
			out[i] = f
		case json.Unmarshal(v, &s) == nil && isNonFinite(s):
			x, _ := strconv.ParseFloat(s, 64)
			out[i] = float32(x)
		default:
			return fmt.Errorf("logprobs[%d] is %s: want a number (a float32), or \"NaN\", \"+Inf\" or \"-Inf\"", i, v)
		}
	}
	*l = out
	return nil
}

// isNonFiniteFloat reports whether v is NaN or infinite.
func isNonFiniteFloat(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// jsonChoice is an OpenAI completion choice, as ART logs keep them in
// "messages_and_choices": the policy's own turn.
type jsonChoice struct {
	FinishReason string          `json:"finish_reason"`
	Message      json.RawMessage `json:"message"`
	Logprobs     *struct {
		Content []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"content"`
	} `json:"logprobs"`
}

// ImportResult counts what ImportJSONL read and what it had to make up.
type ImportResult struct {
	Lines             int // non-blank lines read
	Groups            int
	GeneratedIDs      int // trajectory ids generated for lines without one
	GeneratedGroupIDs int // group ids generated (each such line is a group of one)
	// Origins are where each trajectory returned came from, indexed as the
	// groups and their trajectories are: a stage that warns about a
	// trajectory names its line, since the ids generated for a line
	// without its own appear nowhere in the file.
	Origins [][]SourceLine
	// NullMetrics are the metrics given as null, in file order, which
	// the rows leave out as hone-collect's live routes leave them out
	// (a metric that does not apply); NullMetricsWarning words them.
	NullMetrics []NullMetric
}

// NullMetric is a metric a JSON Lines file gave as null.
type NullMetric struct {
	Line  int // 1-based, as SourceLine.Number
	Name  string
	Group bool // in "group_metrics", not "metrics"
}

func (m NullMetric) String() string {
	if m.Group {
		return fmt.Sprintf("group metric %q", m.Name)
	}
	return fmt.Sprintf("metric %q", m.Name)
}

// NullMetricsWarning is one line saying that source's null metrics were
// left out, naming the first one's line and every name once; "" when
// there were none. One line per file, not per row: a script that writes
// None for a metric that does not apply writes it on many lines.
func (r ImportResult) NullMetricsWarning(source string) string {
	if len(r.NullMetrics) == 0 {
		return ""
	}
	first := r.NullMetrics[0]
	head := fmt.Sprintf("%s:%d: %s is null: left out of the row, as hone-collect leaves out a metric that does not apply", source, first.Line, first)
	if len(r.NullMetrics) == 1 {
		return head
	}
	var names []string
	for _, m := range r.NullMetrics {
		if s := m.String(); !slices.Contains(names, s) {
			names = append(names, s)
		}
	}
	return fmt.Sprintf("%s; %d null metrics in this file, all left out: %s", head, len(r.NullMetrics), strings.Join(names, ", "))
}

// nullMetrics are the keys of a line's "metrics" and "group_metrics"
// whose value is null, each list in key order.
func nullMetrics(raw map[string]json.RawMessage, lineNo int) []NullMetric {
	var out []NullMetric
	for _, field := range []string{"metrics", "group_metrics"} {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw[field], &m) != nil {
			continue // not an object: jsonMetrics refused it
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, isNull, _ := MetricValue(m[k]); isNull {
				out = append(out, NullMetric{Line: lineNo, Name: k, Group: field == "group_metrics"})
			}
		}
	}
	return out
}

// SourceLine is the line of a JSON Lines file a trajectory was read from.
type SourceLine struct {
	Number int // 1-based, blank lines counted, as an editor counts them
	// GeneratedID and GeneratedGroupID say which of the trajectory's ids
	// ImportJSONL made up, the line having none.
	GeneratedID, GeneratedGroupID bool
}

// Name names the trajectory t read from line l of source as a user finds
// it: "SOURCE:LINE", followed by the ids the line gives itself, if any
// ("SOURCE:LINE (group G, trajectory T)"); a made-up id is left out.
func (l SourceLine) Name(source string, t *Trajectory) string {
	var ids []string
	if !l.GeneratedGroupID {
		ids = append(ids, "group "+t.GroupID)
	}
	if !l.GeneratedID {
		ids = append(ids, "trajectory "+t.ID)
	}
	where := fmt.Sprintf("%s:%d", source, l.Number)
	if len(ids) > 0 {
		where += " (" + strings.Join(ids, ", ") + ")"
	}
	return where
}

// ImportJSONL reads JSON Lines, one trajectory per line, in the OpenAI chat
// shape: {"messages": [...], "tools": [...]} plus any of Hone's fields
// (those ExportJSONL writes). Messages and tools are read with
// format/chatmsg, the shape's one codec: content parts are checked as
// chatmsg.ContentText says, and tool-call arguments may be a string or a
// JSON object. ART's "messages_and_choices" is read as "messages", a
// choice ({"message": ..., "finish_reason": ...}) becoming a trainable
// assistant turn. source names the input in errors.
//
// A line without "trajectory_id" gets one derived from its line number and
// content: "t-" and the first 16 hex digits of SHA-256 over the decimal line
// number, a NUL byte and the line, so importing the same file twice gives
// the same ids. A line without "group_id" is a group of one whose id is the
// same digest prefixed "g-". Groups come back in order of first appearance.
// JSON values kept as text (payload, content parts, tool parameters) are
// stored compacted, and timestamps in UTC, so that exporting and importing
// again gives the same trajectories.
// Top-level keys Hone does not know are kept in Metadata as "jsonl.<key>"
// holding the key's raw JSON. As ART allows, a metadata value may be any
// JSON value (one that is not a string is kept as its JSON text) and a
// metric a boolean (read as 1 or 0); a null metric is left out of the row,
// as hone-collect's environments leave it out, and listed in
// ImportResult.NullMetrics; a metric, reward or sampling logprob
// that is not finite is the string "NaN", "+Inf" or "-Inf", as ExportJSONL
// writes it.
//
// "additional_histories" is a list of {"messages", "tools"} objects read
// like the line's own messages and tools ("messages_and_choices" too).
// "group_metadata" and "group_metrics" belong to the line's group: any line
// of the group may give them, and lines that give them must agree.
func ImportJSONL(ctx context.Context, r io.Reader, source string) ([]Group, ImportResult, error) {
	var res ImportResult
	var groups []Group
	index := map[string]int{}
	br := bufio.NewReaderSize(r, 1<<20)
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			return nil, res, err
		}
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, res, fmt.Errorf("trajectory: %s:%d: %w", source, lineNo, err) // reading failed: not the input's fault
		}
		if lineNo == 1 {
			// Windows tools and Excel's "CSV UTF-8" start the file with a
			// UTF-8 byte-order mark, which is no part of the first line.
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			res.Lines++
			t, gl, genID, genGroup, perr := parseLine(validUTF8(trimmed), lineNo)
			if perr != nil {
				return nil, res, badInput(source, int64(lineNo), "", "", fmt.Errorf("trajectory: %s:%d: %w%s", source, lineNo, perr, notLinesHint(trimmed, lineNo)))
			}
			res.NullMetrics = append(res.NullMetrics, gl.nulls...)
			if genID {
				res.GeneratedIDs++
			}
			if genGroup {
				res.GeneratedGroupIDs++
			}
			if verr := t.Validate(); verr != nil {
				return nil, res, badInput(source, int64(lineNo), t.GroupID, firstField(verr), fmt.Errorf("trajectory: %s:%d (group %q, trajectory %q): %w", source, lineNo, t.GroupID, t.ID, verr))
			}
			i, ok := index[t.GroupID]
			if !ok {
				i = len(groups)
				index[t.GroupID] = i
				groups = append(groups, Group{ID: t.GroupID})
				res.Origins = append(res.Origins, nil)
			}
			if field, gerr := mergeGroupFields(&groups[i], &gl); gerr != nil {
				return nil, res, badInput(source, int64(lineNo), t.GroupID, field, fmt.Errorf("trajectory: %s:%d (group %q, trajectory %q): %w", source, lineNo, t.GroupID, t.ID, gerr))
			}
			for _, other := range groups[i].Trajectories {
				if other.ID == t.ID {
					return nil, res, badInput(source, int64(lineNo), t.GroupID, "trajectory_id", fmt.Errorf("trajectory: %s:%d: trajectory_id %q appears twice in group %q", source, lineNo, t.ID, t.GroupID))
				}
			}
			groups[i].Trajectories = append(groups[i].Trajectories, t)
			res.Origins[i] = append(res.Origins[i], SourceLine{Number: lineNo, GeneratedID: genID, GeneratedGroupID: genGroup})
		}
		if err == io.EOF {
			break
		}
	}
	res.Groups = len(groups)
	return groups, res, nil
}

// notLinesHint says, for a first line that cannot be a JSON line, what
// the file holds instead and how to make it JSON Lines: one JSON array,
// or objects pretty-printed over several lines. Both are common shapes of
// a .json chat file (Hugging Face's json loader reads them), and the
// decoder's own words ("cannot unmarshal array", "unexpected end of JSON
// input") say neither. "" for any other line.
func notLinesHint(line []byte, lineNo int) string {
	const how = "; JSON Lines has one JSON object per line"
	if lineNo != 1 {
		return ""
	}
	if line[0] == '[' {
		return fmt.Sprintf(" (the file is a JSON array%s: jq -c '.[]' FILE > FILE.jsonl converts it)", how)
	}
	var v any
	if line[0] == '{' && errors.Is(json.NewDecoder(bytes.NewReader(line)).Decode(&v), io.ErrUnexpectedEOF) {
		return fmt.Sprintf(" (the file holds JSON objects spread over several lines%s: jq -c . FILE > FILE.jsonl converts it)", how)
	}
	return ""
}

// validUTF8 returns line with each byte that is not part of a UTF-8
// character replaced by U+FFFD, as encoding/json replaces it in the
// strings it decodes: the values kept as JSON text (payload, content
// parts, tool parameters, unknown keys) then hold what the strings do, and
// every string a file gets is UTF-8, which Parquet readers such as DuckDB
// require. A line that is UTF-8 already is returned as it is.
func validUTF8(line []byte) []byte {
	if utf8.Valid(line) {
		return line
	}
	out := make([]byte, 0, len(line)+8)
	for len(line) > 0 {
		r, n := utf8.DecodeRune(line)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, line[:n]...)
		}
		line = line[n:]
	}
	return out
}

var knownKeys = map[string]bool{
	"messages": true, "messages_and_choices": true, "tools": true, "run": true, "step": true,
	"model": true, "adapter": true, "scenario_id": true, "split": true, "payload": true,
	"group_id": true, "trajectory_id": true, "env": true, "reward": true,
	"reward_components": true, "metrics": true, "metadata": true, "error": true,
	"created_at": true, "started_at": true, "finished_at": true,
	"additional_histories": true, "logs": true, "group_metadata": true, "group_metrics": true,
}

// mergeGroupFields takes a line's group metadata and metrics into g: the
// first line that gives them sets them, and a later line that gives
// different ones is an error naming the field. Metrics compare bit for
// bit, as the reader compares a group's rows: a NaN matches itself.
func mergeGroupFields(g *Group, line *jsonLine) (string, error) {
	if len(line.GroupMetadata) > 0 {
		if g.Metadata != nil && !maps.Equal(g.Metadata, line.GroupMetadata) {
			return "group_metadata", fmt.Errorf("group_metadata %v differs from %v given by an earlier line of the group", line.GroupMetadata, g.Metadata)
		}
		g.Metadata = line.GroupMetadata
	}
	if len(line.GroupMetrics) > 0 {
		if g.Metrics != nil && !sameMetrics(g.Metrics, line.GroupMetrics) {
			return "group_metrics", fmt.Errorf("group_metrics %v differs from %v given by an earlier line of the group", line.GroupMetrics, g.Metrics)
		}
		g.Metrics = line.GroupMetrics
	}
	return "", nil
}

func parseLine(line []byte, lineNo int) (t Trajectory, jl jsonLine, genID, genGroup bool, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return t, jl, false, false, fmt.Errorf("not a JSON object: %w", err)
	}
	if msgs, ok := raw["messages_and_choices"]; ok {
		if _, both := raw["messages"]; both {
			return t, jl, false, false, errors.New(`both "messages" and "messages_and_choices"`)
		}
		raw["messages"] = msgs
	}
	if err := json.Unmarshal(line, &jl); err != nil {
		return t, jl, false, false, err
	}
	jl.nulls = nullMetrics(raw, lineNo)
	t = Trajectory{
		Run: jl.Run, Step: jl.Step, Model: jl.Model, Adapter: jl.Adapter,
		ScenarioID: jl.ScenarioID, Split: jl.Split, GroupID: jl.GroupID, ID: jl.TrajectoryID,
		Env: jl.Env, Reward: (*float64)(jl.Reward), RewardComponents: importComponents(jl.RewardComponents),
		Metrics: jl.Metrics, Metadata: jl.Metadata, Error: jl.Error,
		CreatedAt: derefTime(jl.CreatedAt), StartedAt: derefTime(jl.StartedAt), FinishedAt: derefTime(jl.FinishedAt),
	}
	if len(jl.Payload) > 0 && string(jl.Payload) != "null" {
		t.Payload = compact(jl.Payload)
	}
	var msgs []json.RawMessage
	if m, ok := raw["messages"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &msgs); err != nil {
			return t, jl, false, false, fmt.Errorf("messages: %w", err)
		}
	}
	var excluded [][]bool // per history, main first: parseHistory's
	var ex []bool
	if t.Messages, t.Tools, ex, err = parseHistory("", msgs, jl.Tools); err != nil {
		return t, jl, false, false, err
	}
	excluded = append(excluded, ex)
	for i, h := range jl.AdditionalHistories {
		prefix := fmt.Sprintf("additional_histories[%d].", i)
		if h.MessagesAndChoices != nil {
			if h.Messages != nil {
				return t, jl, false, false, fmt.Errorf(`%s: both "messages" and "messages_and_choices"`, strings.TrimSuffix(prefix, "."))
			}
			h.Messages = h.MessagesAndChoices
		}
		var hist History
		if hist.Messages, hist.Tools, ex, err = parseHistory(prefix, h.Messages, h.Tools); err != nil {
			return t, jl, false, false, err
		}
		t.AdditionalHistories = append(t.AdditionalHistories, hist)
		excluded = append(excluded, ex)
	}
	markUnexcluded(&t, excluded)
	t.Logs = jl.Logs
	for k, v := range raw {
		if knownKeys[k] {
			continue
		}
		if t.Metadata == nil {
			t.Metadata = map[string]string{}
		}
		t.Metadata["jsonl."+k] = string(v)
	}
	if t.ID == "" || t.GroupID == "" {
		sum := sha256.Sum256(append([]byte(strconv.Itoa(lineNo)+"\x00"), line...))
		digest := hex.EncodeToString(sum[:8])
		if t.ID == "" {
			t.ID, genID = "t-"+digest, true
		}
		if t.GroupID == "" {
			t.GroupID, genGroup = "g-"+digest, true
		}
	}
	return t, jl, genID, genGroup, nil
}

// parseHistory reads one conversation's messages and checks its tools;
// prefix names the history in errors ("" for the main one). excluded
// says, per message, whether it says "trainable": false (markUnexcluded).
func parseHistory(prefix string, raw []json.RawMessage, tools []Tool) (msgs []Message, _ []Tool, excluded []bool, _ error) {
	for i, m := range raw {
		msg, err := parseMessage(m)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%smessages[%d]: %w", prefix, i, err)
		}
		msgs = append(msgs, msg)
		var f struct {
			Message   json.RawMessage `json:"message"` // an ART choice: trainable
			Trainable *bool           `json:"trainable"`
			// OpenAI's fine-tuning files weigh an assistant message 0
			// (not trained) or 1 (trained): read as trainable false or
			// true, which a line must not contradict.
			Weight *float64 `json:"weight"`
		}
		if err := json.Unmarshal(m, &f); err != nil {
			return nil, nil, nil, fmt.Errorf("%smessages[%d]: %w", prefix, i, err)
		}
		if f.Weight != nil && f.Message == nil {
			if *f.Weight != 0 && *f.Weight != 1 {
				return nil, nil, nil, fmt.Errorf("%smessages[%d]: weight %v: want 0 (not trained) or 1 (trained), as in OpenAI's fine-tuning files", prefix, i, *f.Weight)
			}
			w := *f.Weight == 1
			if f.Trainable != nil && *f.Trainable != w {
				return nil, nil, nil, fmt.Errorf("%smessages[%d]: weight %v and trainable %v disagree", prefix, i, *f.Weight, *f.Trainable)
			}
			f.Trainable = &w
			msgs[len(msgs)-1].Trainable = w
		}
		excluded = append(excluded, f.Message == nil && f.Trainable != nil && !*f.Trainable)
	}
	for i, tool := range tools {
		if tool.Name == "" {
			return nil, nil, nil, fmt.Errorf("%stools[%d]: no function name", prefix, i)
		}
	}
	return msgs, tools, excluded, nil
}

// markUnexcluded marks trainable every assistant turn of t (in any
// history, main first, as excluded is ordered) that its line does not
// exclude with "trainable": false, when the line excludes one and marks
// none "trainable": true. A trajectory that marks turns trains those
// alone (hone-train sft, hone-inspect render --train marked); without
// this, a false read as no mark, so a line that only excluded a turn
// marked nothing and every assistant turn trained, the excluded one too.
// A line that marks some turn true already leaves its unmarked turns
// untrained, and Hone's own export writes no false (omitempty).
func markUnexcluded(t *Trajectory, excluded [][]bool) {
	hists := [][]Message{t.Messages}
	for _, h := range t.AdditionalHistories {
		hists = append(hists, h.Messages)
	}
	excludes := false
	for k, ms := range hists {
		for i, m := range ms {
			if m.Trainable {
				return
			}
			excludes = excludes || (m.Role == "assistant" && excluded[k][i])
		}
	}
	if !excludes {
		return
	}
	for k, ms := range hists {
		for i := range ms {
			ms[i].Trainable = ms[i].Role == "assistant" && !excluded[k][i]
		}
	}
}

func parseMessage(raw json.RawMessage) (Message, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Message{}, err
	}
	if _, isChoice := probe["message"]; isChoice {
		return parseChoice(raw)
	}
	return parseTurn(raw)
}

// parseTurn reads one message: the chat message and Hone's fields.
func parseTurn(raw json.RawMessage) (Message, error) {
	var c chatmsg.Message
	if err := json.Unmarshal(raw, &c); err != nil {
		return Message{}, err
	}
	var f turnFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return Message{}, err
	}
	// A Duration holds about 292 years; refuse what it cannot.
	if !(f.LatencyMS >= 0 && f.LatencyMS < 1e12) {
		return Message{}, fmt.Errorf("latency_ms %v: want 0 <= latency_ms < 1e12", f.LatencyMS)
	}
	m, err := FromChat(c)
	if err != nil {
		return m, err
	}
	if known, ok := misspeltRole(m.Role); ok {
		return m, fmt.Errorf("role %q looks like a misspelt %q: roles are matched exactly, lower case (system, developer, user, assistant, tool, function, ipython)", m.Role, known)
	}
	m.Trainable, m.TokenIDs, m.Logprobs, m.FinishReason, m.AnswerModel = f.Trainable, f.TokenIDs, f.Logprobs, f.FinishReason, f.AnswerModel
	m.Latency = time.Duration(math.Round(f.LatencyMS * 1e6))
	return m, nil
}

// chatRoles are OpenAI's chat roles (chatmsg.Roles) and Llama 3's
// ipython (its tool results): the roles chat templates are written for.
func chatRoles() []string {
	return append(chatmsg.Roles(), "ipython")
}

// misspeltRole reports the chat role an imported message's role looks
// like a misspelling of ("assitant", "usr", "Assistant"), and whether it
// does. A misspelt role was imported as it was, then silently not trained
// (hone-train trains assistant turns) or rendered as a role the model
// never saw. A role far from every chat role is an environment's own
// ("observation"), which a template may know, and is kept: trajectories
// a collect run wrote go back in through from-jsonl.
func misspeltRole(role string) (string, bool) {
	for _, known := range chatRoles() {
		if role == known {
			return "", false
		}
	}
	lower := strings.ToLower(role)
	for _, known := range chatRoles() {
		// One edit for the short roles ("usr"), two for the long ones
		// ("asistant", "sytem"): a short custom role ("bot") is not
		// taken for "tool".
		limit := 1
		if len(known) > 4 {
			limit = 2
		}
		if lower == known || levenshtein.ComputeDistance(lower, known) <= limit {
			return known, true
		}
	}
	return "", false
}

// parseChoice reads an ART choice: a trainable assistant turn, with the
// logprobs (and vLLM's "token_id:N" tokens) of the choice.
func parseChoice(raw json.RawMessage) (Message, error) {
	var c jsonChoice
	if err := json.Unmarshal(raw, &c); err != nil {
		return Message{}, fmt.Errorf("choice: %w", err)
	}
	m, err := parseTurn(c.Message)
	if err != nil {
		return Message{}, err
	}
	m.Trainable = true
	if m.FinishReason == "" {
		m.FinishReason = c.FinishReason
	}
	if c.Logprobs != nil && len(m.Logprobs) == 0 {
		tokens := make([]string, 0, len(c.Logprobs.Content))
		for _, tok := range c.Logprobs.Content {
			m.Logprobs = append(m.Logprobs, float32(tok.Logprob))
			tokens = append(tokens, tok.Token)
		}
		// vLLM with return_tokens_as_token_ids reports "token_id:123".
		if len(m.TokenIDs) == 0 {
			m.TokenIDs = LogprobTokenIDs(tokens)
		}
	}
	return m, nil
}

// derefTime returns t in UTC, as the Parquet reader does.
func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// compact removes insignificant whitespace from valid JSON, so that what
// ImportJSONL stores is what ExportJSONL writes (encoding/json compacts raw
// values on output).
func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw) // json.Unmarshal already accepted it; keep it as is
	}
	return b.String()
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ExportJSONL writes one JSON line per trajectory in the shape ImportJSONL
// reads. Content that was a list of parts or null is written back exactly.
func ExportJSONL(w io.Writer, groups ...Group) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, g := range groups {
		for i := range g.Trajectories {
			t := &g.Trajectories[i]
			jl := jsonLine{
				Tools: t.Tools, Logs: t.Logs, GroupMetadata: g.Metadata, GroupMetrics: g.Metrics,
				Run: t.Run, Step: t.Step, Model: t.Model, Adapter: t.Adapter,
				ScenarioID: t.ScenarioID, Split: t.Split, GroupID: t.GroupID, TrajectoryID: t.ID,
				Env: t.Env, Reward: (*jsonFloat)(t.Reward), RewardComponents: exportComponents(t.RewardComponents),
				Metrics: t.Metrics, Metadata: t.Metadata, Error: t.Error,
				CreatedAt: timePtr(t.CreatedAt), StartedAt: timePtr(t.StartedAt), FinishedAt: timePtr(t.FinishedAt),
			}
			if jl.GroupID == "" {
				jl.GroupID = g.ID
			}
			if t.Payload != "" {
				jl.Payload = json.RawMessage(t.Payload)
			}
			var err error
			if jl.Messages, err = exportMessages(t.Messages); err != nil {
				return fmt.Errorf("trajectory: export %q messages%w", t.ID, err)
			}
			for k := range t.AdditionalHistories {
				h := &t.AdditionalHistories[k]
				msgs, err := exportMessages(h.Messages)
				if err != nil {
					return fmt.Errorf("trajectory: export %q additional_histories[%d].messages%w", t.ID, k, err)
				}
				jl.AdditionalHistories = append(jl.AdditionalHistories, jsonHistory{Messages: msgs, Tools: h.Tools})
			}
			if err := enc.Encode(&jl); err != nil {
				return fmt.Errorf("trajectory: export group %q, trajectory %q: %w", g.ID, t.ID, err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("trajectory: export: %w", err)
	}
	return nil
}

// exportMessages encodes messages as ExportJSONL writes them; an error
// starts with the failing index ("[3]: ...").
func exportMessages(msgs []Message) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(msgs))
	for j := range msgs {
		m := &msgs[j]
		b, err := chatmsg.MarshalWith(m.Chat(), turnFields{
			Trainable: m.Trainable, TokenIDs: m.TokenIDs, Logprobs: m.Logprobs, FinishReason: m.FinishReason,
			AnswerModel: m.AnswerModel, LatencyMS: float64(m.Latency) / 1e6,
		})
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", j, err)
		}
		out[j] = b
	}
	return out, nil
}
