package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/gobuild"
)

// The pages under docs/ show runnable examples first. Their fenced blocks
// marked "sh test" or "js test" run here, as written, against the binaries
// this test builds; a "text output" block right after one is its exact
// stdout.

// docBlock is one runnable block of a page and the output shown under it.
type docBlock struct {
	lang, code string
	line       int     // of the opening fence, for messages
	output     *string // the "text output" block that follows, if any
}

// docBlocks reads page's runnable blocks, in order.
func docBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	var info string
	var body []string
	start := 0
	for i, ln := range strings.Split(string(b), "\n") {
		fence := strings.HasPrefix(ln, "```")
		switch {
		case fence && start == 0:
			info, body, start = strings.TrimSpace(strings.TrimPrefix(ln, "```")), nil, i+1
		case fence:
			code := strings.Join(body, "\n") + "\n"
			if lang, ok := strings.CutSuffix(info, " test"); ok {
				blocks = append(blocks, docBlock{lang: lang, code: code, line: start})
			} else if info == "text output" {
				if len(blocks) == 0 || blocks[len(blocks)-1].output != nil {
					t.Fatalf("%s:%d: output block without a runnable block before it", page, start)
				}
				blocks[len(blocks)-1].output = &code
			}
			start = 0
		default:
			body = append(body, ln)
		}
	}
	if start != 0 {
		t.Fatalf("%s:%d: unclosed code block", page, start)
	}
	if len(blocks) == 0 {
		t.Fatalf("%s: no runnable block", page)
	}
	return blocks
}

// docNeedTool fails under CI and skips elsewhere: a reference tool is missing.
func docNeedTool(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s", msg)
	}
	t.Skip(msg)
}

// docPython returns the real Python executable behind python3 (a shim such as
// pyenv's costs a second per start, and the stdio environment starts one
// process per episode).
func docPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; assert sys.version_info >= (3, 9), sys.version; print(sys.executable)").Output()
	if err != nil {
		docNeedTool(t, fmt.Sprintf("python3 (3.9 or newer) is not on PATH: %v", err))
	}
	return strings.TrimSpace(string(out))
}

var (
	extraBins    sync.Once
	extraBinsErr error
)

// docBins builds the binaries the pages use besides hone-collect and
// hone-serve into binDir, once.
func docBins(t *testing.T) {
	t.Helper()
	extraBins.Do(func() {
		extraBinsErr = gobuild.Commands(context.Background(), binDir, "../hone-train", "../hone-inspect", "../hone-score")
	})
	if extraBinsErr != nil {
		t.Fatal(extraBinsErr)
	}
}

// docDir is a stand-in for the repository root after `make build`: bin/
// holds the binaries built here, the folders the pages use are links to
// the real ones, and out/ is fresh. path is the PATH to run blocks with:
// python3 first (the real executable), then the system's.
func docDir(t *testing.T, tools ...string) (dir, path string) {
	t.Helper()
	docBins(t)
	dir = t.TempDir()
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(binDir, "bin")
	for _, d := range []string{"pipelines", "python", "docs", "testdata"} {
		abs, err := filepath.Abs(filepath.Join("../..", d))
		if err != nil {
			t.Fatal(err)
		}
		link(abs, d)
	}
	shims := filepath.Join(dir, ".tools")
	if err := os.Mkdir(shims, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(docPython(t), filepath.Join(shims, "python3")); err != nil {
		t.Fatal(err)
	}
	for _, tool := range append([]string{"bash"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			docNeedTool(t, tool+" is not installed")
		}
	}
	return dir, shims + string(os.PathListSeparator) + os.Getenv("PATH")
}

// docRunBlock runs a sh block with bash -euo pipefail in dir, in a process
// group of its own that is killed afterwards (the block may start servers
// in the background), and returns its stdout.
func docRunBlock(t *testing.T, dir, path string, b docBlock) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.code)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path, "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in python/
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second // a background job left holding stdout
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("block at line %d: %v\n%s\nstdout:\n%s\nstderr:\n%s", b.line, err, b.code, stdout.String(), stderr.String())
	}
	if b.output != nil && stdout.String() != *b.output {
		t.Errorf("block at line %d prints:\n%s\nthe page shows:\n%s", b.line, stdout.String(), *b.output)
	}
	return stdout.String()
}

