package stdio_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env/stdio"
)

// valuesEnv is a Python program that answers hello, then reset with an
// opening message, then step with the response Python's json.dumps makes
// of the expression stepExpr (json and math imported), after printing
// preReset to stdout before reset's answer when it is not empty.
func valuesEnv(t *testing.T, preReset, stepExpr string) *stdio.Env {
	t.Helper()
	body := `import json, math, sys
for line in sys.stdin:
    op = json.loads(line)["op"]
    if op == "hello":
        out = {"name": "values"}
    elif op == "reset":
        if ` + "'''" + preReset + "'''" + `:
            print(` + "'''" + preReset + "'''" + `, flush=True)
        out = {"messages": [{"role": "user", "content": "go"}]}
    else:
        out = ` + stepExpr + `
    print(json.dumps(out), flush=True)
`
	script := filepath.Join(t.TempDir(), "env.py")
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := stdio.New(context.Background(), []string{python(t), "-S", script}, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A response that is not JSON is quoted where its parsing failed, not
// only from its start: Python's json.dumps writes NaN and Infinity for a
// reward or metric computed as such, which JSON has not, and the quote of
// the line's first 200 bytes (a long tool result) never showed them. A
// line that is no JSON from its first byte (a debug print before the
// response) says where logs go.
func TestNotJSONQuotedWhereItFails(t *testing.T) {
	long := `{"messages": [{"role": "user", "content": "z" * 500}], "done": True, `
	for _, tc := range []struct {
		name, pre, step string
		want            []string
	}{
		{"nan-metric", "", long + `"reward": 1.0, "metrics": {"loss": float("nan")}}`, []string{`\"loss\": NaN`, "NaN and Infinity are not JSON"}},
		{"inf-reward", "", long + `"reward": -math.inf}`, []string{`\"reward\": -Infinity`, "NaN and Infinity are not JSON"}},
		{"debug-print", "DEBUG: got reset", `{}`, []string{`"DEBUG: got reset"`, "stdout carries responses only", "stderr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := playSayingHi(t, valuesEnv(t, tc.pre, tc.step), "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
		})
	}
}

// A print before the response that starts as JSON can ([DEBUG] …, a
// count, a Python dict printed with print(d)) fails on a later byte than
// its first, and got no hint: a response is a JSON object, so a line
// starting otherwise is a print, and {' is Python's repr of a dict, not
// json.dumps. A response that is a broken JSON object is not called a
// print.
func TestNotJSONPrintHints(t *testing.T) {
	const printHint = "stdout carries responses only"
	for _, tc := range []struct {
		name, pre string
		want, not []string
	}{
		{"bracket", "[DEBUG] got reset", []string{`"[DEBUG] got reset"`, printHint}, nil},
		{"number", "1 episode started", []string{`"1 episode started"`, printHint}, nil},
		{"list", "[1, 2] scores", []string{printHint}, nil},
		{"dict-repr", "{'op': 'reset', 'id': 2}", []string{"json.dumps", printHint}, nil},
		{"extra-brace", `{"messages": [{"role": "user", "content": "go"}]}}`, nil, []string{printHint, "json.dumps"}},
		{"trailing-comma", `{"messages": [], "done": false,}`, nil, []string{printHint, "json.dumps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := playSayingHi(t, valuesEnv(t, tc.pre, `{}`), "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			for _, w := range append(tc.want, "not JSON") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nhas %q, a hint for a print, on a broken response", err, w)
				}
			}
		})
	}
}

