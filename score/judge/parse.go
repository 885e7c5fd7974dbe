package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// answer is the JSON object a judge must reply with.
type answer struct {
	Scores []Score `json:"scores"`
}

// Schema returns the JSON schema of the answer for n trajectories, as sent
// in the json_schema response format. Servers that enforce it (vLLM's
// guided decoding, hosted structured outputs) then cannot produce a wrong
// count or an out-of-range score; Parse checks anyway, since not all do.
func Schema(n int) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"scores": map[string]any{
				"type":     "array",
				"minItems": n,
				"maxItems": n,
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"trajectory_id": map[string]any{"type": "string"},
						"explanation":   map[string]any{"type": "string", "description": "one or two sentences on how this trajectory did"},
						"score":         map[string]any{"type": "number", "minimum": 0, "maximum": 1},
					},
					"required":             []string{"trajectory_id", "explanation", "score"},
					"additionalProperties": false,
				},
			},
		},
		"required":             []string{"scores"},
		"additionalProperties": false,
	}
}

// Parse decodes and checks a judge's answer against the request: a JSON
// object {"scores": [...]} with exactly one entry per requested id, each
// score a finite number in [0,1]. The scores come back in the order of
// req.IDs, matched by id, not by position. A Markdown code fence around
// the JSON is tolerated. Errors are *Error of kind "malformed" (retryable).
func Parse(req Request, content string) ([]Score, error) {
	bad := func(format string, args ...any) error {
		return &Error{Kind: "malformed", Retryable: true, Err: fmt.Errorf(format, args...)}
	}
	text := stripFence(strings.TrimSpace(content))
	if text == "" {
		return nil, bad("empty answer")
	}
	var a answer
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&a); err != nil {
		return nil, bad("answer is not the expected JSON object: %v (answer starts %q)", err, prefix(text, 80))
	}
	if dec.More() {
		return nil, bad("trailing text after the JSON answer")
	}
	if len(a.Scores) != len(req.IDs) {
		return nil, bad("answer has %d scores for %d trajectories", len(a.Scores), len(req.IDs))
	}
	want := make(map[string]int, len(req.IDs))
	for i, id := range req.IDs {
		want[id] = i
	}
	out := make([]Score, len(req.IDs))
	seen := make([]bool, len(req.IDs))
	var errs []error
	for _, s := range a.Scores {
		i, ok := want[s.ID]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("unknown trajectory_id %q", s.ID))
			continue
		case seen[i]:
			errs = append(errs, fmt.Errorf("trajectory_id %q scored twice", s.ID))
			continue
		case math.IsNaN(s.Score) || s.Score < 0 || s.Score > 1:
			errs = append(errs, fmt.Errorf("trajectory_id %q: score %v is outside [0,1]", s.ID, s.Score))
		}
		seen[i] = true
		out[i] = s
	}
	if len(errs) > 0 {
		return nil, bad("%w", errors.Join(errs...))
	}
	return out, nil
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

func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
