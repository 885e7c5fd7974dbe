package k8s

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/yaml"
)

// schemaLocation is where kubeconform finds the vendored schemas
// (testdata/schemas/gen.py writes them from Argo's own JSON schema and
// from Kubernetes' OpenAPI spec); no schema is fetched over the network,
// and a kind with none is an error, not a skip.
const schemaLocation = "testdata/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json"

func validate(t *testing.T, name string, r io.Reader) []validator.Result {
	t.Helper()
	v, err := validator.New([]string{schemaLocation}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return v.Validate(name, io.NopCloser(r))
}

// Every document of every manifest validates, strictly: the Argo ones
// against Argo v3.7.9's schemas, the others against Kubernetes v1.34's.
func TestManifestsValidate(t *testing.T) {
	for name, want := range map[string][]string{
		"round.yaml":   {"WorkflowTemplate"},
		"cron.yaml":    {"CronWorkflow"},
		"serve.yaml":   {"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding"},
		"secrets.yaml": {"Secret", "Secret"},
	} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		res := validate(t, name, f)
		f.Close()
		var kinds []string
		for _, r := range res {
			switch r.Status {
			case validator.Valid:
				sig, err := r.Resource.Signature()
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, sig.Kind)
			case validator.Empty:
			default:
				t.Errorf("%s: %v %v %v", name, r.Status, r.Err, r.ValidationErrors)
			}
		}
		if !slices.Equal(kinds, want) {
			t.Errorf("%s: valid resources %q, want %q", name, kinds, want)
		}
	}
}

// invalid says whether any document of the manifest text fails.
func invalid(t *testing.T, name, text string) bool {
	t.Helper()
	for _, r := range validate(t, name, strings.NewReader(text)) {
		if r.Status == validator.Invalid {
			return true
		}
	}
	return false
}

// A misspelt field, a wrong type and a missing required field each fail:
// the schemas are strict, so the test above can fail.
func TestManifestTyposFail(t *testing.T) {
	for _, tc := range []struct{ file, from, to string }{
		{"round.yaml", "withSequence:", "withSequnce:"},
		{"round.yaml", "command: [sh, -c]", "comand: [sh, -c]"},
		{"round.yaml", "entrypoint: round", "entrypoint: [round]"},
		{"round.yaml", "          - name: collect\n            template: collect", "          - template: collect"},
		{"round.yaml", "    secondsAfterFailure:", "    secondsAfterFail:"},
		{"round.yaml", "strategy: OnPodSuccess", "strategy: [OnPodSuccess]"},
		{"cron.yaml", "concurrencyPolicy: Forbid", "concurencyPolicy: Forbid"},
		// the Deployment: a misspelt container field, a probe's, the
		// pod's; a wrong type; a container with no name
		{"serve.yaml", "          readinessProbe:", "          readynessProbe:"},
		{"serve.yaml", "              path: /health\n              port: http\n            periodSeconds: 5", "              path: /health\n              prot: http\n            periodSeconds: 5"},
		{"serve.yaml", "      serviceAccountName: hone", "      serviceAcountName: hone"},
		{"serve.yaml", "  replicas: 1", "  replicas: one"},
		{"serve.yaml", "memory: 36Gi", "memory: [36Gi]"},
		{"serve.yaml", "        - name: hone-serve\n          image:", "        - image:"},
		// the Service and the ServiceAccount
		{"serve.yaml", "      targetPort: http", "      targetport: http"},
		{"serve.yaml", "kind: ServiceAccount\nmetadata:\n  name: hone", "kind: ServiceAccount\nmetadata:\n  nmae: hone"},
		// the Role and the RoleBinding: a misspelt rule field, a wrong
		// type, a roleRef with no name
		{"serve.yaml", "    verbs: [create, patch]", "    verb: [create, patch]"},
		{"serve.yaml", "resources: [workflowtaskresults]", "resources: workflowtaskresults"},
		{"serve.yaml", "  kind: Role\n  name: hone-executor", "  kind: Role\n  nmae: hone-executor"},
		// a Secret
		{"secrets.yaml", "stringData:\n  AWS_REGION", "stringdata:\n  AWS_REGION"},
		{"secrets.yaml", "type: Opaque\nstringData:\n  OPENAI", "type: [Opaque]\nstringData:\n  OPENAI"},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.from) {
			t.Fatalf("%s has no %q to change", tc.file, tc.from)
		}
		if !invalid(t, tc.file, strings.Replace(string(b), tc.from, tc.to, 1)) {
			t.Errorf("%s: %q → %q still validates", tc.file, tc.from, tc.to)
		}
	}
}

