package k8s

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/gobuild"
	"github.com/hone-rl/hone/internal/waitfor"
)

// bin is the folder the hone binaries are built into, each on first use
// (binaries), so that tests needing none, like the manifest checks, run
// in seconds.
var bin string

// built remembers which binaries are in bin, and each build's error.
var built struct {
	sync.Mutex
	err map[string]error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hone-k8s-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaries builds the named hone commands into bin, those not built yet
// in one go build, and fails the test if any does not build.
func binaries(t *testing.T, names ...string) {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.err == nil {
		built.err = map[string]error{}
	}
	var todo []string
	for _, n := range names {
		if _, ok := built.err[n]; !ok {
			todo = append(todo, n)
		}
	}
	if len(todo) > 0 {
		var pkgs []string
		for _, n := range todo {
			pkgs = append(pkgs, "../../cmd/"+n)
		}
		err := gobuild.Commands(context.Background(), bin, pkgs...)
		for _, n := range todo {
			built.err[n] = err
		}
	}
	for _, n := range names {
		if err := built.err[n]; err != nil {
			t.Fatal(err)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// store is where a round test keeps everything: top is round.yaml's
// store parameter, query its query parameter, and url names a key in it
// as a hone command takes it.
type store struct {
	top, query string
	url        func(key string) string
}

// A whole round of round.yaml, its steps' own commands, against an S3
// server speaking the real protocol: two collect shards writing to S3, two
// score shards S3→S3 with the judge cache in S3, GRPO reading S3 and
// publishing the step to S3, and the wait step seeing hone-serve, which
// follows the adapters in S3, serve that step. Collect plays the guess
// environment's scripted policy (collect-flags): the tiny random model's
// own answers all score alike, which leaves GRPO no advantage to learn
// from; sampling from hone-serve is covered by hone-collect's tests.
func TestRoundOverFakeS3(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	testRound(t, store{top: "s3://hone", query: "?" + s3.Query(), url: func(key string) string { return s3.URL("hone", key) }}, "")
}

// The same round with the store a local folder named by file:// URLs:
// every path the steps take (collect's -o, score's input, -o and
// --judge-cache, GRPO's --watch-dir and --out, hone-serve's --adapters)
// is a file:// URL, and what they write is plain files in that folder,
// with no temporary file left behind and no "file:" folder made in the
// steps' working directory.
func TestRoundOverFileURLs(t *testing.T) {
	root := t.TempDir()
	top := (&url.URL{Scheme: "file", Path: filepath.ToSlash(root)}).String()
	testRound(t, store{top: top, url: func(key string) string { return top + "/" + key }}, "")
	if _, err := os.Stat("file:"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a step made a folder named after the URL's scheme: %v", err)
	}
	for _, dir := range []string{"rounds/1/collected", "rounds/1/scored", "adapters/rl", "adapters/rl/step-000001", "scored", "judge-cache"} {
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			if dir == "judge-cache" && errors.Is(err, fs.ErrNotExist) {
				continue // the formula reward asks no judge
			}
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp") {
				t.Errorf("%s: %s left behind", dir, e.Name())
			}
		}
	}
	for _, f := range []string{"rounds/1/collected/part-00001-of-00002.parquet", "rounds/1/scored/part-00001-of-00002.parquet", "adapters/rl/latest"} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err != nil {
			t.Error(err)
		}
	}
}

// The round with hone-serve asking for a key, as serve.yaml's does (it
// takes HONE_API_KEY from the hone-api-keys Secret, which also holds the
// judge's OPENAI_API_KEY, another key): collect samples from hone-serve,
// and the wait step asks its /v1/models, each with hone-serve's key.
func TestRoundWithServeKey(t *testing.T) {
	root := t.TempDir()
	top := (&url.URL{Scheme: "file", Path: filepath.ToSlash(root)}).String()
	testRound(t, store{top: top, url: func(key string) string { return top + "/" + key }}, "serve-key")
}

// testRound runs round.yaml once, then cron.yaml's step twice, against st.
// With serveKey, hone-serve and the steps have it as HONE_API_KEY, the
// steps another OPENAI_API_KEY, and collect samples from hone-serve
// instead of playing the scripted policy (GRPO then has nothing to learn,
// but saves the step all the same).
func testRound(t *testing.T, st store, serveKey string) {
	binaries(t, "hone-collect", "hone-score", "hone-train", "hone-serve")
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	if out, err := exec.Command(filepath.Join(bin, "hone-train"), "init-model", "--family", "qwen3", "--hidden", "64",
		"--layers", "2", "--heads", "4", "--init-std", "0.3", "-o", model).CombinedOutput(); err != nil {
		t.Fatalf("init-model: %v\n%s", err, out)
	}
	port := freePort(t)
	serveURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var serveLog bytes.Buffer
	args := []string{"--model", model, "--served-model-name", "base", "--adapters", st.url("adapters"),
		"--poll-interval", "100ms", "--port", fmt.Sprint(port), "--threads", "1", "--max-tokens", "8"}
	if fileset.IsURL(st.top) {
		args = append(args, "--adapters-cache", filepath.Join(dir, "serve-cache"))
	}
	serve := exec.CommandContext(ctx, filepath.Join(bin, "hone-serve"), args...)
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	collectFlags := "--policy scripted:mix --concurrency 4"
	if serveKey != "" {
		serve.Env = append(os.Environ(), "HONE_API_KEY="+serveKey)
		env = append(env, "HONE_API_KEY="+serveKey, "OPENAI_API_KEY=the-judges-key")
		collectFlags = "--temperature 1 --concurrency 4"
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		serve.Wait()
		close(exited)
	}()
	defer func() {
		cancel()
		<-exited
	}()
	gone := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	healthy := func() bool {
		if gone() {
			return true // stop waiting: it is not coming up
		}
		resp, err := http.Get(serveURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !waitfor.Within(30*time.Second, healthy) || gone() {
		why := "exited"
		if !gone() {
			why = "was not healthy in 30s"
			cancel()
			<-exited
		}
		t.Fatalf("hone-serve %s:\n%s", why, serveLog.String())
	}

	r, err := Load("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rctx, rcancel := context.WithTimeout(ctx, 4*time.Minute)
	defer rcancel()
	err = r.Run(rctx, Options{
		Params: map[string]string{
			"round": "1", "store": st.top, "query": st.query,
			"shards": "2", "groups": "6", "group-size": "4",
			"serve-url": serveURL, "model-dir": model, "reward": "formula:env - 0.25*out_of_range",
			"score-flags":   "--scorer final=formula:2*formula",
			"collect-flags": collectFlags,
			"train-flags":   "--steps 1 --rank 2 --lr 1e-2 --threads 1 --allow-no-logprobs",
			"train-device":  "cpu",
		},
		Env: env,
		Log: &log,
	})
	if err != nil {
		t.Fatalf("round: %v\n%s\nhone-serve:\n%s", err, log.String(), serveLog.String())
	}
	for _, folder := range []string{"rounds/1/collected", "rounds/1/scored"} {
		names, err := fileset.List(context.Background(), st.url(folder), ".parquet")
		if err != nil || len(names) != 2 || !strings.Contains(names[1], "part-00001-of-00002.parquet") {
			t.Errorf("%s holds %q, %v; want the two shards' parts", folder, names, err)
		}
	}
	// score-flags reach hone-score: its second scorer is in the chain.
	b, err := fileset.ReadFile(context.Background(), st.url("rounds/1/scored/part-00000-of-00002.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trajectory.NewReader("part 0", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if chain := tr.Files()[0].Metadata["hone.score.chain"]; chain != "formula:env - 0.25*out_of_range | final=formula:2*formula" {
		t.Errorf("scored with the chain %q, want reward's scorer and then score-flags'", chain)
	}
	tr.Close()
	b, err = fileset.ReadFile(context.Background(), st.url("adapters/rl/latest"))
	if err != nil || strings.TrimSpace(string(b)) != "step-000001" {
		t.Errorf("published latest %q, %v", b, err)
	}
	if !strings.Contains(log.String(), "== wait-serve") {
		t.Errorf("the wait step did not run:\n%s", log.String())
	}
	if serveKey != "" {
		checkPolicyModel(t, r, st, env, serveURL)
	}

	// cron.yaml's step on the same store: the round's scored parts land
	// in STORE/scored/; the first call trains step 1 of run "cron" and
	// publishes it, the second finds nothing new.
	parts, err := fileset.List(context.Background(), st.url("rounds/1/scored"), ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		b, err := fileset.ReadFile(context.Background(), p)
		if err == nil {
			err = fileset.WriteFile(context.Background(), st.url(fmt.Sprintf("scored/round-1-%d.parquet", i)), b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cron, err := Load("cron.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for call := range 2 {
		log.Reset()
		err := cron.Run(rctx, Options{
			Params: map[string]string{"store": st.top, "query": st.query, "run": "cron", "model-dir": model,
				"train-flags": "--rank 2 --threads 1 --allow-no-logprobs", "train-device": "cpu"},
			Env: env,
			Log: &log,
		})
		if err != nil {
			t.Fatalf("cron call %d: %v\n%s", call+1, err, log.String())
		}
		b, err := fileset.ReadFile(context.Background(), st.url("adapters/cron/latest"))
		if err != nil || strings.TrimSpace(string(b)) != "step-000001" {
			t.Errorf("after cron call %d the published latest is %q, %v\n%s", call+1, b, err, log.String())
		}
		if call == 1 && !strings.Contains(log.String(), "nothing new") {
			t.Errorf("the second cron call did not find nothing new:\n%s", log.String())
		}
	}
}

// Load rejects what Run cannot do faithfully: a parameter the template
// does not have, a reference it cannot fill.
func TestRunRefusesUnknowns(t *testing.T) {
	r, err := Load("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background(), Options{Params: map[string]string{"shard-count": "2"}}); err == nil || !strings.Contains(err.Error(), "shard-count") {
		t.Errorf("an unknown parameter: %v", err)
	}
	if _, err := fill("a {{workflow.parameters.nope}}", map[string]string{}, nil, ""); err == nil {
		t.Error("an unknown reference was filled")
	}
	if got, err := fill("{{item}}/{{workflow.parameters.n}} {{inputs.parameters.s}}", map[string]string{"n": "4"}, map[string]string{"s": "x"}, "3"); err != nil || got != "3/4 x" {
		t.Errorf("fill: %q %v", got, err)
	}
}

// Load refuses a field it would pass over although Argo acts on it: a
// task's when, depends, continueOn or withItems, an env variable taken
// from a Secret (valueFrom: Run sets only plain values), an input's enum.
// The manifests as they are load.
func TestLoadRefusesFieldsItDoesNotRun(t *testing.T) {
	b, err := os.ReadFile("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ field, from, to string }{
		{"when", "            template: train\n", "            template: train\n            when: \"{{workflow.parameters.round}} > 1\"\n"},
		{"depends", "            dependencies: [train]\n", "            depends: train\n"},
		{"continueOn", "            dependencies: [train]\n", "            dependencies: [train]\n            continueOn:\n              failed: true\n"},
		{"withItems", "            dependencies: [score]\n", "            dependencies: [score]\n            withItems: [a, b]\n"},
		{"valueFrom", "          - name: HONE_TRAIN_DEVICE\n            value: \"{{workflow.parameters.train-device}}\"\n",
			"          - name: HONE_TRAIN_DEVICE\n            valueFrom:\n              secretKeyRef: {name: hone-store, key: AWS_REGION}\n"},
		{"enum", "      inputs:\n        parameters:\n          - name: shard\n", "      inputs:\n        parameters:\n          - name: shard\n            enum: [\"0\"]\n"},
	} {
		if !strings.Contains(string(b), tc.from) {
			t.Fatalf("round.yaml has no %q to change", tc.from)
		}
		path := filepath.Join(dir, tc.field+".yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), tc.from, tc.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `"`+tc.field+`"`) {
			t.Errorf("a template with %s: Load gave %v, want an error naming it", tc.field, err)
		}
	}
	for _, f := range []string{"round.yaml", "cron.yaml"} {
		if _, err := Load(f); err != nil {
			t.Error(err)
		}
	}
}

// TestRunRefusesTwoTasksOfOneName: a DAG with two tasks of one name, which
// Argo refuses, is refused before any step runs (the second task silently
// replaced the first).
func TestRunRefusesTwoTasksOfOneName(t *testing.T) {
	b, err := os.ReadFile("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const from = "          - name: score\n"
	if !strings.Contains(string(b), from) {
		t.Fatalf("round.yaml has no %q to change", from)
	}
	path := filepath.Join(t.TempDir(), "dup.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), from, "          - name: collect\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background(), Options{Env: []string{"PATH=/nonexistent"}}); err == nil || !strings.Contains(err.Error(), `two tasks are named "collect"`) {
		t.Errorf("Run: %v, want an error naming the two tasks", err)
	}
}

// checkPolicyModel checks the model round.yaml's collect step samples from
// with the default policy-model, after round 1 ran: round 1 sampled the
// base model (the run had no step, and asking hone-serve for the run's
// name was a 404 that failed collect and the round), and round 2's
// collect step samples the run's newest step, rl@1.
func checkPolicyModel(t *testing.T, r *Round, st store, env []string, serveURL string) {
	t.Helper()
	if got := sampledModels(t, st.url("rounds/1/collected/part-00000-of-00002.parquet")); len(got) != 1 || !got["base"] {
		t.Errorf("round 1 sampled %v, want only the base model", got)
	}
	spec := r.spec()
	wf := map[string]string{}
	for _, p := range spec.Arguments.Parameters {
		wf[p.Name] = p.Value
	}
	wf["round"], wf["store"], wf["query"], wf["serve-url"] = "2", st.top, st.query, serveURL
	wf["groups"], wf["group-size"], wf["collect-flags"] = "2", "2", "--temperature 1"
	var argv, vars []string
	for _, tp := range spec.Templates {
		if tp.Name == "collect" && tp.Container != nil && len(tp.Container.Args) == 1 {
			var err error
			if argv, vars, err = tp.step(wf, map[string]string{"shard": "0"}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if argv == nil {
		t.Fatal("round.yaml has no collect template with one sh -c script")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = stepEnv(env, vars)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("round 2's collect step: %v\n%s", err, out)
	}
	if got := sampledModels(t, st.url("rounds/2/collected/part-00000-of-00004.parquet")); len(got) != 2 || !got["rl"] || !got["rl@1"] {
		t.Errorf("round 2 sampled %v, want only the run's newest step rl, rl@1", got)
	}
}

// sampledModels is the set of model and adapter names that answered the
// episodes of the trajectory file at url, as hone-serve named them.
func sampledModels(t *testing.T, url string) map[string]bool {
	t.Helper()
	b, err := fileset.ReadFile(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trajectory.NewReader(url, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	models := map[string]bool{}
	for {
		g, err := tr.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return models
		}
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		for _, tj := range g.Trajectories {
			models[tj.Model], models[tj.Adapter] = true, true
		}
	}
}

// Run sets a container's env, each value filled as the args are (the
// workflow's parameters, the task's inputs, the item), over the steps'
// environment, as Kubernetes sets a container's env over what envFrom
// gives: round.yaml's steps read their parameters so. Load refused any
// env before.
func TestRunSetsContainerEnv(t *testing.T) {
	dir := t.TempDir()
	doc := `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: env
spec:
  entrypoint: main
  arguments:
    parameters:
      - name: x
        value: default
  templates:
    - name: main
      dag:
        tasks:
          - name: step
            template: step
            arguments:
              parameters:
                - name: shard
                  value: "{{item}}"
            withSequence:
              count: "2"
    - name: step
      inputs:
        parameters:
          - name: shard
      container:
        command: [sh, -c]
        args: ['printf "%s|%s" "$HONE_X" "$HONE_KEPT" >"$OUT/$HONE_SHARD"']
        env:
          - name: HONE_X
            value: "{{workflow.parameters.x}}"
          - name: HONE_SHARD
            value: "{{inputs.parameters.shard}}"
          - name: HONE_KEPT
            value: from the template
`
	path := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	value := "a b'\"$(c)\n"
	env := []string{"PATH=" + os.Getenv("PATH"), "OUT=" + dir, "HONE_KEPT=from the process"}
	if err := r.Run(context.Background(), Options{Params: map[string]string{"x": value}, Env: env}); err != nil {
		t.Fatal(err)
	}
	for _, shard := range []string{"0", "1"} {
		b, err := os.ReadFile(filepath.Join(dir, shard))
		if want := value + "|from the template"; err != nil || string(b) != want {
			t.Errorf("shard %s's step saw %q, %v; want %q", shard, b, err, want)
		}
	}
}