// A step's reward and metrics are numbers: a metric given otherwise (a
// string) fails the episode with an error naming it and what it was,
// where encoding/json's "Go struct field wireObs.metrics" named no
// metric.
func TestStepValuesNamed(t *testing.T) {
	for _, tc := range []struct {
		name, step string
		want       []string
	}{
		{"string-metric", `{"done": True, "reward": 1, "metrics": {"correct": "yes"}}`, []string{`metrics "correct"`, `"yes"`}},
		{"string-reward", `{"done": True, "reward": "0.5"}`, []string{`reward`, `"0.5"`, "a number"}},
		{"metrics-list", `{"done": True, "reward": 1, "metrics": [1, 2]}`, []string{`metrics`, "an object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := playSayingHi(t, valuesEnv(t, "", tc.step), "s1")
			if err == nil {
				t.Fatalf("the episode succeeded with outcome %+v", res.Outcome)
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
		})
	}
	// Numbers, and a reward left out or null, are as before.
	res, err := playSayingHi(t, valuesEnv(t, "", `{"done": True, "reward": None, "metrics": {"correct": 1, "steps": 3.5}}`), "s1")
	if err != nil || res.Outcome.Reward != 0 || res.Outcome.Metrics["correct"] != 1 || res.Outcome.Metrics["steps"] != 3.5 {
		t.Errorf("outcome %+v, error %v; want reward 0, correct 1, steps 3.5", res.Outcome, err)
	}
}

// A step that runs past its deadline fails quoting what the program last
// wrote on stderr, as a program that exits does: "context deadline
// exceeded" alone did not say what it was busy with (here waiting for a
// grader that does not answer), which it had logged.
func TestTimeoutQuotesStderr(t *testing.T) {
	e := scriptEnv(t, python(t), `import sys, json, time
for line in sys.stdin:
    req = json.loads(line)
    if req['op'] == 'hello':
        print(json.dumps({'name': 'slow'}), flush=True)
    elif req['op'] == 'reset':
        print(json.dumps({'messages': [{'role': 'user', 'content': 'go'}]}), flush=True)
    else:
        sys.stderr.write('connecting to the grader at localhost:9999\n')
        sys.stderr.flush()
        time.sleep(60)
`)
	err := stepPastDeadline(t, e, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") || !strings.Contains(err.Error(), "stderr: connecting to the grader at localhost:9999") {
		t.Fatalf("step past its deadline: %v; want the deadline and the program's stderr", err)
	}
}

// A response field of the wrong type fails naming the field and what it
// should be: encoding/json's "Go struct field wireObs.done of type bool"
// named a type of hone-collect's, not the protocol's words.
func TestResponseFieldTypeNamed(t *testing.T) {
	for _, tc := range []struct {
		name, step string
		want       []string
	}{
		{"done-string", `{"done": "true", "reward": 1}`, []string{`"done" is a string`, "want true or false"}},
		{"messages-object", `{"done": True, "messages": {"role": "user", "content": "x"}}`, []string{`"messages" is an object`, "want a list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := playSayingHi(t, valuesEnv(t, "", tc.step), "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "wireObs") {
					t.Errorf("error %q\nwants %q, and no Go type", err, w)
				}
			}
		})
	}
}

// A metric that is true or false (Python's answer == expected) is 1 or 0,
// as OpenPipe ART's Trajectory.metrics (float | int | bool) averages it;
// it failed the episode, "a metric is a number (send 1 or 0)".
func TestBoolMetricsAreOneOrZero(t *testing.T) {
	res, err := playSayingHi(t, valuesEnv(t, "", `{"done": True, "reward": 1, "metrics": {"correct": 2 + 2 == 4, "timed_out": False, "steps": 3}}`), "s1")
	if err != nil {
		t.Fatal(err)
	}
	m := res.Outcome.Metrics
	if _, ok := m["timed_out"]; !ok || m["correct"] != 1 || m["timed_out"] != 0 || m["steps"] != 3 {
		t.Errorf("metrics %v; want correct 1, timed_out 0, steps 3", m)
	}
}