// Kubernetes takes a quantity as a string or a number and a port as a
// name or a number: the schemas do too (gen.py types them so).
func TestManifestNumbersValidate(t *testing.T) {
	b, err := os.ReadFile("serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to string }{
		{`cpu: "4"`, "cpu: 4"},
		{"memory: 36Gi", "memory: 38654705664"},
		{"      targetPort: http", "      targetPort: 8000"},
		{"              port: http\n            periodSeconds: 5", "              port: 8000\n            periodSeconds: 5"},
	} {
		if !strings.Contains(string(b), tc.from) {
			t.Fatalf("serve.yaml has no %q to change", tc.from)
		}
		for _, r := range validate(t, "serve.yaml", strings.NewReader(strings.Replace(string(b), tc.from, tc.to, 1))) {
			if r.Status != validator.Valid {
				t.Errorf("%q → %q: %v %v %v", tc.from, tc.to, r.Status, r.Err, r.ValidationErrors)
			}
		}
	}
}

// A kind with no vendored schema is an error, not a pass: a manifest
// that adds one must vendor its schema too (gen.py).
func TestManifestUnknownKindFails(t *testing.T) {
	res := validate(t, "x.yaml", strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n"))
	if len(res) != 1 || res[0].Status != validator.Error || res[0].Err == nil {
		t.Fatalf("a ConfigMap with no schema: %+v", res)
	}
}

// The vendored schemas are what gen.py writes: it runs again, into a
// temporary folder, from the modules it names (fetched through the Go
// module proxy, or the module cache), and every file must come out the
// same, with no vendored schema it does not write. It needs python3;
// without it the test skips, except under CI, where it fails.
func TestSchemasReproducible(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("needs python3")
		}
		t.Skip("needs python3")
	}
	gen, err := filepath.Abs("testdata/schemas/gen.py")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(py, gen, out)
	cmd.Dir = filepath.Dir(gen)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.py: %v\n%s", err, b)
	}
	vendored, err := filepath.Glob("testdata/schemas/*.json")
	if err != nil {
		t.Fatal(err)
	}
	written, err := filepath.Glob(filepath.Join(out, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(vendored) != len(written) {
		t.Errorf("%d vendored schemas, gen.py writes %d", len(vendored), len(written))
	}
	for _, v := range vendored {
		want, err := os.ReadFile(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, filepath.Base(v)))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what gen.py writes now: rerun it", v)
		}
	}
}

// serve.yaml's Deployment runs hone-serve with flags hone-serve has: the
// binary parses them all before it answers --help, so an unknown or
// misspelt one fails. Its probes ask /health, which hone-serve answers
// (TestRoundOverFakeS3 waits on it). TestManifestsValidate checks the
// rest of the file against Kubernetes' schemas.
func TestServeManifestFlags(t *testing.T) {
	dep := readServeDeployment(t)
	if dep.Kind != "Deployment" || len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("serve.yaml's first document: kind %q, %d containers", dep.Kind, len(dep.Spec.Template.Spec.Containers))
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if len(c.Args) < 2 || c.Args[0] != "hone-serve" || c.ReadinessProbe.HTTPGet.Path != "/health" {
		t.Fatalf("container args %q, readiness %q", c.Args, c.ReadinessProbe.HTTPGet.Path)
	}
	binaries(t, "hone-serve")
	cmd := exec.Command(filepath.Join(bin, "hone-serve"), append(c.Args[1:], "--help")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("hone-serve %q --help: %v\n%s", c.Args[1:], err, out)
	}
	bad := exec.Command(filepath.Join(bin, "hone-serve"), "--adapter-cache=/x", "--help")
	if err := bad.Run(); err == nil {
		t.Error("a misspelt flag passed: the check cannot fail")
	}
}

