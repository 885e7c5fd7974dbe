package trajectory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestJSONLRoundTrip(t *testing.T) {
	groups := sampleGroups(8, 5, 4)
	groups[2].Trajectories[1].Messages[0].Content = strings.Repeat("naïve 😀 ", (1<<20)/12)
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, groups...); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 20 {
		t.Fatalf("%d lines, want 20", n)
	}
	got, res, err := ImportJSONL(context.Background(), &buf, "export.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if res.GeneratedIDs != 0 || res.GeneratedGroupIDs != 0 || res.Lines != 20 || res.Groups != 5 {
		t.Errorf("import result %+v", res)
	}
	diffGroups(t, groups, got)
}

// An OpenAI-style log from another tool: no ids, content parts, null
// content, tool calls, an ART choice with logprobs, an unknown key.
const foreignLog = `{"messages":[{"role":"user","content":[{"type":"text","text":"look at "},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}},{"type":"text","text":"this"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"zoom","arguments":"{\"level\": {\"x\": [1, 2.5]}}"}}]},{"role":"tool","tool_call_id":"c1","content":"zoomed"}],"tools":[{"type":"function","function":{"name":"zoom","description":"Zoom in","parameters":{"type":"object","properties":{"level":{"type":"object"}}}}}],"reward":0.5,"logs":["a","b"]}

{"messages_and_choices":[{"role":"user","content":"2+2?"},{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"4"},"logprobs":{"content":[{"token":"token_id:19","logprob":-0.25}]}}],"group_id":"G"}
{"messages":[{"role":"user","content":"again"}],"group_id":"G","trajectory_id":"mine","metrics":{"turns":1}}
`