// A null metric (Python's None, for "does not apply here") is left out of
// that episode's metrics, which every mean over a run's episodes
// (hone-inspect report, log-eval) reads as not reported, and the run's
// log says so once per metric name. It failed the episode, losing the
// reward the program gave; before that it was recorded as 0 unseen,
// pulling the metric's mean down.
func TestNullMetricLeftOut(t *testing.T) {
	var logs bytes.Buffer
	e := valuesEnv(t, "", `{"done": True, "reward": 1, "metrics": {"correct": 1, "overlap": None}}`)
	e.SetLog(slog.New(slog.NewTextHandler(&logs, nil)))
	for _, id := range []string{"s1", "s2"} {
		res, err := playSayingHi(t, e, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, ok := res.Outcome.Metrics["overlap"]; ok || res.Outcome.Metrics["correct"] != 1 || res.Outcome.Reward != 1 {
			t.Errorf("%s: outcome %+v; want reward 1, correct 1, no overlap", id, res.Outcome)
		}
	}
	t.Log(logs.String())
	if n := strings.Count(logs.String(), "overlap"); n != 1 || !strings.Contains(logs.String(), "null") {
		t.Errorf("log %q names overlap %d times; want one warning saying it was null", logs.String(), n)
	}
}

// A hello whose reward_range is not two numbers, low then high, is
// refused naming the field: [1] or [0, 1, 2] was ignored without a word,
// leaving the range at ±1e9.
func TestRewardRangeNotTwoNumbers(t *testing.T) {
	for _, tc := range []struct{ name, rng, want string }{
		{"one", "[1]", "[1]"},
		{"three", "[0, 1, 2]", "[0,1,2]"},
		{"object", `{"lo": 0, "hi": 1}`, `{"lo":0,"hi":1}`},
		{"strings", `["0", "1"]`, `["0","1"]`},
		{"reversed", "[1, 0]", "[1,0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "env.py")
			body := "import sys, json\nsys.stdin.readline()\nprint(json.dumps({'name': 'r', 'reward_range': json.loads('''" + tc.rng + "''')}, separators=(',', ':')), flush=True)\n"
			if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			e, err := stdio.New(context.Background(), []string{python(t), "-S", script}, "")
			if err == nil {
				lo, hi := e.RewardRange()
				t.Fatalf("hello with reward_range %s was taken, range [%v, %v]", tc.rng, lo, hi)
			}
			t.Log(err)
			for _, w := range []string{"reward_range", tc.want, "[low, high]"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
		})
	}
	// Two numbers, or none, are taken as before.
	e := valuesEnv(t, "", `{}`)
	if lo, hi := e.RewardRange(); lo != -1e9 || hi != 1e9 {
		t.Errorf("range without reward_range [%v, %v], want ±1e9", lo, hi)
	}
}

// A response written over several lines (Python's json.dumps(out,
// indent=2), JavaScript's JSON.stringify(out, null, 2)) fails on its first
// line, "{", saying that a response is one line, not that a print came
// before it: the hint for a print sent its author looking for a print
// that is not there.
func TestNotJSONSeveralLines(t *testing.T) {
	for _, tc := range []struct{ name, dump string }{
		{"indent", "json.dumps(out, indent=2)"},
		{"key-on-first-line", `json.dumps(out).replace('"messages": [', '"messages": [\n')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := scriptEnv(t, python(t), `import json, sys
for line in sys.stdin:
    op = json.loads(line)["op"]
    if op == "hello":
        print(json.dumps({"name": "pretty"}), flush=True)
        continue
    out = {"messages": [{"role": "user", "content": "go"}]}
    print(`+tc.dump+`, flush=True)
`)
			_, err := playSayingHi(t, e, "s1")
			if err == nil {
				t.Fatal("the episode succeeded")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "one line") || !strings.Contains(err.Error(), "indent") {
				t.Errorf("error %q\nwants a response on one line, without indent", err)
			}
			if strings.Contains(err.Error(), "a print before the response") {
				t.Errorf("error %q\nblames a print for a response over several lines", err)
			}
		})
	}
}

// A metric null on a step before the last (not decided yet) and a number
// on the step that says done is recorded, and no warning says it was left
// out: the row's metrics are the last step's, and the warning, said for
// any step's null, told of a metric left out of no row.
func TestNullMetricOnEarlierStepNotWarned(t *testing.T) {
	var logs bytes.Buffer
	e := scriptEnv(t, python(t), `import json, sys
steps = 0
for line in sys.stdin:
    op = json.loads(line)["op"]
    if op == "hello":
        out = {"name": "later"}
    elif op == "reset":
        out = {"messages": [{"role": "user", "content": "go"}]}
    else:
        steps += 1
        done = steps == 2
        out = {"messages": [{"role": "user", "content": "again"}], "done": done, "reward": 1 if done else 0,
               "metrics": {"correct": 1 if done else None}}
    print(json.dumps(out), flush=True)
`)
	e.SetLog(slog.New(slog.NewTextHandler(&logs, nil)))
	res, err := playSayingHi(t, e, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.Metrics["correct"] != 1 || res.Outcome.Reward != 1 {
		t.Errorf("outcome %+v; want reward 1, correct 1", res.Outcome)
	}
	if strings.Contains(logs.String(), "correct") {
		t.Errorf("log %q warns of correct, which the row has", logs.String())
	}
}