// Every step of round.yaml and cron.yaml that runs a hone command passes
// it flags it has, with values it takes, as the templates' own parameter
// defaults fill them (the round tests run the steps with other values):
// the step's script with --help appended must exit 0, which the binaries
// do only after parsing every flag before it. A misspelt flag fails. A
// step whose pod asks for a GPU runs on it (--device cuda; it trained on
// the node's CPU before).
func TestWorkflowStepFlags(t *testing.T) {
	// A script that runs a hone command: after any VAR=value, the first
	// word of the script or of a command after a ';' (collect's picks
	// the model first).
	honeStep := regexp.MustCompile(`(?:^|;\s*)(?:[A-Z_]+=\S+\s+)*hone-[a-z]+\s`)
	onGPU := regexp.MustCompile(`\s--device[ =]cuda(\s|$)`)
	binaries(t, "hone-collect", "hone-score", "hone-train")
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	help := func(script string, vars []string) ([]byte, error) {
		cmd := exec.Command("sh", "-c", script+" --help")
		cmd.Env = stepEnv(env, vars)
		return cmd.CombinedOutput()
	}
	for file, want := range map[string]int{"round.yaml": 3, "cron.yaml": 1} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		spec := r.spec()
		wf := map[string]string{}
		for _, p := range spec.Arguments.Parameters {
			wf[p.Name] = p.Value
		}
		checked := 0
		for _, tp := range spec.Templates {
			if tp.Container == nil || !slices.Equal(tp.Container.Command, []string{"sh", "-c"}) || len(tp.Container.Args) != 1 {
				continue
			}
			in := map[string]string{}
			for _, p := range tp.Inputs.Parameters {
				in[p.Name] = "0" // the shard parameters: the first shard
			}
			argv, vars, err := tp.step(wf, in, "0")
			if err != nil {
				t.Fatalf("%s: template %s: %v", file, tp.Name, err)
			}
			script := argv[2]
			if !honeStep.MatchString(script) {
				continue // the wait step: curl
			}
			checked++
			if bytes.Contains(tp.Container.Resources, []byte("nvidia.com/gpu")) && !onGPU.MatchString(expandVars(script, vars)) {
				t.Errorf("%s: template %s asks for a GPU, and its hone command does not run on it (no --device cuda): %q %q", file, tp.Name, vars, script)
			}
			if out, err := help(script, vars); err != nil {
				t.Errorf("%s: template %s: %q --help: %v\n%s", file, tp.Name, script, err, out)
			}
		}
		if checked != want {
			t.Errorf("%s: %d steps run a hone command, want %d", file, checked, want)
		}
	}
	if _, err := help("hone-train grpo --model m --run r --watch-dirr s3://x/", nil); err == nil {
		t.Error("a misspelt flag passed: the check cannot fail")
	}
}

// expandVars is script with each "$NAME" of vars (NAME=VALUE, a step's
// container variables) replaced by its value, for a check that reads
// the step's command line as the pod runs it.
func expandVars(script string, vars []string) string {
	var pairs []string
	for _, v := range vars {
		name, value, _ := strings.Cut(v, "=")
		pairs = append(pairs, `"$`+name+`"`, value)
	}
	return strings.NewReplacer(pairs...).Replace(script)
}

// retryDecision says whether Argo (v3.5 on) retries a step of a template
// whose retryStrategy is raw, after an attempt that exited with code (a
// string, as Argo keeps it; "-1" when the pod left none) in phase: the
// policy (Always unless named; with an expression and no policy, Argo
// 3.5+ leaves the decision to the expression) and the expression,
// evaluated as Argo's controller does (expr over the lastRetry scope).
func retryDecision(raw []byte, code, phase string) (bool, error) {
	var rs struct {
		Limit       any    `json:"limit"`
		RetryPolicy string `json:"retryPolicy"`
		Expression  string `json:"expression"`
	}
	if err := yaml.Unmarshal(raw, &rs); err != nil {
		return false, fmt.Errorf("retryStrategy: %w", err)
	}
	policy := rs.RetryPolicy
	if policy == "" {
		policy = "OnFailure"
		if rs.Expression != "" {
			policy = "Always"
		}
	}
	switch {
	case policy == "OnFailure" && phase != "Failed", policy == "OnError" && phase != "Error":
		return false, nil
	case rs.Expression == "":
		return true, nil
	}
	env := map[string]any{
		"retries":   "0",
		"lastRetry": map[string]any{"exitCode": code, "status": phase, "duration": "12", "message": ""},
		"asInt":     func(s string) (int, error) { return strconv.Atoi(s) },
	}
	prog, err := expr.Compile(rs.Expression, expr.Env(env), expr.AsBool())
	if err != nil {
		return false, fmt.Errorf("retryStrategy.expression %q: %w", rs.Expression, err)
	}
	out, err := expr.Run(prog, env)
	if err != nil {
		return false, fmt.Errorf("retryStrategy.expression %q with exit code %s: %w", rs.Expression, code, err)
	}
	return out.(bool), nil
}

