package k8s

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterDocumentedNumbers: docs/cluster.md states the defaults and
// manifest settings a user sizes a cluster by (the publish and poll
// deadlines, the pods' grace periods, the wait step's deadline, the
// retries). Nothing checked them against the binaries and manifests, so a
// changed default or manifest left the page stating the old one. Each is
// read from the page and compared with the binary's --help or the
// manifest's field.
func TestClusterDocumentedNumbers(t *testing.T) {
	b, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ") // the page wraps its sentences anywhere
	docSays := func(what, pattern string) string {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(doc)
		if m == nil {
			t.Fatalf("docs/cluster.md no longer states %s (%s)", what, pattern)
		}
		return m[1]
	}
	binaries(t, "hone-train", "hone-serve")
	flagDefault := func(cmd []string, flag string) time.Duration {
		t.Helper()
		help, err := exec.Command(filepath.Join(bin, cmd[0]), append(cmd[1:], "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", cmd, err, help)
		}
		m := regexp.MustCompile(`(?m)^\s+` + flag + ` duration .*\(default ([0-9a-z.]+)\)$`).FindSubmatch(help)
		if m == nil {
			t.Fatalf("%s --help gives no default for %s", cmd, flag)
		}
		d, err := time.ParseDuration(string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	grpo := []string{"hone-train", "grpo"}
	for _, c := range []struct {
		what, pattern, unit string
		cmd                 []string
		flag                string
	}{
		{"--publish-every's default", "`--publish-every` \\((\\d+) s\\)", "s", grpo, "--publish-every"},
		{"--publish-timeout's default", "`--publish-timeout` \\((\\d+) min\\)", "m", grpo, "--publish-timeout"},
		{"--poll-timeout's default", "`--poll-timeout` \\((\\d+) min", "m", []string{"hone-serve"}, "--poll-timeout"},
		{"--publish-timeout's default, next to the train step's", "`--publish-timeout \\S+` \\(not the (\\d+) min default\\)", "m", grpo, "--publish-timeout"},
		{"serve.yaml's --drain-timeout", "its `--drain-timeout` of (\\d+) s", "s", []string{"hone-serve"}, "--drain-timeout"},
	} {
		d, err := time.ParseDuration(docSays(c.what, c.pattern) + c.unit)
		if err != nil {
			t.Fatal(err)
		}
		if got := flagDefault(c.cmd, c.flag); got != d {
			t.Errorf("docs/cluster.md states %s as %v; %s has %v", c.what, d, strings.Join(c.cmd, " "), got)
		}
	}

	dep := readServeDeployment(t).Spec.Template.Spec
	grace := "none (Kubernetes' 30)"
	if g := dep.TerminationGracePeriodSeconds; g != nil {
		grace = strconv.FormatInt(*g, 10)
	}
	if g := docSays("serve.yaml's grace", "(\\d+) s to stop"); grace != g {
		t.Errorf("docs/cluster.md gives serve.yaml's pod %s s to stop; serve.yaml has %s", g, grace)
	}
	for _, c := range dep.Containers {
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--drain-timeout") {
				t.Errorf("serve.yaml sets %s, and docs/cluster.md states hone-serve's default", a)
			}
		}
	}
	trainGrace := docSays("the train step's grace", "A train step's pod has (\\d+) s from SIGTERM")
	trainTimeout := docSays("the train step's --publish-timeout", "its `--publish-timeout (\\S+)` \\(not")
	byName := map[string]template{}
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range r.spec().Templates {
			if file == "round.yaml" {
				byName[tp.Name] = tp
			}
			if tp.Container == nil || !strings.Contains(strings.Join(tp.Container.Args, " "), "hone-train ") {
				continue
			}
			if g, err := tp.grace(); err != nil || g != mustSeconds(t, trainGrace) {
				t.Errorf("docs/cluster.md gives a train step %s s from SIGTERM; %s's %s has %v (%v)", trainGrace, file, tp.Name, g, err)
			}
			m := regexp.MustCompile(`--publish-timeout[ =](\S+)`).FindStringSubmatch(strings.Join(tp.Container.Args, " "))
			if m == nil || m[1] != trainTimeout {
				t.Errorf("docs/cluster.md says a train step passes --publish-timeout %s; %s's %s passes %v", trainTimeout, file, tp.Name, m)
			}
		}
	}
	cron, err := Load("cron.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if every := docSays("cron.yaml's schedule", "GRPO on `STORE/scored/` every (\\d+) minutes"); string(cron.Spec.Schedules) != `["*/`+every+` * * * *"]` {
		t.Errorf("docs/cluster.md says cron.yaml trains every %s minutes; its schedules are %s", every, cron.Spec.Schedules)
	}
	minutes, err := strconv.Atoi(docSays("the wait step's deadline", "the wait step waits out its (\\d+) minutes"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(byName["wait-serve"].ActiveDeadlineSeconds); got != strconv.Itoa(minutes*60) {
		t.Errorf("docs/cluster.md says the wait step waits %d minutes; its activeDeadlineSeconds is %s", minutes, got)
	}
	counts := map[string]string{"once": "1", "twice": "2"}
	want := regexp.MustCompile(`, `).Split(docSays("the retries", "is run again \\((\\w+, \\w+, \\w+)\\)"), -1)
	for i, name := range []string{"collect", "score", "train"} {
		var rs struct {
			Limit string `json:"limit"`
		}
		if err := json.Unmarshal(byName[name].RetryStrategy, &rs); err != nil {
			t.Fatalf("round.yaml: %s's retryStrategy: %v", name, err)
		}
		if counts[want[i]] != rs.Limit {
			t.Errorf("docs/cluster.md says a failed %s step is run again %s; round.yaml's retryStrategy limit is %q", name, want[i], rs.Limit)
		}
	}
}

// mustSeconds is the duration of n seconds, n as the page writes it.
func mustSeconds(t *testing.T, n string) time.Duration {
	t.Helper()
	v, err := strconv.Atoi(n)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(v) * time.Second
}