// docRows reads a file's trajectories, in order.
func docRows(t *testing.T, path string) []trajectory.Trajectory {
	t.Helper()
	var out []trajectory.Trajectory
	for _, g := range read(t, path) {
		for _, tr := range g.Trajectories {
			if tr.GroupID != g.ID {
				t.Errorf("%s: trajectory %s in group %s says group %s", path, tr.ID, g.ID, tr.GroupID)
			}
			out = append(out, tr)
		}
	}
	return out
}

// docs/stdio-env.md: the scripted run writes 2 groups of 2 solved
// episodes, the protocol session prints what the page shows, and the run
// with a model plays against the tiny model the page serves. The page once
// showed only `--model myrun` against a server it never started: 404 on
// every episode for a reader without a trained run.
func TestDocStdioEnv(t *testing.T) {
	dir, path := docDir(t, "jq", "curl")
	blocks := docBlocks(t, "../../docs/stdio-env.md")
	if len(blocks) != 4 || blocks[0].output == nil || blocks[1].output != nil || blocks[2].output == nil || blocks[3].output != nil {
		t.Fatalf("want the scripted run and its output, the run with a model, the protocol session and its output, the loop; have %+v", blocks)
	}
	docRunBlock(t, dir, path, blocks[0])
	trs := docRows(t, filepath.Join(dir, "out/arith.parquet"))
	if len(trs) != 4 {
		t.Fatalf("%d rows, want 2 groups × 2", len(trs))
	}
	for _, tr := range trs {
		if tr.Error != "" || tr.Reward == nil || *tr.Reward != 1 || tr.Metrics["correct"] != 1 || tr.Env != "arith" || tr.Model != "scripted:calculator" {
			t.Errorf("%s: error %q, reward %v, metrics %v, env %q, model %q", tr.ID, tr.Error, tr.Reward, tr.Metrics, tr.Env, tr.Model)
		}
	}
	docSameTinyModel(t, blocks[1])
	docRunBlock(t, dir, path, docFreePorts(t, blocks[1], "8000"))
	docCheckModelRun(t, filepath.Join(dir, "out/arith-tiny.parquet"), 8, "arith")
	docRunBlock(t, dir, path, blocks[2])
	// The loop through pipelines/demo.sh: the page once stopped at "score
	// the file", and a reader with a program of their own had to work out
	// from README's guess-the-number round how to train on it. The script
	// would take a checkout's own bin/ (stale, or none) over the binaries
	// built here: BIN names them.
	t.Setenv("BIN", binDir)
	docRunBlock(t, dir, path, blocks[3])
	docCheckLoop(t, filepath.Join(dir, "out/arith-loop"))
}

// docSameTinyModel: the page's out/tiny is made by README's round's own
// init-model command, since the page says that round may have made it and
// a reader goes on to train it as the round does. The page made it with
// init-model's defaults (--init-std 0.02), on which a LoRA warm-up learned
// next to nothing, where README's --init-std 0.3 learns.
func docSameTinyModel(t *testing.T, b docBlock) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var round string
	for _, ln := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(ln, "bin/hone-train init-model ") && strings.HasSuffix(ln, " -o out/tiny") {
			round = ln
			break
		}
	}
	if round == "" {
		t.Fatal("README.md has no round making out/tiny with bin/hone-train init-model")
	}
	joined := strings.Join(strings.Fields(strings.ReplaceAll(b.code, "\\\n", " ")), " ")
	if !strings.Contains(joined, round) {
		t.Errorf("the block at line %d makes out/tiny otherwise than README's round (%s):\n%s", b.line, round, b.code)
	}
}

