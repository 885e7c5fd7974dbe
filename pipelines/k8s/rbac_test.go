package k8s

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// rbacDoc is the part of a manifest document that grants access: a Role's
// rules, or a RoleBinding's subjects and role.
type rbacDoc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Rules []struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
		Verbs     []string `json:"verbs"`
	} `json:"rules"`
	Subjects []rbacSubject `json:"subjects"`
	RoleRef  struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"roleRef"`
}

type rbacSubject struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// grants reports which of verbs the documents of text let the service
// account account (in the namespace the documents are applied to) do to
// resource of group: through a RoleBinding naming the account, with no
// namespace of its own (the binding's), and a Role of the same text.
func grants(t *testing.T, text, account, group, resource string, verbs []string) []string {
	t.Helper()
	roles := map[string]rbacDoc{}
	var bindings []rbacDoc
	for _, part := range strings.Split(text, "\n---\n") {
		var d rbacDoc
		if err := yaml.Unmarshal([]byte(part), &d); err != nil {
			t.Fatal(err)
		}
		switch d.Kind {
		case "Role":
			roles[d.Metadata.Name] = d
		case "RoleBinding":
			bindings = append(bindings, d)
		}
	}
	var got []string
	for _, b := range bindings {
		bound := slices.ContainsFunc(b.Subjects, func(s rbacSubject) bool {
			return s.Kind == "ServiceAccount" && s.Name == account && s.Namespace == ""
		})
		role, ok := roles[b.RoleRef.Name]
		if !bound || !ok || b.RoleRef.Kind != "Role" || b.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
			continue
		}
		for _, r := range role.Rules {
			if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) {
				continue
			}
			for _, v := range verbs {
				if slices.Contains(r.Verbs, v) && !slices.Contains(got, v) {
					got = append(got, v)
				}
			}
		}
	}
	slices.Sort(got)
	return got
}

// The service account round.yaml's and cron.yaml's pods run as may create
// and patch workflowtaskresults (argoproj.io) in its namespace: Argo's
// executor (v3.4 on) reports each step's outputs and exit code so, and on
// a cluster that grants an account nothing by default every step failed
// ("workflowtaskresults.argoproj.io is forbidden"). serve.yaml, which
// docs/cluster.md applies, creates the account and grants it.
func TestWorkflowAccountReportsTaskResults(t *testing.T) {
	b, err := os.ReadFile("serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "patch"}
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		var account string
		if err := yaml.Unmarshal(r.spec().ServiceAccountName, &account); err != nil || account == "" {
			t.Fatalf("%s: serviceAccountName %s (%v)", file, r.spec().ServiceAccountName, err)
		}
		if got := grants(t, string(b), account, "argoproj.io", "workflowtaskresults", want); !slices.Equal(got, want) {
			t.Errorf("%s runs as %q, which serve.yaml lets do %q to workflowtaskresults, want %q", file, account, got, want)
		}
	}
	doc, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "kubectl apply -f pipelines/k8s/secrets.yaml -f pipelines/k8s/serve.yaml") {
		t.Error("docs/cluster.md no longer applies serve.yaml, which grants the workflows' account")
	}
	// The check can fail: a Role with create alone, or bound to another
	// account, does not pass.
	role := "kind: Role\nmetadata:\n  name: r\nrules:\n  - apiGroups: [argoproj.io]\n    resources: [workflowtaskresults]\n    verbs: [create]\n"
	bind := "kind: RoleBinding\nmetadata:\n  name: b\nsubjects:\n  - kind: ServiceAccount\n    name: other\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\n"
	if got := grants(t, role+"\n---\n"+strings.Replace(bind, "other", "hone", 1), "hone", "argoproj.io", "workflowtaskresults", want); !slices.Equal(got, []string{"create"}) {
		t.Errorf("a Role granting create alone: %q", got)
	}
	if got := grants(t, strings.Replace(role, "[create]", "[create, patch]", 1)+"\n---\n"+bind, "hone", "argoproj.io", "workflowtaskresults", want); len(got) != 0 {
		t.Errorf("a Role bound to another account: %q", got)
	}
}
