package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperCalls prints each public call of python/hone_proxy.py as a reader
// writes it: hone_proxy.NAME(SIGNATURE) for the module's __all__ and
// t.NAME(SIGNATURE) for a Trajectory's methods; an exception class by its
// name alone.
const helperCalls = `
import inspect, hone_proxy
for name in hone_proxy.__all__:
    obj = getattr(hone_proxy, name)
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        print("hone_proxy." + name)
    else:
        print("hone_proxy." + name + str(inspect.signature(obj)))
for name, fn in inspect.getmembers(hone_proxy.Trajectory, inspect.isfunction):
    if not name.startswith("_"):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1:]  # without self
        print("t." + name + str(sig.replace(parameters=params)))
`

// TestDocProxyHelperTable: docs/proxy.md's "The Python helper" section
// names every public call of python/hone_proxy.py (its __all__ and the
// Trajectory methods), and a call it writes out with its parameters is
// written as the helper defines it (a "(…)" stands for the same ones as
// the call before it). The table left out t.aclose_group and
// hone_proxy.proxy_url, which an asyncio agent and one that builds its
// own requests to the /hone/ routes look for.
func TestDocProxyHelperTable(t *testing.T) {
	py := docPython(t)
	b, err := os.ReadFile("../../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The Python helper\n")
	if !ok {
		t.Fatal("docs/proxy.md has no section \"The Python helper\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	helper, err := filepath.Abs("../../python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", helperCalls)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+helper, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing hone_proxy's calls: %v", err)
	}
	calls := strings.Fields(strings.ReplaceAll(string(out), ", ", ","))
	if len(calls) < 8 {
		t.Fatalf("hone_proxy lists %d public calls: %q", len(calls), calls)
	}
	doc := strings.ReplaceAll(section, ", ", ",")
	for _, call := range calls {
		name, _, _ := strings.Cut(call, "(")
		if !strings.Contains(doc, "`"+name) && !strings.Contains(doc, " "+name+"(") {
			t.Errorf("docs/proxy.md's helper section does not name %s", strings.ReplaceAll(call, ",", ", "))
			continue
		}
		if strings.Contains(doc, name+"(") && !strings.Contains(doc, name+"(…)") && !strings.Contains(doc, call) {
			t.Errorf("docs/proxy.md writes %s with other parameters than the helper's %s", name, strings.ReplaceAll(call, ",", ", "))
		}
	}
}