// docCheckLoop: demo.sh's run in out wrote its summary (the base model and
// rl evaluated on the "correct" metric), its report, and a step of run rl.
func docCheckLoop(t *testing.T, out string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Results []struct {
			Model, Metric string
			Episodes      int
		}
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	models := map[string]int{}
	for _, r := range sum.Results {
		if r.Metric != "correct" || r.Episodes != 8 {
			t.Errorf("summary row %+v: want metric correct over 8 episodes", r)
		}
		models[r.Model]++
	}
	if models["base"] != 2 || models["rl"] != 2 {
		t.Errorf("summary rows by model %v: want base and rl, greedy and at T=1", models)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	}
	latest, err := os.ReadFile(filepath.Join(out, "adapters/rl/latest"))
	if err != nil || strings.TrimSpace(string(latest)) != "step-000002" {
		t.Errorf("run rl: latest %q, %v (want step-000002 after 2 rounds)", latest, err)
	}
}

// docCheckModelRun: a page's run with a model wrote n episodes, each
// answered by the tiny model it served, none failed and every one scored.
func docCheckModelRun(t *testing.T, file string, n int, env string) {
	t.Helper()
	trs := docRows(t, file)
	if len(trs) != n {
		t.Fatalf("%s: %d rows, want %d", file, len(trs), n)
	}
	for _, tr := range trs {
		if tr.Error != "" || tr.Reward == nil || tr.Model != "tiny" || tr.Env != env || len(tr.Tools) == 0 {
			t.Errorf("%s: error %q, reward %v, model %q, env %q, %d tools", tr.ID, tr.Error, tr.Reward, tr.Model, tr.Env, len(tr.Tools))
			continue
		}
		turns := 0
		for k, m := range tr.Messages {
			if m.Role != "assistant" {
				continue
			}
			turns++
			if !m.Trainable || len(m.TokenIDs) == 0 || len(m.Logprobs) != len(m.TokenIDs) || m.AnswerModel != "tiny" {
				t.Errorf("%s message %d: trainable %v, %d ids, %d logprobs, model %q", tr.ID, k, m.Trainable, len(m.TokenIDs), len(m.Logprobs), m.AnswerModel)
			}
		}
		if turns == 0 {
			t.Errorf("%s: no assistant turn", tr.ID)
		}
	}
}

// docFreePorts returns b with each port it names (":PORT" and "--port
// PORT") moved to a free one, so that a test does not depend on, or
// disturb, a server the machine runs there.
func docFreePorts(t *testing.T, b docBlock, ports ...string) docBlock {
	t.Helper()
	for _, port := range ports {
		if !strings.Contains(b.code, ":"+port) {
			t.Fatalf("the block at line %d names no port %s:\n%s", b.line, port, b.code)
		}
		free := docFreePort(t)
		b.code = strings.NewReplacer(":"+port, ":"+free, "--port "+port, "--port "+free).Replace(b.code)
	}
	return b
}

// docs/mcp-env.md: the replayed tasks over the example MCP server, with
// the rewards and the conversation the page shows; then the run with a
// model, against the tiny model the page serves (out/tiny already there,
// as for a reader who followed the stdio page first); then SFT on the
// replays, which the page once offered as "SFT data" with no word that
// the tiny model's template cannot render their tool calls (hone-train
// refuses them).
func TestDocMCPEnv(t *testing.T) {
	dir, path := docDir(t, "jq", "curl")
	blocks := docBlocks(t, "../../docs/mcp-env.md")
	if len(blocks) != 3 || blocks[0].output == nil {
		t.Fatalf("want 1 sh block with its output, the run with a model, then SFT on the replays; have %+v", blocks)
	}
	docRunBlock(t, dir, path, blocks[0])
	trs := docRows(t, filepath.Join(dir, "out/mcp.parquet"))
	want := map[string]float64{"france": 1, "japan": 1, "kenya": 1, "peru": 0}
	if len(trs) != len(want) {
		t.Fatalf("%d rows, want %d", len(trs), len(want))
	}
	for _, tr := range trs {
		if r, ok := want[tr.ScenarioID]; !ok || tr.Error != "" || tr.Reward == nil || *tr.Reward != r || tr.Env != "mcp" || len(tr.Tools) != 2 {
			t.Errorf("%s: error %q, reward %v, env %q, %d tools", tr.ScenarioID, tr.Error, tr.Reward, tr.Env, len(tr.Tools))
		}
	}
	// A reader who starts on this page leaves its out/tiny to the pages and
	// README's round that train it.
	docSameTinyModel(t, blocks[1])
	docInitTiny(t, dir)
	docRunBlock(t, dir, path, docFreePorts(t, blocks[1], "8000"))
	docCheckModelRun(t, filepath.Join(dir, "out/mcp-tiny.parquet"), 16, "mcp")
	// Twice, as a reader trying it again does: hone-train refuses a run
	// that has steps (without --resume), and the block once ended exit 2.
	docRunBlock(t, dir, path, blocks[2])
	docRunBlock(t, dir, path, blocks[2])
	latest, err := os.ReadFile(filepath.Join(dir, "out/adapters/mcp-sft/latest"))
	if err != nil || strings.TrimSpace(string(latest)) != "step-000002" {
		t.Fatalf("SFT on the replays: latest %q, %v", latest, err)
	}
}