func TestImportForeignLog(t *testing.T) {
	ctx := context.Background()
	groups, res, err := ImportJSONL(ctx, strings.NewReader(foreignLog), "foreign.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Origins give each trajectory's line, the blank line 2 counted.
	want := ImportResult{Lines: 3, Groups: 2, GeneratedIDs: 2, GeneratedGroupIDs: 1, Origins: [][]SourceLine{
		{{Number: 1, GeneratedID: true, GeneratedGroupID: true}},
		{{Number: 3, GeneratedID: true}, {Number: 4}},
	}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if len(groups) != 2 || len(groups[0].Trajectories) != 1 || groups[1].ID != "G" || len(groups[1].Trajectories) != 2 {
		t.Fatalf("groups %+v", groups)
	}
	a := groups[0].Trajectories[0]
	if !strings.HasPrefix(a.ID, "t-") || a.GroupID != "g-"+a.ID[2:] || a.Reward == nil || *a.Reward != 0.5 {
		t.Errorf("first line: id %q group %q reward %v", a.ID, a.GroupID, a.Reward)
	}
	if a.Messages[0].Content != "look at this" || !strings.Contains(a.Messages[0].ContentParts, `"detail":"low"`) {
		t.Errorf("content parts: %q / %q", a.Messages[0].Content, a.Messages[0].ContentParts)
	}
	if m := a.Messages[1]; m.ContentParts != "null" || m.ToolCalls[0].Arguments != `{"level": {"x": [1, 2.5]}}` {
		t.Errorf("tool call turn %+v", m)
	}
	if a.Tools[0].Parameters != `{"type":"object","properties":{"level":{"type":"object"}}}` || !slices.Equal(a.Logs, []string{"a", "b"}) || a.Metadata != nil {
		t.Errorf("tools %+v logs %q metadata %v", a.Tools, a.Logs, a.Metadata)
	}
	c := groups[1].Trajectories[0].Messages[1]
	if !c.Trainable || c.Content != "4" || c.FinishReason != "stop" || len(c.TokenIDs) != 1 || c.TokenIDs[0] != 19 || c.Logprobs[0] != -0.25 {
		t.Errorf("choice turn %+v", c)
	}
	if groups[1].Trajectories[1].ID != "mine" {
		t.Errorf("given id replaced: %q", groups[1].Trajectories[1].ID)
	}

	// Ids are deterministic.
	again, _, err := ImportJSONL(ctx, strings.NewReader(foreignLog), "other-name.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Trajectories[0].ID != a.ID || again[1].Trajectories[0].ID != groups[1].Trajectories[0].ID {
		t.Error("importing the same log twice gave different ids")
	}

	// Export restores content exactly: the parts list and the null.
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, groups[0]); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	var orig struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal([]byte(strings.SplitN(foreignLog, "\n", 2)[0]), &orig)
	for i := range orig.Messages {
		if string(line.Messages[i].Content) != string(orig.Messages[i].Content) {
			t.Errorf("message %d content %s, want %s", i, line.Messages[i].Content, orig.Messages[i].Content)
		}
	}
}

func TestImportErrorsNameTheLine(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"not json":        {`{"messages": [}`, "in.jsonl:1"},
		"no role":         {"{\"messages\":[]}\n{\"messages\":[{\"content\":\"x\"}]}", "in.jsonl:2: messages[0]: no role"},
		"misspelt role":   {`{"messages":[{"role":"user","content":"q"},{"role":"assitant","content":"x"}]}`, `in.jsonl:1: messages[1]: role "assitant" looks like a misspelt "assistant"`},
		"short misspelt":  {`{"messages":[{"role":"usr","content":"q"}]}`, `role "usr" looks like a misspelt "user"`},
		"upper case role": {`{"messages":[{"role":"user","content":"q"},{"role":"Assistant","content":"x"}]}`, `role "Assistant" looks like a misspelt "assistant"`},
		"swapped letters": {`{"messages":[{"role":"sytsem","content":"q"}]}`, `role "sytsem" looks like a misspelt "system"`},
		"bad content":     {`{"messages":[{"role":"user","content":7}]}`, "content"},
		"duplicate ids":   {"{\"messages\":[],\"trajectory_id\":\"a\",\"group_id\":\"g\"}\n{\"messages\":[],\"trajectory_id\":\"a\",\"group_id\":\"g\"}", "in.jsonl:2: trajectory_id \"a\" appears twice"},
		"bad split":       {`{"messages":[],"split":"dev"}`, "in.jsonl:1 (group"},
		"tool no name":    {`{"messages":[],"tools":[{"type":"function","function":{}}]}`, "tools[0]"},
		"both msg fields": {`{"messages":[],"messages_and_choices":[]}`, "both"},
		// encoding/json took each of these as a component worth 0.
		"null component":     {`{"messages":[],"reward_components":[{"name":"a","value":1},null]}`, "in.jsonl:1: reward_components[1] is null"},
		"null component val": {`{"messages":[],"reward_components":[{"name":"len","value":null}]}`, `reward_components[0] ("len"): value is missing or null`},
		"no component val":   {`{"messages":[],"reward_components":[{"name":"len"}]}`, `reward_components[0] ("len"): value is missing or null`},
		"bad component val":  {`{"messages":[],"reward_components":[{"name":"len","value":"x"}]}`, `reward_components[0] ("len"): value "x": want a number`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := ImportJSONL(context.Background(), strings.NewReader(c.in), "in.jsonl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
}

// TestImportOpenAIWeights: an OpenAI fine-tuning file's per-message
// weight (0: not trained, 1: trained) marks the assistant turns as
// "trainable" does. It was ignored, so a weight-0 turn was trained.
func TestImportOpenAIWeights(t *testing.T) {
	in := `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"bad","weight":0},{"role":"user","content":"q2"},{"role":"assistant","content":"good","weight":1}]}
{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"bad","weight":0},{"role":"user","content":"q2"},{"role":"assistant","content":"good"}]}
`
	groups, _, err := ImportJSONL(context.Background(), strings.NewReader(in), "ft.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		ms := g.Trajectories[0].Messages
		if ms[1].Trainable || !ms[3].Trainable {
			t.Errorf("line %d: trainable %v and %v, want the weight-0 turn untrained and the other trained", i+1, ms[1].Trainable, ms[3].Trainable)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","weight":0.5}]}`, "ft.jsonl:1: messages[1]: weight 0.5: want 0 (not trained) or 1 (trained)"},
		{`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","weight":1,"trainable":false}]}`, "messages[1]: weight 1 and trainable false disagree"},
	} {
		if _, _, err := ImportJSONL(context.Background(), strings.NewReader(c.in), "ft.jsonl"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

// TestImportKeepsEnvironmentRoles: a role far from every chat role is an
// environment's own, which its template may know, and a collect run may
// have written it: it is imported as it is, as are the chat roles.
func TestImportKeepsEnvironmentRoles(t *testing.T) {
	roles := []string{"observation", "environment", "bot", "model", "ipython", "developer", "function", "tool"}
	var b strings.Builder
	for _, r := range roles {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"q"},{"role":%q,"content":"x"}]}`+"\n", r)
	}
	groups, _, err := ImportJSONL(context.Background(), strings.NewReader(b.String()), "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != len(roles) {
		t.Fatalf("%d groups, want %d", len(groups), len(roles))
	}
	for i, g := range groups {
		if got := g.Trajectories[0].Messages[1].Role; got != roles[i] {
			t.Errorf("line %d: role %q, want %q", i+1, got, roles[i])
		}
	}
}

// Reward components export with snake_case keys like the rest of a row,
// and the import reads them back.
func TestJSONLRewardComponentKeys(t *testing.T) {
	g := Group{ID: "g", Trajectories: []Trajectory{{ID: "t", GroupID: "g", Reward: Float64(0.5),
		Messages:         []Message{{Role: "user", Content: "hi"}},
		RewardComponents: []RewardComponent{{Name: "env", Value: 1}, {Name: "ruler", Value: 0.25, Explanation: "ok"}}}}}
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, g); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Components []map[string]any `json:"reward_components"`
	}
	if err := json.Unmarshal(buf.Bytes(), &row); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"name": "env", "value": 1.0}, {"name": "ruler", "value": 0.25, "explanation": "ok"}}
	if len(row.Components) != 2 || fmt.Sprint(row.Components) != fmt.Sprint(want) {
		t.Fatalf("reward_components %v, want %v (line %s)", row.Components, want, buf.String())
	}
	got, _, err := ImportJSONL(context.Background(), &buf, "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if c := got[0].Trajectories[0].RewardComponents; len(c) != 2 || c[1] != g.Trajectories[0].RewardComponents[1] {
		t.Fatalf("imported components %+v", c)
	}
}

// TestJSONLNonFiniteMetrics: metrics that are NaN or infinite (a Parquet
// file written outside Hone) export as strings and import back, where the
// export failed with "json: unsupported value: NaN", so head and to-jsonl
// could not show the file.
func TestJSONLNonFiniteMetrics(t *testing.T) {
	g := Group{ID: "g", Metrics: map[string]float64{"spread": math.Inf(-1)}, Trajectories: []Trajectory{{ID: "t", GroupID: "g",
		Messages: []Message{{Role: "user", Content: "hi"}},
		Metrics:  map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "one": 1}}}}
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"metrics":{"inf":"+Inf","nan":"NaN","one":1}`) {
		t.Errorf("export %s", buf.String())
	}
	got, _, err := ImportJSONL(context.Background(), &buf, "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	m := got[0].Trajectories[0].Metrics
	if !math.IsNaN(m["nan"]) || !math.IsInf(m["inf"], 1) || m["one"] != 1 || !math.IsInf(got[0].Metrics["spread"], -1) {
		t.Errorf("imported metrics %v, group metrics %v", m, got[0].Metrics)
	}
}

// TestJSONLNonFiniteReward: a reward or reward component that is not
// finite (a NaN reward is how a file says a row is unscored) exports as
// the strings metrics use and imports back; `hone-inspect head` and
// `to-jsonl` failed on such a file with "json: unsupported value: NaN".
func TestJSONLNonFiniteReward(t *testing.T) {
	g := Group{ID: "g", Trajectories: []Trajectory{
		{ID: "a", GroupID: "g", Messages: []Message{{Role: "user", Content: "hi"}}, Reward: Float64(math.NaN()),
			RewardComponents: []RewardComponent{{Name: "env", Value: math.Inf(1)}, {Name: "len", Value: 0.5, Explanation: "short"}}},
		{ID: "b", GroupID: "g", Messages: []Message{{Role: "user", Content: "hi"}}, Reward: Float64(math.Inf(-1))},
		{ID: "c", GroupID: "g", Messages: []Message{{Role: "user", Content: "hi"}}},
	}}
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"reward":"NaN","reward_components":[{"name":"env","value":"+Inf"},{"name":"len","value":0.5,"explanation":"short"}]`) ||
		!strings.Contains(buf.String(), `"reward":"-Inf"`) {
		t.Errorf("export %s", buf.String())
	}
	got, _, err := ImportJSONL(context.Background(), &buf, "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ts := got[0].Trajectories
	if ts[0].Reward == nil || !math.IsNaN(*ts[0].Reward) || !math.IsInf(ts[0].RewardComponents[0].Value, 1) ||
		ts[0].RewardComponents[1] != (RewardComponent{Name: "len", Value: 0.5, Explanation: "short"}) ||
		ts[1].Reward == nil || !math.IsInf(*ts[1].Reward, -1) || ts[2].Reward != nil {
		t.Errorf("imported %+v", ts)
	}
	_, _, err = ImportJSONL(context.Background(), strings.NewReader(`{"messages":[],"reward":"high"}`), "bad.jsonl")
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Errorf("a reward that is a word: %v", err)
	}
}

// TestImportARTValueTypes: ART's metadata values may be numbers, booleans
// or null and its metrics booleans; the import took none of them ("cannot
// unmarshal number into Go struct field jsonLine.metadata of type string").
func TestImportARTValueTypes(t *testing.T) {
	line := `{"messages_and_choices":[{"role":"user","content":"q"},{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"a"},"logprobs":null}],` +
		`"reward":1,"metrics":{"correct":true,"wrong":false,"turns":2},"metadata":{"difficulty":"hard","level":3,"ok":true,"none":null,"tags":["a", "b"]},` +
		`"group_metadata":{"scenario":7}}`
	got, _, err := ImportJSONL(context.Background(), strings.NewReader(line), "art.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr := got[0].Trajectories[0]
	wantMeta := map[string]string{"difficulty": "hard", "level": "3", "ok": "true", "none": "null", "tags": `["a","b"]`}
	if fmt.Sprint(tr.Metadata) != fmt.Sprint(wantMeta) || fmt.Sprint(tr.Metrics) != fmt.Sprint(map[string]float64{"correct": 1, "wrong": 0, "turns": 2}) ||
		got[0].Metadata["scenario"] != "7" {
		t.Errorf("metadata %v, metrics %v, group metadata %v", tr.Metadata, tr.Metrics, got[0].Metadata)
	}
	_, _, err = ImportJSONL(context.Background(), strings.NewReader(`{"messages":[],"metrics":{"x":"high"}}`), "bad.jsonl")
	if err == nil || !strings.Contains(err.Error(), `bad.jsonl:1: metric "x" is "high"`) {
		t.Errorf("a metric that is a word: %v", err)
	}
}

// TestJSONLNaNGroupMetricRoundTrip: a group metric that is NaN is written
// on every line of the group, and the lines agree; the import compared
// them with ==, by which NaN differs from itself, and refused the second
// line ("group_metrics map[x:NaN] differs from map[x:NaN]"), so
// to-jsonl's output of a valid file did not import.
func TestJSONLNaNGroupMetricRoundTrip(t *testing.T) {
	g := Group{ID: "g", Metrics: map[string]float64{"spread": math.NaN(), "n": 2}, Trajectories: []Trajectory{
		{ID: "a", GroupID: "g", Messages: []Message{{Role: "user", Content: "hi"}}},
		{ID: "b", GroupID: "g", Messages: []Message{{Role: "user", Content: "ho"}}},
	}}
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, g); err != nil {
		t.Fatal(err)
	}
	got, _, err := ImportJSONL(context.Background(), &buf, "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Trajectories) != 2 || !math.IsNaN(got[0].Metrics["spread"]) || got[0].Metrics["n"] != 2 {
		t.Errorf("imported %+v", got)
	}
	// Lines that do disagree are still refused.
	lines := `{"messages":[],"group_id":"g","group_metrics":{"x":"NaN"}}` + "\n" + `{"messages":[],"group_id":"g","group_metrics":{"x":1}}` + "\n"
	_, _, err = ImportJSONL(context.Background(), strings.NewReader(lines), "d.jsonl")
	var ie *InputError
	if !errors.As(err, &ie) || ie.Row != 2 || ie.Field != "group_metrics" {
		t.Errorf("disagreeing lines: %v", err)
	}
}

// TestJSONLNonFiniteLogprobs: a sampling logprob that is not finite (NaN
// is how a file says a token's logprob is unknown, which hone-train takes
// as such) exports as the strings metrics use and imports back, in the
// main history and an additional one. The export failed with "json:
// unsupported value: NaN", so head and to-jsonl could not show the file.
func TestJSONLNonFiniteLogprobs(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	turn := func(lps ...float32) Message {
		return Message{Role: "assistant", Content: "x", Trainable: true, TokenIDs: make([]int32, len(lps)), Logprobs: lps}
	}
	g := Group{ID: "g", Trajectories: []Trajectory{{ID: "a", GroupID: "g",
		Messages:            []Message{{Role: "user", Content: "hi"}, turn(-0.5, nan, inf, float32(math.Inf(1)))},
		AdditionalHistories: []History{{Messages: []Message{turn(nan)}}},
	}, {ID: "b", GroupID: "g", Messages: []Message{turn(-1.25, -3e-7)}}}}
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, g); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, `"logprobs":[-0.5,"NaN","-Inf","+Inf"]`) || !strings.Contains(out, `"logprobs":[-1.25,-3e-7]`) {
		t.Errorf("export %s", out)
	}
	got, _, err := ImportJSONL(context.Background(), &buf, "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lps := got[0].Trajectories[0].Messages[1].Logprobs
	if len(lps) != 4 || lps[0] != -0.5 || !math.IsNaN(float64(lps[1])) || !math.IsInf(float64(lps[2]), -1) || !math.IsInf(float64(lps[3]), 1) ||
		!math.IsNaN(float64(got[0].Trajectories[0].AdditionalHistories[0].Messages[0].Logprobs[0])) ||
		!slices.Equal(got[0].Trajectories[1].Messages[0].Logprobs, []float32{-1.25, -3e-7}) {
		t.Errorf("imported %+v", got)
	}
	_, _, err = ImportJSONL(context.Background(), strings.NewReader(`{"messages":[{"role":"assistant","token_ids":[1],"logprobs":["low"]}]}`), "bad.jsonl")
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") || !strings.Contains(err.Error(), "logprobs") {
		t.Errorf("a logprob that is a word: %v", err)
	}
}
