package stdio_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/stdio"
	"github.com/hone-rl/hone/format/trajectory"
)

// python is envtest.Python, told whether the test runs under CI.
func python(t *testing.T) string {
	t.Helper()
	return envtest.Python(t, os.Getenv("CI") != "")
}

// scriptEnv writes body, a Python program, to a file and returns the
// stdio environment that runs it with py.
func scriptEnv(t *testing.T, py, body string) *stdio.Env {
	t.Helper()
	script := filepath.Join(t.TempDir(), "env.py")
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := stdio.New(context.Background(), []string{py, "-S", script}, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// playSayingHi plays scenario id of e, up to 3 turns, with a policy
// that says hi each turn.
func playSayingHi(t *testing.T, e *stdio.Env, id string) (env.PlayResult, error) {
	t.Helper()
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: id}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	return env.Play(ctx, ep, env.PolicyFunc(func(context.Context, []trajectory.Message, []trajectory.Tool) (trajectory.Message, error) {
		return env.Assistant("hi"), nil
	}), 3)
}

func example(t *testing.T) *stdio.Env {
	t.Helper()
	script, _ := filepath.Abs("../../../pipelines/stdio-env-example/env.py")
	e, err := stdio.New(context.Background(), []string{python(t), "-S", script}, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPythonExampleSuite(t *testing.T) {
	e := example(t)
	if e.Name() != "arith" || !reflect.DeepEqual(e.Policies(), []string{"calculator", "mental"}) {
		t.Fatalf("hello: %s %v", e.Name(), e.Policies())
	}
	envtest.Suite(t, e, envtest.SuiteOptions{Scenarios: 2, MaxTurns: 6})
}

// The calculator policy solves every task; the mental one (a*b) none.
func TestPythonExamplePolicies(t *testing.T) {
	e := example(t)
	ctx := context.Background()
	scs, err := e.Scenarios(ctx, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"calculator", "mental"} {
		sum := 0.0
		for i, sc := range scs {
			ep, err := e.NewEpisode(ctx, sc, int64(i))
			if err != nil {
				t.Fatal(err)
			}
			p, _ := e.Policy(name, 1)
			res, err := env.Play(ctx, ep, p, 6)
			ep.Close()
			p.(io.Closer).Close()
			if err != nil {
				t.Fatal(err)
			}
			sum += res.Outcome.Reward
			if name == "calculator" {
				if len(res.Tools) != 1 || res.Messages[1].ToolCalls[0].Name != "calculator" || res.Messages[2].Role != "tool" || res.Outcome.Metrics["calculator_calls"] != 1 {
					t.Errorf("%s: transcript %+v", sc.ID, res.Messages)
				}
			}
		}
		if want := map[string]float64{"calculator": 2, "mental": 0}[name]; sum != want {
			t.Errorf("policy %s: total reward %v, want %v", name, sum, want)
		}
	}
}

// Broken programs fail the episode with a message that says why.
func TestBrokenPrograms(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	hello := `import sys,json
print(json.dumps({"name":"b"}), flush=True)
`
	for _, tc := range []struct{ name, body, want string }{
		{"exits", hello + "sys.stderr.write('boom\\n')\n", "exited without answering (exit status 0); stderr: boom"},
		{"not-json", hello + "print('hello there', flush=True)\n", "not JSON"},
		{"error", hello + "print(json.dumps({'error':'no such scenario'}), flush=True)\n", "no such scenario"},
		// JSON, so not "not JSON" (which both were): an error given as an
		// object, as JSON-RPC writes one, is quoted; another value says
		// what a response must be.
		{"error-object", hello + "print(json.dumps({'error':{'code':3,'message':'no such scenario'}}), flush=True)\n", `environment error: {"code":3,"message":"no such scenario"}`},
		// Its bytes that are not UTF-8 (a program writing Latin-1 into
		// its JSON) are U+FFFD, as they are in a text error, read by
		// encoding/json: the error is a row's error string.
		{"error-object-latin1", hello + "sys.stdout.buffer.write(b'{\"error\":{\"message\":\"caf\\xe9\"}}\\n')\nsys.stdout.flush()\n", "environment error: {\"message\":\"caf\uFFFD\"}"},
		{"not-object", hello + "print(json.dumps([1,2]), flush=True)\n", "response is not a JSON object"},
		// null decoded into the response as nothing: an empty observation
		// for reset, an empty step that is not done, with no error.
		{"null", hello + "print('null', flush=True)\n", "response is not a JSON object"},
		{"bad-message", hello + "print(json.dumps({'messages':[{'content':'x'}]}), flush=True)\n", "without a role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// hello goes to a first process; the episode gets a second.
			e := scriptEnv(t, py, "import sys,json\nif sys.stdin.readline().find('hello')>=0:\n    print(json.dumps({'name':'b'}), flush=True)\n    sys.exit(0)\n"+strings.TrimPrefix(tc.body, hello))
			ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			_, err = ep.Reset(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("hang", func(t *testing.T) {
		e := scriptEnv(t, py, "import sys,json,time\nif sys.stdin.readline().find('hello')>=0:\n    print(json.dumps({'name':'b'}), flush=True)\n    sys.exit(0)\ntime.sleep(30)\n")
		ep, _ := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := ep.Reset(c)
		if err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("hang: %v after %v", err, time.Since(start))
		}
		ep.Close()
	})
}

func TestSplit(t *testing.T) {
	got, err := stdio.Split(`python3  'my env.py' --x "a b" ''`)
	if want := []string{"python3", "my env.py", "--x", "a b", ""}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %q, %v; want %q", got, err, want)
	}
	if _, err := stdio.Split(`a 'b`); err == nil {
		t.Error("unbalanced quote accepted")
	}
}

var _ = trajectory.Message{}

// A program started through a wrapper (sh, uv run, npx) runs as the
// wrapper's child and shares its stderr: when it hangs, ending the episode
// must not wait for it to exit.
func TestHangBehindWrapper(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	dir := t.TempDir()
	script := filepath.Join(dir, "env.py")
	os.WriteFile(script, []byte("import sys,json,time\nif sys.stdin.readline().find('hello')>=0:\n    print(json.dumps({'name':'b'}), flush=True)\n    sys.exit(0)\ntime.sleep(20)\n"), 0o644)
	wrapper := filepath.Join(dir, "run.sh")
	os.WriteFile(wrapper, []byte(py+" -S "+script+"\nexit $?\n"), 0o644)
	e, err := stdio.New(ctx, []string{"sh", wrapper}, "")
	if err != nil {
		t.Fatal(err)
	}
	resetTimesOut(t, e, env.Scenario{ID: "s"})
}

// resetTimesOut resets an episode of e on sc with a 200 ms deadline, which
// its program (hung) does not answer: the reset must fail, and the reset
// and the episode's close must end within seconds, not wait for the
// program.
func resetTimesOut(t *testing.T, e *stdio.Env, sc env.Scenario) {
	t.Helper()
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := ep.Reset(c); err == nil {
		t.Error("reset of a hung program succeeded")
	}
	ep.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("reset and close took %v", d)
	}
}

// A program that hangs before it reads its request must not hang the
// episode when the request is larger than the pipe holds: the episode's
// deadline still stops it.
func TestHangWithLargeRequest(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	dir := t.TempDir()
	script := filepath.Join(dir, "env.py")
	// The first process answers hello; the next ones hang without reading.
	os.WriteFile(script, []byte("import sys,json,time,os\nif os.path.exists('started'):\n    time.sleep(20)\nopen('started','w').close()\nsys.stdin.readline()\nprint(json.dumps({'name':'b'}), flush=True)\n"), 0o644)
	e, err := stdio.New(ctx, []string{py, "-S", script}, dir)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"doc":"` + strings.Repeat("x", 1<<20) + `"}`)
	resetTimesOut(t, e, env.Scenario{ID: "s", Payload: payload})
}

// A program whose hello fails does not start the run, and the error quotes
// what it wrote on stderr (docs/stdio-env.md: "the message and the
// program's stderr quoted"), whether it answered with an error, answered
// something that is not JSON, or exited.
func TestHelloFailureQuotesStderr(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	for _, tc := range []struct{ name, answer, want string }{
		{"error", "print(json.dumps({'error':'bad config'}), flush=True)\n", "bad config"},
		{"not-json", "print('hello there', flush=True)\n", "not JSON"},
		{"exits", "sys.exit(3)\n", "exited without answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "env.py")
			os.WriteFile(script, []byte("import sys,json\nsys.stdin.readline()\nsys.stderr.write('config.yaml: no such file\\n')\nsys.stderr.flush()\n"+tc.answer), 0o644)
			_, err := stdio.New(ctx, []string{py, "-S", script}, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "stderr: config.yaml: no such file") {
				t.Fatalf("got %v, want %q and the program's stderr", err, tc.want)
			}
			if n := strings.Count(err.Error(), "config.yaml"); n != 1 {
				t.Errorf("stderr quoted %d times: %v", n, err)
			}
		})
	}
}

// A Python program that prints its responses without flush=True answers
// nothing while it runs: its stdout is a pipe, which Python buffers. The
// run waited a minute and said only "context deadline exceeded (no answer
// within --start-timeout 1m0s)"; the error now says what the likely cause
// is and how to fix it.
func TestHelloTimeoutNamesBuffering(t *testing.T) {
	py := python(t)
	// Unbuffered, as some shells and CI images set it, the program answers.
	t.Setenv("PYTHONUNBUFFERED", "")
	script := filepath.Join(t.TempDir(), "env.py")
	os.WriteFile(script, []byte("import sys,json\nfor line in sys.stdin:\n    print(json.dumps({'name':'buffered'}))\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := stdio.New(ctx, []string{py, "-S", script}, "")
	if err == nil || !strings.Contains(err.Error(), "flush=True") || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("got %v, want the deadline and the hint to flush each response", err)
	}
}

// A program that already answered on its process (hello, reset), each
// response flushed, and then takes longer than the deadline over a step
// (a slow tool, a test suite) does not buffer its stdout: the timeout must
// not tell its author to flush, which they do, and send them looking for
// the wrong cause.
func TestSlowStepTimeoutDoesNotBlameBuffering(t *testing.T) {
	py := python(t)
	e := scriptEnv(t, py, `import sys,json
for line in sys.stdin:
    req = json.loads(line)
    if req['op'] == 'hello':
        print(json.dumps({'name':'slow'}), flush=True)
    elif req['op'] == 'reset':
        print(json.dumps({'messages':[{'role':'user','content':'go'}]}), flush=True)
    # a step gets no answer within the deadline: the program is busy
`)
	err := stepPastDeadline(t, e, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") || strings.Contains(err.Error(), "flush") {
		t.Fatalf("step past its deadline after a flushed reset: %v; want the deadline, without the hint to flush (its responses came)", err)
	}
}

// A program that writes a line longer than the limit (here endless output
// with no newline, stopped at 1 MiB) fails the request at once, saying so,
// rather than growing the reader's memory until the episode's deadline.
func TestLineOverLimit(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	e := scriptEnv(t, py, "import sys,json,time\nif sys.stdin.readline().find('hello')>=0:\n    print(json.dumps({'name':'b'}), flush=True)\n    sys.exit(0)\n"+
		"while True:\n    sys.stdout.write('x' * 65536)\n    sys.stdout.flush()\n")
	e.MaxLineBytes = 1 << 20
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The error says the limit and what to do, not the Go field that
	// sets it (stdio.Env.MaxLineBytes), which no user can set.
	_, err = ep.Reset(c)
	if err == nil {
		t.Fatal("the reset succeeded")
	}
	t.Log(err)
	for _, w := range []string{"line longer than the limit of 1048576 bytes (1 MiB)", "shorten", "file"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nwants %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "MaxLineBytes") {
		t.Errorf("error %q names a Go field", err)
	}
	if c.Err() != nil {
		t.Errorf("the request waited for the deadline")
	}
}

// answering starts a program named name that answers hello and then every
// request with the one line reply.
func answering(t *testing.T, name, reply string) *stdio.Env {
	t.Helper()
	script := filepath.Join(t.TempDir(), "env.sh")
	body := "read line\ncase \"$line\" in\n*hello*) echo '{\"name\":\"" + name + "\"}' ;;\n*) echo '" + reply + "' ;;\nesac\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := stdio.New(context.Background(), []string{"sh", script}, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A program that answers "scenarios" with more than the n asked for (a
// fixed list that ignores n) gets its first n played: n is the run's
// --groups, and the run must not grow past it.
func TestScenariosAtMostN(t *testing.T) {
	ctx := context.Background()
	e := answering(t, "many", `{"scenarios":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"},{"id":"e"}]}`)
	scs, err := e.Scenarios(ctx, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sc := range scs {
		ids = append(ids, sc.ID)
	}
	if !reflect.DeepEqual(ids, []string{"a", "b"}) {
		t.Errorf("scenarios %q for n=2, want the first two of the five the program sent", ids)
	}
}

// A generated scenario's split is train, val, test or none
// (docs/stdio-env.md): another is refused when the scenarios come, naming
// the scenario, not after a group of episodes was played for it, when the
// row could not be written.
func TestScenariosBadSplit(t *testing.T) {
	ctx := context.Background()
	e := answering(t, "splits", `{"scenarios":[{"id":"a","split":"val"},{"id":"b","split":"dev"}]}`)
	scs, err := e.Scenarios(ctx, 1, 2)
	if err == nil || !strings.Contains(err.Error(), `scenario b`) || !strings.Contains(err.Error(), `"dev"`) {
		t.Errorf("scenarios %+v, error %v; want an error naming scenario b and its split", scs, err)
	}
}

// Two generated scenarios with one id are refused when they come, naming
// the id: their rows could not be told apart, and a run reading the output
// back with --scenarios would play only the first.
func TestScenariosDuplicateID(t *testing.T) {
	ctx := context.Background()
	e := answering(t, "dups", `{"scenarios":[{"id":"a"},{"id":"b"},{"id":"a"}]}`)
	scs, err := e.Scenarios(ctx, 1, 3)
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "0 and 2") {
		t.Errorf("scenarios %+v, error %v; want an error naming id a and its places", scs, err)
	}
}

// A tool without a function name (here in the flat shape of OpenAI's
// Responses API, {"type", "name", "parameters"}, whose name the chat shape
// does not read) fails the episode at reset, saying so: a nameless tool
// cannot be offered to a model, and its row could not be written.
func TestResetToolWithoutName(t *testing.T) {
	ctx := context.Background()
	e := answering(t, "flat", `{"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","name":"calc","parameters":{"type":"object"}}]}`)
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	obs, err := ep.Reset(ctx)
	if err == nil || !strings.Contains(err.Error(), "tools[0]") || !strings.Contains(err.Error(), "name") {
		t.Errorf("reset gave tools %+v, error %v; want an error naming tools[0] and its missing name", obs.Tools, err)
	}
}

// The stderr quoted in an error is kept to its last 4 KB, and the cut may
// fall inside a character; the error becomes a row's error string, which
// must be UTF-8 (Parquet readers such as DuckDB refuse a file that is
// not). Here the program writes 3000 two-byte characters, then a line
// that is not UTF-8 (Latin-1) of an odd length, so that the last 4096
// bytes start in the middle of a character, and exits without answering.
func TestStderrQuotedAsUTF8(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	e := scriptEnv(t, py, "import sys,json\nif sys.stdin.readline().find('hello')>=0:\n    print(json.dumps({'name':'b'}), flush=True)\n    sys.exit(0)\n"+
		"sys.stderr.buffer.write(b'x' + 'é'.encode() * 3000 + b'\\ncaf\\xe9!\\n')\nsys.exit(3)\n")
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	_, err = ep.Reset(ctx)
	if err == nil || !strings.Contains(err.Error(), "exited without answering") {
		t.Fatalf("got %v, want the exit", err)
	}
	if !utf8.ValidString(err.Error()) {
		t.Errorf("error is not UTF-8: %q", err.Error()[:200])
	}
	if !strings.Contains(err.Error(), "; stderr: éé") || !strings.HasSuffix(err.Error(), "\ncaf\uFFFD!") {
		t.Errorf("stderr not quoted as written, each bad byte as U+FFFD: %q", err.Error())
	}
}

// TestActMessageRole: a scripted policy's answer to act that leaves out
// the role is the assistant's turn (it failed the episode with "no
// role"); one that names another role fails it, saying so.
func TestActMessageRole(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	for _, tc := range []struct{ name, message, want string }{
		{"no-role", `{'content': '42'}`, ""},
		{"assistant", `{'role': 'assistant', 'content': '42'}`, ""},
		{"user", `{'role': 'user', 'content': '42'}`, `role "user"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "env.py")
			body := "import sys,json\nfor line in sys.stdin:\n    op = json.loads(line)['op']\n" +
				"    if op == 'hello':\n        print(json.dumps({'name': 'r', 'policies': ['p']}), flush=True)\n" +
				"    elif op == 'act':\n        print(json.dumps({'message': " + tc.message + "}), flush=True)\n" +
				"    else:\n        print(json.dumps({'error': 'unexpected ' + op}), flush=True)\n"
			if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			e, err := stdio.New(ctx, []string{py, "-S", script}, "")
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.Policy("p", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer p.(io.Closer).Close()
			m, err := p.Act(ctx, []trajectory.Message{{Role: "user", Content: "6*7?"}}, nil)
			if tc.want == "" {
				if err != nil || m.Role != "assistant" || m.Content != "42" {
					t.Errorf("act: %+v, %v; want the assistant's 42", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("act: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestExtraResponseLine: a program that writes two lines for one request
// (a debug print to stdout, a response written twice) put every later
// response one request behind, silently: here step read reset's second
// copy as its answer, and the episode went on with the wrong
// observation. The program echoes the requests' ids, which makes the
// error certain; without them the line is caught when it arrives while
// no request waits (docs/stdio-env.md).
func TestExtraResponseLine(t *testing.T) {
	py := python(t)
	body := `import sys,json
for line in sys.stdin:
    req = json.loads(line)
    op, rid = req["op"], req.get("id")
    if op == "hello":
        print(json.dumps({"name": "twice"}), flush=True)
        sys.exit(0)
    if op == "reset":
        r = json.dumps({"id": rid, "messages": [{"role": "user", "content": "say hi"}]})
        sys.stdout.write(r + "\n" + r + "\n")
        sys.stdout.flush()
    else:
        print(json.dumps({"id": rid, "messages": [{"role": "user", "content": "again"}], "done": False}), flush=True)
`
	e := scriptEnv(t, py, body)
	res, err := playSayingHi(t, e, "s")
	if err == nil || !strings.Contains(err.Error(), "out of step") {
		t.Fatalf("err %v, messages %+v", err, res.Messages)
	}
}

// TestResponseIDOfItsOwn: a program whose responses carry an "id" of
// their own, not a number (here reset and step name the scenario, as an
// environment might for its logs), played as before the requests had
// ids. Taken for an echo of the request's number, every episode failed
// "responses out of step"; an id that is not a number echoes nothing.
func TestResponseIDOfItsOwn(t *testing.T) {
	py := python(t)
	body := `import sys,json
sid = None
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        print(json.dumps({"name": "own-id"}), flush=True)
    elif op == "reset":
        sid = req["scenario"]["id"]
        print(json.dumps({"id": sid, "messages": [{"role": "user", "content": "say hi"}]}), flush=True)
    else:
        print(json.dumps({"id": sid, "done": True, "reward": 1, "messages": []}), flush=True)
`
	e := scriptEnv(t, py, body)
	res, err := playSayingHi(t, e, "s1")
	if err != nil || res.Outcome.Reward != 1 {
		t.Fatalf("err %v, outcome %+v", err, res.Outcome)
	}
}

// resetEpisode opens an episode of e, closed when the test ends, and
// resets it, failing the test on an error of either.
func resetEpisode(t *testing.T, ctx context.Context, e *stdio.Env) env.Episode {
	t.Helper()
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	if _, err := ep.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	return ep
}

// stepPastDeadline resets an episode of e and returns the error of a step
// given d to answer, for the programs that take longer.
func stepPastDeadline(t *testing.T, e *stdio.Env, d time.Duration) error {
	t.Helper()
	ep := resetEpisode(t, context.Background(), e)
	c, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := ep.Step(c, env.Turn{Message: env.Assistant("hi")})
	return err
}