// docInitTiny writes dir/out/tiny, as README's round or another page left
// it: a page's block must use that model, not fail on it.
func docInitTiny(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "hone-train"), "init-model", "--family", "qwen3", "-o", filepath.Join(dir, "out/tiny")).CombinedOutput()
	if err != nil {
		t.Fatalf("hone-train init-model: %v\n%s", err, out)
	}
}

// docs/games.md: 2048 with ART's reward, each row's reward ART's formula
// on its final board (read back from the metrics).
func TestDocGames(t *testing.T) {
	dir, path := docDir(t, "jq")
	blocks := docBlocks(t, "../../docs/games.md")
	if len(blocks) != 1 || blocks[0].output == nil {
		t.Fatalf("want 1 sh block with its output, have %+v", blocks)
	}
	docRunBlock(t, dir, path, blocks[0])
	trs := docRows(t, filepath.Join(dir, "out/2048.parquet"))
	if len(trs) != 3 {
		t.Fatalf("%d rows, want 3", len(trs))
	}
	for _, tr := range trs {
		m, s := tr.Metrics["max_tile"], tr.Metrics["board_value"]
		want := 2.0
		if m < 128 {
			want = (math.Log2(m)-1)/(math.Log2(128)-1) + 0.2*(math.Log2(s)-1)/(math.Log2(16*128)-1)
		}
		if tr.Error != "" || tr.Reward == nil || math.Abs(*tr.Reward-want) > 1e-12 || tr.Env != "2048" {
			t.Errorf("%s: error %q, reward %v, want %v, metrics %v", tr.ScenarioID, tr.Error, tr.Reward, want, tr.Metrics)
		}
	}
}