// A step that exits 2 (bad flags, arguments or input data: cli.ExitUsage)
// fails the same way every time, so Argo must not run it again; a failure
// during the run (1), a stop (130: the pod's node drained), a kill (137:
// out of memory) and a pod lost with no exit code (-1) may pass on a
// second try and are retried. Each template of round.yaml and cron.yaml
// with a retryStrategy is checked as Argo's controller evaluates it.
func TestRetryStrategySkipsUsageErrors(t *testing.T) {
	cases := []struct {
		code, phase string
		retry       bool
	}{
		{"2", "Failed", false},
		{"1", "Failed", true},
		{"130", "Failed", true},
		{"137", "Failed", true},
		{"-1", "Error", true},
	}
	retried := retriedTemplates(t)
	if len(retried) == 0 {
		t.Error("no template has a retryStrategy")
	}
	for _, rt := range retried {
		for _, c := range cases {
			got, err := retryDecision(rt.tp.RetryStrategy, c.code, c.phase)
			if err != nil {
				t.Errorf("%s: template %s: %v", rt.file, rt.tp.Name, err)
				break
			}
			if got != c.retry {
				t.Errorf("%s: template %s: after exit %s (%s) Argo retries: %v, want %v", rt.file, rt.tp.Name, c.code, c.phase, got, c.retry)
			}
		}
	}
	if retry, err := retryDecision([]byte(`limit: "2"`), "2", "Failed"); err != nil || !retry {
		t.Errorf("a retryStrategy of a limit alone: retry %v, %v; the check cannot fail", retry, err)
	}
}

// TestRetryStrategyBacksOff: each retried step waits before its retry.
// Without a backoff Argo retried at once, so a step that failed on a
// passing state (hone-collect's model 404 before hone-serve has pulled
// the round's step, a judge restarting) failed its retries within
// seconds as well. No backoff sets maxDuration: Argo reads it as a
// deadline from the step's first attempt's start, not as a limit on one
// wait (that is cap), so a step that failed after running longer (a
// collect, score or train of more than 10m) was not retried at all, and
// a retry was killed when the deadline came.
func TestRetryStrategyBacksOff(t *testing.T) {
	for _, rt := range retriedTemplates(t) {
		var rs struct {
			Backoff struct {
				Duration    string `json:"duration"`
				MaxDuration string `json:"maxDuration"`
			} `json:"backoff"`
		}
		if err := yaml.Unmarshal(rt.tp.RetryStrategy, &rs); err != nil {
			t.Fatalf("%s: template %s: %v", rt.file, rt.tp.Name, err)
		}
		d, err := time.ParseDuration(rs.Backoff.Duration)
		if err != nil || d < 10*time.Second {
			t.Errorf("%s: template %s: backoff duration %q (%v), want at least 10s", rt.file, rt.tp.Name, rs.Backoff.Duration, err)
		}
		if rs.Backoff.MaxDuration != "" {
			t.Errorf("%s: template %s: backoff maxDuration %q: Argo stops retrying, and kills a retry, that long after the first attempt started", rt.file, rt.tp.Name, rs.Backoff.MaxDuration)
		}
	}
}

// serve.yaml's pod is given the time hone-serve's stop takes: on SIGTERM
// it drains the requests in flight for --drain-timeout (the manifest's, or
// the binary's default), gives a model step stuck in the backend the
// grace its --help names (engine.DefaultStopGrace; pipelines may not
// import serve), and its connections up to 5s to close (serve's drain). Kubernetes kills the container with
// SIGKILL terminationGracePeriodSeconds (30 by default) after SIGTERM, so
// a shorter period cuts the requests the drain was letting finish.
func TestServeGracePeriodCoversDrain(t *testing.T) {
	dep := readServeDeployment(t)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("serve.yaml's Deployment: %d containers, want 1", len(pod.Containers))
	}
	grace := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	binaries(t, "hone-serve")
	help, err := exec.Command(filepath.Join(bin, "hone-serve"), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("hone-serve --help: %v\n%s", err, help)
	}
	m := regexp.MustCompile(`--drain-timeout duration .* given up ([0-9a-z.]+) after the timeout \(default ([0-9a-z.]+)\)`).FindSubmatch(help)
	if m == nil {
		t.Fatalf("hone-serve --help gives no stuck-step grace or default for --drain-timeout:\n%s", help)
	}
	stuck, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	drain, err := time.ParseDuration(string(m[2]))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range pod.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--drain-timeout="); ok {
			if drain, err = time.ParseDuration(v); err != nil {
				t.Fatalf("serve.yaml: %s: %v", a, err)
			}
		}
	}
	if need := drain + stuck + 5*time.Second; grace < need {
		t.Errorf("serve.yaml: the pod is killed %v after SIGTERM, and hone-serve's stop takes up to %v (--drain-timeout %v, a stuck step %v, connections 5s)",
			grace, need, drain, stuck)
	}
}