// docFreePort returns a port nothing listens on now.
func docFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// docs/proxy.md's shell example, on free ports instead of 8000 and 8100,
// with out/tiny already made (by README's round or another page; the block
// once ran init-model regardless, which refuses a folder that exists), and
// run a second time: the example agent's four attempts are written as one
// group with the rewards it printed and the tokens hone-serve sampled.
func TestDocProxy(t *testing.T) {
	dir, path := docDir(t, "curl")
	blocks := docBlocks(t, "../../docs/proxy.md")
	if len(blocks) != 4 || blocks[0].lang != "sh" || blocks[1].lang != "sh" || blocks[2].lang != "python" || blocks[3].lang != "js" {
		t.Fatalf("want two sh blocks, a python and a js block, have %+v", blocks)
	}
	// The block trains out/tiny in its next round, and a reader who starts
	// here leaves that model to every page and README's round after it.
	docSameTinyModel(t, blocks[0])
	docInitTiny(t, dir)
	// Run twice, as a reader trying it again does: the block once wrote
	// the same ids into a second file of out/proxy, and its own
	// hone-inspect stats then refused the folder (duplicate trajectory_id).
	docRunBlock(t, dir, path, docFreePorts(t, blocks[0], "8000", "8100"))
	stdout := docRunBlock(t, dir, path, docFreePorts(t, blocks[0], "8000", "8100"))
	said := map[string][2]int{} // trajectory: reward, turns
	for _, m := range regexp.MustCompile(`(?m)^(q1-a\d): reward (\d) after (\d) turn`).FindAllStringSubmatch(stdout, -1) {
		r, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		said[m[1]] = [2]int{r, n}
	}
	if len(said) != 4 || !strings.Contains(stdout, "groups 1, trajectories 4") {
		t.Fatalf("agent and stats printed:\n%s", stdout)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "out/proxy/*.parquet"))
	if len(files) != 1 || filepath.Base(files[0]) != "proxy-000001.parquet" {
		t.Fatalf("files %v", files)
	}
	trs := docRows(t, files[0])
	if len(trs) != 4 {
		t.Fatalf("%d trajectories", len(trs))
	}
	for i, tr := range trs {
		s := said[tr.ID]
		if tr.ID != fmt.Sprintf("q1-a%d", i) || tr.GroupID != "q1" || tr.Env != "proxy" || tr.Run != "proxy" || tr.Error != "" ||
			tr.Reward == nil || *tr.Reward != float64(s[0]) || tr.Metrics["turns"] != float64(s[1]) || len(tr.Messages) != 2*s[1] {
			t.Errorf("trajectory %d: %+v (agent said %v)", i, tr, s)
			continue
		}
		docCheckTurns(t, tr)
	}
	docProxyNextRound(t, dir, path, blocks[1])
}

// docProxyNextRound runs docs/proxy.md's next round after its example: the
// page showed how to record groups but not how to train on them and play
// the trained adapter, and its example's hone-serve had no --adapters, so
// a reader coming from ART was left to find the round in README's game
// loop. The round trains step 1 on out/proxy, the agent plays group q2
// with it through the proxy, and step 2 trains on q2's file alone.
func docProxyNextRound(t *testing.T, dir, path string, b docBlock) {
	t.Helper()
	docRunBlock(t, dir, path, docFreePorts(t, b, "8000", "8100"))
	trs := docRows(t, filepath.Join(dir, "out/proxy/proxy-000002.parquet"))
	if len(trs) != 4 {
		t.Fatalf("round 2: %d trajectories", len(trs))
	}
	for _, tr := range trs {
		if tr.GroupID != "q2" || tr.Model != "agent" || tr.Adapter != "agent@1" || tr.Reward == nil {
			t.Errorf("round 2 row: group %q, model %q, adapter %q, reward %v", tr.GroupID, tr.Model, tr.Adapter, tr.Reward)
		}
	}
	latest, err := os.ReadFile(filepath.Join(dir, "out/adapters/agent/latest"))
	if err != nil || strings.TrimSpace(string(latest)) != "step-000002" {
		t.Fatalf("after round 2, latest is %q (%v), want step-000002", latest, err)
	}
	m, err := os.ReadFile(filepath.Join(dir, "out/adapters/agent/metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(m)), "\n")
	if len(rows) != 2 || !strings.Contains(rows[1], `"groups":1,`) || !strings.Contains(rows[1], `"trajectories":4,`) {
		t.Fatalf("step 2 should train q2's group alone; metrics.jsonl:\n%s", m)
	}
}

// docCheckTurns: every assistant turn carries what hone-serve sampled.
func docCheckTurns(t *testing.T, tr trajectory.Trajectory) {
	t.Helper()
	for k, m := range tr.Messages {
		if (m.Role == "assistant") != (k%2 == 1) {
			t.Errorf("%s message %d: role %s", tr.ID, k, m.Role)
		}
		if m.Role == "assistant" && (!m.Trainable || len(m.TokenIDs) == 0 || len(m.Logprobs) != len(m.TokenIDs) || m.AnswerModel != "tiny") {
			t.Errorf("%s message %d: trainable %v, %d ids, %d logprobs, model %q", tr.ID, k, m.Trainable, len(m.TokenIDs), len(m.Logprobs), m.AnswerModel)
		}
	}
}

// docStartProxy runs hone-collect proxy in front of upstream, writing into
// out, and returns its base URL (…/v1). It is stopped at the test's end.
func docStartProxy(t *testing.T, upstream, out string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "proxy", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Error("proxy did not stop on SIGTERM")
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		re := regexp.MustCompile(`proxy listening.*addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		cmd.Wait()
	}()
	select {
	case a := <-addr:
		return "http://" + a + "/v1"
	case <-exited:
		t.Fatal("proxy exited before listening")
	case <-time.After(30 * time.Second):
		t.Fatal("proxy did not start")
	}
	return ""
}

// The helper's own calls, with the standard library, against the real
// proxy in front of the real hone-serve: headers on chat calls, rewards
// (blocking and asyncio), closes, and the proxy's refusals raised with its
// message; then the groups as written.
func TestPythonHelper(t *testing.T) {
	py := docPython(t)
	out := t.TempDir()
	base := docStartProxy(t, startServe(t), out)
	helperDir, _ := filepath.Abs("../../python")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/helper_check.py", base, "tiny")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+helperDir, "OPENAI_BASE_URL="+base, "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper_check.py: %v\n%s", err, stderr.String())
	}
	var said struct {
		T1 []string `json:"t1"`
		T2 string   `json:"t2"`
	}
	if err := json.Unmarshal(stdout, &said); err != nil || len(said.T1) != 2 {
		t.Fatalf("output %q: %v", stdout, err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	if len(files) != 2 {
		t.Fatalf("files %v, want one per group", files)
	}
	g1, g2 := docRows(t, filepath.Join(out, "proxy-000001.parquet")), docRows(t, filepath.Join(out, "proxy-000002.parquet"))
	if len(g1) != 3 || len(g2) != 1 {
		t.Fatalf("groups of %d and %d trajectories, want 3 and 1", len(g1), len(g2))
	}
	t1, t2, t3, t4 := g1[0], g1[1], g1[2], g2[0]
	if t1.ID != "t1" || t1.GroupID != "g1" || t1.Reward == nil || *t1.Reward != 0.5 || t1.Metrics["turns"] != 2 || t1.Error != "" || len(t1.Messages) != 4 ||
		t1.Messages[1].Content != said.T1[0] || t1.Messages[3].Content != said.T1[1] {
		t.Errorf("t1: %+v (agent saw %q)", t1, said.T1)
	} else {
		docCheckTurns(t, t1)
	}
	if t2.ID != said.T2 || t2.GroupID != "g1" || t2.Reward == nil || *t2.Reward != 1 || t2.Error != "" {
		t.Errorf("t2 (%s): %+v", said.T2, t2)
	}
	if t3.ID != "t3" || t3.Reward != nil || t3.Error != "not closed" {
		t.Errorf("t3: reward %v, error %q", t3.Reward, t3.Error)
	}
	if t4.ID != "t4" || t4.GroupID != "g2" || t4.Reward != nil || t4.Error != "tool crashed" {
		t.Errorf("t4: %+v", t4)
	}
}

// docs/proxy.md's Python rollout, run as written (with a stand-in for the
// openai package's AsyncOpenAI, testdata/fakeopenai) against the real proxy
// in front of the real hone-serve, in an environment without
// OPENAI_BASE_URL: a user who copies it names the proxy's URL in the code,
// and the helper must be told it too (the page's example gave it to the
// client only, so the helper raised "no proxy URL" before any request).
func TestDocProxyPython(t *testing.T) {
	py := docPython(t)
	blocks := docBlocks(t, "../../docs/proxy.md")
	var code string
	for _, b := range blocks {
		if b.lang == "python" {
			code = b.code
		}
	}
	const docURL, docModel = `"http://127.0.0.1:8100/v1"`, `model="myrun"`
	if !strings.Contains(code, docURL) || !strings.Contains(code, docModel) {
		t.Fatalf("docs/proxy.md's python block names no %s or %s:\n%s", docURL, docModel, code)
	}
	out := t.TempDir()
	base := docStartProxy(t, startServe(t), out)
	code = strings.NewReplacer(docURL, strconv.Quote(base), docModel, `model="tiny"`).Replace(code)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rollout.py"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	helperDir, _ := filepath.Abs("../../python")
	fakeDir, _ := filepath.Abs("testdata/fakeopenai")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/run_doc_rollout.py", filepath.Join(dir, "rollout.py"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "PYTHONPATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PYTHONPATH="+helperDir+string(os.PathListSeparator)+fakeDir, "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("the page's rollout: %v\n%s", err, stderr.String())
	}
	group := strings.TrimSpace(string(stdout))
	resp, err := http.Post(strings.TrimSuffix(base, "/v1")+"/hone/groups/"+group+"/close", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("closing group %q: HTTP %d", group, resp.StatusCode)
	}
	trs := docRows(t, filepath.Join(out, "proxy-000001.parquet"))
	if len(trs) != 1 || trs[0].GroupID != group || trs[0].Reward == nil || *trs[0].Reward != 0.5 ||
		trs[0].Metrics["turns"] != 1 || len(trs[0].Messages) != 2 {
		t.Fatalf("recorded %+v", trs)
	}
	docCheckTurns(t, trs[0])
}

// docs/proxy.md's Node example, with the official openai package, against
// the real proxy in front of the real hone-serve, run as the page says to
// run it: saved under the file name it gives, with the openai major
// version it names (the one testdata/proxy-node pins), and a second run
// refused, its ids being fixed. The page once showed the code only: a
// user saving it as agent.js, or installing openai 7 on Node 20, got an
// error the page did not explain.
func TestDocProxyNode(t *testing.T) {
	page, err := os.ReadFile("../../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	how := regexp.MustCompile("save it as `([a-z]+\\.mjs)`(?s:.*?)`npm install openai@(\\d+)`(?s:.*?)`node ([a-z]+\\.mjs)`").FindSubmatch(page)
	if how == nil || string(how[1]) != string(how[3]) {
		t.Fatalf("docs/proxy.md does not say how to run its Node example (save it as `X.mjs` … `npm install openai@N` … `node X.mjs`)")
	}
	pin, err := os.ReadFile("testdata/proxy-node/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := `"openai": "` + string(how[2]) + `.`; !strings.Contains(string(pin), want) {
		t.Errorf("docs/proxy.md says npm install openai@%s; testdata/proxy-node/package.json, which the test runs, pins another:\n%s", how[2], pin)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		docNeedTool(t, "node is not installed")
	}
	modules, _ := filepath.Abs("testdata/proxy-node/node_modules")
	if _, err := os.Stat(filepath.Join(modules, "openai/package.json")); err != nil {
		docNeedTool(t, "run `npm ci` in cmd/hone-collect/testdata/proxy-node")
	}
	blocks := docBlocks(t, "../../docs/proxy.md")
	js := blocks[len(blocks)-1]
	if js.lang != "js" || !strings.Contains(js.code, `"http://127.0.0.1:8100"`) {
		t.Fatalf("the page's last runnable block is not the Node example on port 8100: %+v", js)
	}
	out := t.TempDir()
	base := docStartProxy(t, startServe(t), out)
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	code := strings.Replace(js.code, `"http://127.0.0.1:8100"`, strconv.Quote(strings.TrimSuffix(base, "/v1")), 1)
	file := string(how[1])
	if err := os.WriteFile(filepath.Join(dir, file), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runNode := func() ([]byte, string, error) {
		cmd := exec.CommandContext(ctx, node, file)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		return stdout, stderr.String(), err
	}
	stdout, stderr, err := runNode()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	if _, again, err := runNode(); err == nil || !strings.Contains(again, "409") || !strings.Contains(again, "group node was already written") {
		t.Errorf("a second run of the Node example: %v, stderr:\n%s\nthe page says it is refused with 409, group node already written", err, again)
	}
	var id string
	var reward float64
	if _, err := fmt.Sscan(string(stdout), &id, &reward); err != nil || id != "node-1" {
		t.Fatalf("node printed %q: %v", stdout, err)
	}
	trs := docRows(t, filepath.Join(out, "proxy-000001.parquet"))
	if len(trs) != 1 || trs[0].ID != "node-1" || trs[0].GroupID != "node" || trs[0].Reward == nil || *trs[0].Reward != reward ||
		trs[0].Metrics["turns"] != 1 || len(trs[0].Messages) != 2 {
		t.Fatalf("recorded %+v", trs)
	}
	docCheckTurns(t, trs[0])
}

// The README links the three pages and the helper, and every relative
// link of the pages and the README names a file that exists.
func TestDocLinks(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(docs/stdio-env.md)", "(docs/mcp-env.md)", "(docs/proxy.md)", "(python/hone_proxy.py)"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("README.md does not link %s", want)
		}
	}
	pages, _ := filepath.Glob("../../docs/*.md")
	if len(pages) < 3 {
		t.Fatalf("pages %v", pages)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)[^)]*\)`)
	for _, page := range append(pages, "../../README.md") {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(m[1], "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), m[1])); err != nil {
				t.Errorf("%s links %s: %v", page, m[1], err)
			}
		}
	}
}

// The pages with commands say they run from the repository root after
// `make build`, which puts the binaries in bin/, not on PATH: a command line
// of a sh block that starts a hone binary names it as bin/hone-…
// (docs/mcp-env.md once showed `hone-collect scenarios …`, and docs/art.md's
// two ART recipes `hone-train grpo …`: "command not found" as written).
func TestDocPagesRunBuiltBinaries(t *testing.T) {
	bare := regexp.MustCompile(`^\s*(?:[A-Z_]+=\S*\s+)*hone-(collect|score|serve|train|inspect)\b`)
	for _, page := range []string{"stdio-env.md", "mcp-env.md", "proxy.md", "art.md", "trl.md"} {
		b, err := os.ReadFile(filepath.Join("../../docs", page))
		if err != nil {
			t.Fatal(err)
		}
		inSh, seen := false, 0
		for i, ln := range strings.Split(string(b), "\n") {
			if info, ok := strings.CutPrefix(ln, "```"); ok {
				inSh = !inSh && strings.HasPrefix(info, "sh")
				continue
			}
			if !inSh {
				continue
			}
			if strings.Contains(ln, "bin/hone-") {
				seen++
			}
			if bare.MatchString(ln) {
				t.Errorf("docs/%s:%d: %q runs a hone binary from PATH; after `make build` it is bin/hone-…", page, i+1, strings.TrimSpace(ln))
			}
		}
		if seen == 0 {
			t.Errorf("docs/%s: no sh block runs bin/hone-…: the scan no longer finds the page's commands", page)
		}
	}
}

// python/proxy_example.py, the agent docs/proxy.md runs, given a model the
// server does not have: it once died in a urllib traceback ending "HTTP
// Error 404: Not Found", the server's answer (the model it does not have)
// unread. It now exits 1 with one line quoting that answer.
func TestProxyExampleQuotesServerError(t *testing.T) {
	dir, path := docDir(t, "curl")
	docInitTiny(t, dir)
	b := docBlock{lang: "sh", line: 0, code: `bin/hone-serve --model out/tiny --port 8000 &
until curl -sf http://127.0.0.1:8000/health >/dev/null; do sleep 0.2; done
if OPENAI_BASE_URL=http://127.0.0.1:8000/v1 python3 python/proxy_example.py --model tinyx --group q1 2>out/err; then echo "exit 0"; fi
cat out/err
kill %1; wait
`}
	stdout := docRunBlock(t, dir, path, docFreePorts(t, b, "8000"))
	if strings.Contains(stdout, "exit 0") || strings.Contains(stdout, "Traceback") ||
		!strings.Contains(stdout, "HTTP 404") || !strings.Contains(stdout, `the model "tinyx" does not exist`) {
		t.Fatalf("the example agent against an unknown model printed:\n%s", stdout)
	}
}