// The train steps of round.yaml and cron.yaml pass the model folder as
// one word: a folder whose name holds a space (runlocal's -p
// model-dir="$PWD/…" in such a folder) reaches hone-train whole, which
// then names it. Unquoted, sh split it and hone-train refused a stray
// argument as an input file given with --watch-dir.
func TestTrainStepModelDirWithSpace(t *testing.T) {
	binaries(t, "hone-train")
	dir := filepath.Join(t.TempDir(), "a folder")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "base model")
	top := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for file, tmpl := range map[string]string{"round.yaml": "train", "cron.yaml": "train"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		spec := r.spec()
		wf := map[string]string{}
		for _, p := range spec.Arguments.Parameters {
			wf[p.Name] = p.Value
		}
		wf["model-dir"], wf["store"], wf["train-device"] = model, top, "cpu"
		var argv, vars []string
		for _, tp := range spec.Templates {
			if tp.Name == tmpl && tp.Container != nil && len(tp.Container.Args) == 1 {
				if argv, vars, err = tp.step(wf, nil, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		if argv == nil {
			t.Fatalf("%s has no template %s with one sh -c script", file, tmpl)
		}
		script := argv[2]
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = stepEnv(env, vars)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "model folder "+model+":") {
			t.Errorf("%s: %q: exit %d (%v), want 2 naming the model folder %q:\n%s", file, script, code, err, model, out)
		}
	}
}

// Two trainers of one run must not overlap (docs/cluster.md), and on the
// cluster hone-train's own lock cannot keep them apart: each pod pulls the
// run into a cache of its own. So every step of round.yaml and cron.yaml
// that runs hone-train holds an Argo mutex named after the run, one name
// for both files: two rounds submitted together, or the cron workflow
// training the round's run, wait for each other. concurrencyPolicy
// Forbid only keeps the cron workflow from overlapping itself.
func TestTrainStepsHoldTheRunsMutex(t *testing.T) {
	names := map[string]string{}
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		spec := r.spec()
		wf := map[string]string{}
		for _, p := range spec.Arguments.Parameters {
			wf[p.Name] = p.Value
		}
		wf["run"] = "some-run"
		for _, tp := range spec.Templates {
			if tp.Container == nil || len(tp.Container.Args) != 1 || !strings.Contains(tp.Container.Args[0], "hone-train ") {
				continue
			}
			var sync struct {
				Mutexes []struct {
					Name string `json:"name"`
				} `json:"mutexes"`
			}
			if len(tp.Synchronization) > 0 {
				if err := yaml.Unmarshal(tp.Synchronization, &sync); err != nil {
					t.Fatalf("%s: template %s: synchronization: %v", file, tp.Name, err)
				}
			}
			if len(sync.Mutexes) != 1 {
				t.Errorf("%s: template %s runs hone-train and holds %d mutexes, want 1 named after the run", file, tp.Name, len(sync.Mutexes))
				continue
			}
			name, err := fill(sync.Mutexes[0].Name, wf, nil, "")
			if err != nil {
				t.Fatalf("%s: template %s: mutex: %v", file, tp.Name, err)
			}
			if !strings.Contains(name, "some-run") {
				t.Errorf("%s: template %s: mutex %q does not name the run", file, tp.Name, name)
			}
			names[file] = name
		}
	}
	if len(names) != 2 || names["round.yaml"] != names["cron.yaml"] {
		t.Errorf("the train steps' mutexes for one run: %q, want one name in round.yaml and cron.yaml", names)
	}
}

// serve.yaml's hone-serve follows the adapters the train steps publish and
// loads the base model they train on, as the workflows' parameter
// defaults name them (STORE/adapters, model-dir): a store changed in one
// file and not the other would leave the wait step waiting out its
// deadline for a step published where hone-serve does not look.
func TestStoreDefaultsAgree(t *testing.T) {
	dep := readServeDeployment(t)
	serve := map[string]string{}
	for _, c := range dep.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if k, v, ok := strings.Cut(a, "="); ok {
				serve[k] = v
			}
		}
	}
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		wf := map[string]string{}
		for _, p := range r.spec().Arguments.Parameters {
			wf[p.Name] = p.Value
		}
		if got := wf["store"] + "/adapters" + wf["query"]; got != serve["--adapters"] {
			t.Errorf("%s publishes to %q by default, serve.yaml follows %q", file, got, serve["--adapters"])
		}
		if wf["model-dir"] != serve["--model"] {
			t.Errorf("%s trains on %q by default, serve.yaml serves %q", file, wf["model-dir"], serve["--model"])
		}
	}
}

// round.yaml's collect samples the base model in round 1 by the name
// base-model, which must be the one serve.yaml's hone-serve serves it as:
// another is a 404 from hone-serve, and round 1 fails.
func TestBaseModelNameAgrees(t *testing.T) {
	dep := readServeDeployment(t)
	served := ""
	for _, c := range dep.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--served-model-name="); ok {
				served = v
			}
		}
	}
	r, err := Load("round.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.spec().Arguments.Parameters {
		if p.Name == "base-model" {
			if p.Value != served || served == "" {
				t.Errorf("round.yaml samples round 1 from %q by default, serve.yaml serves the base model as %q", p.Value, served)
			}
			return
		}
	}
	t.Error("round.yaml has no base-model parameter")
}

// The train steps of round.yaml and cron.yaml are given the time a stop
// of hone-train takes: on SIGTERM (a node drained, the workflow stopped)
// it saves the last finished step and uploads it to the store, the
// adapter and the optimizer's two moments, all float32. Kubernetes kills
// the pod terminationGracePeriodSeconds (30 by default) after SIGTERM;
// a step of a 7-8B model's rank-16 LoRA on the default --targets (the
// seven projections of Llama-3-8B's 32 layers: 41.9M parameters) is
// about 500 MB, 100 s over a slow store's 5 MB/s, so the default cut the
// upload short and the round's trained step was lost. (The tiny test
// model's step, 240 kB, saves and uploads in well under a second.)
// hone-train's --publish-timeout must cover the upload too, and end
// before the grace does, less the save: with its default of 10 minutes a
// store that stalled held the last publish until SIGKILL, which left no
// word of why.
func TestTrainGracePeriodCoversUpload(t *testing.T) {
	const (
		hidden, kv, inter, layers, rank = 4096, 1024, 14336, 32, 16
		slowStore                       = 5 << 20 // bytes a second
	)
	perLayer := rank * (2*(hidden+hidden) + 2*(hidden+kv) + 3*(hidden+inter)) // q,o; k,v; gate,up,down
	stepBytes := int64(perLayer*layers) * 4 * 3                               // float32: adapter, two moments
	need := time.Duration(stepBytes/slowStore)*time.Second + 30*time.Second   // and the save, the step in flight stopping
	type tmpl struct {
		Name         string `json:"name"`
		PodSpecPatch string `json:"podSpecPatch"`
		Container    *struct {
			Args []string `json:"args"`
		} `json:"container"`
	}
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Spec struct {
				Templates    []tmpl `json:"templates"`
				WorkflowSpec *struct {
					Templates []tmpl `json:"templates"`
				} `json:"workflowSpec"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		templates := doc.Spec.Templates
		if doc.Spec.WorkflowSpec != nil {
			templates = doc.Spec.WorkflowSpec.Templates
		}
		trains := 0
		for _, tp := range templates {
			if tp.Container == nil || len(tp.Container.Args) != 1 || !strings.Contains(tp.Container.Args[0], "hone-train ") {
				continue
			}
			trains++
			grace := 30 * time.Second // Kubernetes' default
			if tp.PodSpecPatch != "" {
				var patch struct {
					TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
				}
				if err := yaml.UnmarshalStrict([]byte(tp.PodSpecPatch), &patch); err != nil {
					t.Fatalf("%s: template %s: podSpecPatch: %v", file, tp.Name, err)
				}
				if patch.TerminationGracePeriodSeconds != nil {
					grace = time.Duration(*patch.TerminationGracePeriodSeconds) * time.Second
				}
			}
			if grace < need {
				t.Errorf("%s: template %s: the pod is killed %v after SIGTERM, and saving and uploading a 7-8B rank-16 adapter's step (%d MB) over a slow store takes up to %v",
					file, tp.Name, grace, stepBytes>>20, need)
			}
			m := regexp.MustCompile(`--publish-timeout[ =](\S+)`).FindStringSubmatch(tp.Container.Args[0])
			if m == nil {
				t.Errorf("%s: template %s: hone-train has no --publish-timeout, and its default (10m) outlasts the grace of %v", file, tp.Name, grace)
				continue
			}
			timeout, err := time.ParseDuration(m[1])
			if upload := need - 30*time.Second; err != nil || timeout < upload || timeout > grace-30*time.Second {
				t.Errorf("%s: template %s: --publish-timeout %s: want a duration from the upload's %v to the grace less the save's 30 s (%v)",
					file, tp.Name, m[1], upload, grace-30*time.Second)
			}
		}
		if trains != 1 {
			t.Errorf("%s: %d templates run hone-train, want 1", file, trains)
		}
	}
}

// serveDeployment is serve.yaml's first document, its Deployment, as far
// as the tests read it.
type serveDeployment struct {
	Kind string `json:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Args         []string `json:"args"`
					StartupProbe struct {
						PeriodSeconds    int64 `json:"periodSeconds"`
						FailureThreshold int64 `json:"failureThreshold"`
					} `json:"startupProbe"`
					ReadinessProbe struct {
						HTTPGet struct {
							Path string `json:"path"`
						} `json:"httpGet"`
					} `json:"readinessProbe"`
					Resources struct {
						Requests map[string]string `json:"requests"`
						Limits   map[string]string `json:"limits"`
					} `json:"resources"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// readServeDeployment reads serve.yaml's Deployment.
func readServeDeployment(t *testing.T) serveDeployment {
	t.Helper()
	b, err := os.ReadFile("serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep serveDeployment
	if err := yaml.Unmarshal([]byte(strings.Split(string(b), "\n---\n")[0]), &dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// retriedTemplate is a workflow template with a retryStrategy, and the
// manifest it stands in.
type retriedTemplate struct {
	file string
	tp   template
}

// retriedTemplates are round.yaml's and cron.yaml's templates that retry.
func retriedTemplates(t *testing.T) []retriedTemplate {
	t.Helper()
	var out []retriedTemplate
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range r.spec().Templates {
			if len(tp.RetryStrategy) > 0 {
				out = append(out, retriedTemplate{file, tp})
			}
		}
	}
	return out
}

// TestServeFirstPollWithinStartupProbe: serve.yaml's hone-serve pulls the
// store's newest steps before it listens, each run's pull abandoned after
// --poll-timeout; with its default (10m) as long as the startup probe's
// whole budget (60 × 10 s), a stalled store had the kubelet kill the pod
// as "Startup probe failed" about when hone-serve would have said why
// itself. The poll's deadline leaves the base model's load most of the
// budget.
func TestServeFirstPollWithinStartupProbe(t *testing.T) {
	c := readServeDeployment(t).Spec.Template.Spec.Containers[0]
	budget := time.Duration(c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold) * time.Second
	var timeout time.Duration
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--poll-timeout="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("serve.yaml: %s: %v", a, err)
			}
			timeout = d
		}
	}
	if timeout == 0 || timeout > budget/2 {
		t.Errorf("serve.yaml: --poll-timeout %v, want one set and within half the startup probe's %v (the base model loads in the rest)", timeout, budget)
	}
}

// memoryBytes reads a Kubernetes memory quantity as serve.yaml writes
// them: a number of bytes, with a binary (Ki … Ti) or decimal (k … T)
// suffix or none.
func memoryBytes(q string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"", 1}} {
		if n, ok := strings.CutSuffix(q, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memory quantity %q: %w", q, err)
			}
			return v * u.mult, nil
		}
	}
	return 0, fmt.Errorf("memory quantity %q: no number", q)
}

// TestServeMemoryHoldsTheModel: serve.yaml's hone-serve holds the base
// model's weights in memory at its --dtype (float32 unless given: 4
// bytes a parameter) and a KV cache of up to --kv-cache-bytes. The
// manifests are sized for a 7-8B model (TestTrainGracePeriodCoversUpload:
// Llama-3-8B's shape, 8.03B parameters with its untied 128256-token
// embedding and head), about 30 GiB in float32: a memory limit below that
// has the kernel kill the pod (OOMKilled) while it loads, and Kubernetes
// restart it, over and over. The request, what the scheduler reserves,
// must cover it too, or the pod lands on a node that cannot hold it.
func TestServeMemoryHoldsTheModel(t *testing.T) {
	const (
		vocab, hidden, kv, inter, layers = 128256, 4096, 1024, 14336, 32
		overhead                         = 2 << 30 // the Go runtime, tokenizer, adapters, buffers
	)
	params := int64(2*vocab*hidden + layers*(2*hidden*hidden+2*hidden*kv+3*hidden*inter))
	c := readServeDeployment(t).Spec.Template.Spec.Containers[0]
	binaries(t, "hone-serve")
	help, err := exec.Command(filepath.Join(bin, "hone-serve"), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("hone-serve --help: %v\n%s", err, help)
	}
	dtype := regexp.MustCompile(`--dtype string .*\(default "(\w+)"\)`).FindSubmatch(help)
	kvBytes := regexp.MustCompile(`--kv-cache-bytes int .*\(default (\d+)\)`).FindSubmatch(help)
	if dtype == nil || kvBytes == nil {
		t.Fatalf("hone-serve --help gives no default for --dtype or --kv-cache-bytes:\n%s", help)
	}
	flags := map[string]string{"--dtype": string(dtype[1]), "--kv-cache-bytes": string(kvBytes[1])}
	for _, a := range c.Args {
		if k, v, ok := strings.Cut(a, "="); ok {
			flags[k] = v
		}
	}
	perParam := map[string]int64{"float32": 4, "bfloat16": 2}[flags["--dtype"]]
	cache, err := strconv.ParseInt(flags["--kv-cache-bytes"], 10, 64)
	if perParam == 0 || err != nil || cache == 0 {
		t.Fatalf("serve.yaml: --dtype %q, --kv-cache-bytes %q (%v): want a known dtype and a bounded cache", flags["--dtype"], flags["--kv-cache-bytes"], err)
	}
	need := params*perParam + cache + overhead
	for kind, m := range map[string]map[string]string{"limit": c.Resources.Limits, "request": c.Resources.Requests} {
		got, err := memoryBytes(m["memory"])
		if err != nil {
			t.Fatalf("serve.yaml: memory %s: %v", kind, err)
		}
		if got < need {
			t.Errorf("serve.yaml: memory %s %s (%.1f GiB), and hone-serve holds an 8B model's weights in %s (%.1f GiB), a KV cache of %.1f GiB and about 2 GiB more: %.1f GiB",
				kind, m["memory"], float64(got)/(1<<30), flags["--dtype"], float64(params*perParam)/(1<<30), float64(cache)/(1<<30), float64(need)/(1<<30))
		}
	}
}

// TestGPUStepsSelectNoNodeLabel: a step that asks for nvidia.com/gpu in
// its limits is placed on a node whose device plugin offers one; that is
// all Kubernetes needs ("Schedule GPUs"). A nodeSelector on a label the
// device plugin does not set (nvidia.com/gpu.present is NVIDIA's GPU
// Feature Discovery's: GKE's GPU nodes, and a cluster running only the
// device plugin, lack it) left the train step Pending for ever there,
// with a GPU free.
func TestGPUStepsSelectNoNodeLabel(t *testing.T) {
	gpu := 0
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range r.spec().Templates {
			if tp.Container == nil || !bytes.Contains(tp.Container.Resources, []byte("nvidia.com/gpu")) {
				continue
			}
			gpu++
			var sel map[string]string
			if len(tp.NodeSelector) > 0 {
				if err := yaml.Unmarshal(tp.NodeSelector, &sel); err != nil {
					t.Fatalf("%s: template %s: nodeSelector: %v", file, tp.Name, err)
				}
			}
			if len(sel) > 0 {
				t.Errorf("%s: template %s asks for a GPU and also selects nodes by %q: a cluster whose GPU nodes lack those labels never schedules it", file, tp.Name, sel)
			}
		}
	}
	if gpu != 2 {
		t.Errorf("%d templates ask for a GPU, want 2 (round.yaml's and cron.yaml's train)", gpu)
	}
}

// TestServePodRestricted: serve.yaml's pod meets the Pod Security
// Standards' "restricted" profile, which a namespace labelled
// pod-security.kubernetes.io/enforce=restricted holds every pod to: one
// that does not is refused at creation, and the Deployment sits with no
// pod and only a FailedCreate event to say why. The profile asks each
// container for allowPrivilegeEscalation false and every capability
// dropped, and the pod (or each container) for runAsNonRoot and the
// runtime's seccomp profile. runAsNonRoot needs a numeric user to check,
// and the image's USER is a name (hone, uid 10001 in the Dockerfile), so
// the pod names the uid.
func TestServePodRestricted(t *testing.T) {
	b, err := os.ReadFile("serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					SecurityContext struct {
						RunAsNonRoot   *bool  `json:"runAsNonRoot"`
						RunAsUser      *int64 `json:"runAsUser"`
						SeccompProfile struct {
							Type string `json:"type"`
						} `json:"seccompProfile"`
					} `json:"securityContext"`
					Containers []struct {
						Name            string `json:"name"`
						SecurityContext struct {
							AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
							Capabilities             struct {
								Drop []string `json:"drop"`
							} `json:"capabilities"`
						} `json:"securityContext"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(strings.Split(string(b), "\n---\n")[0]), &dep); err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	docker, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	uid := regexp.MustCompile(`useradd --uid (\d+) .*\bhone\b`).FindSubmatch(docker)
	if uid == nil {
		t.Fatal("Dockerfile: no useradd --uid for the user hone")
	}
	sc := pod.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || strconv.FormatInt(*sc.RunAsUser, 10) != string(uid[1]) {
		t.Errorf("serve.yaml: the pod's runAsNonRoot %v, runAsUser %v: want true and the image's uid %s", sc.RunAsNonRoot, sc.RunAsUser, uid[1])
	}
	if sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("serve.yaml: the pod's seccompProfile type %q, want RuntimeDefault", sc.SeccompProfile.Type)
	}
	for _, c := range pod.Containers {
		csc := c.SecurityContext
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation || !slices.Equal(csc.Capabilities.Drop, []string{"ALL"}) {
			t.Errorf("serve.yaml: container %s: allowPrivilegeEscalation %v, capabilities dropped %q: want false and ALL", c.Name, csc.AllowPrivilegeEscalation, csc.Capabilities.Drop)
		}
	}
}
