package chattemplate

import (
	"testing"
)

// Checking a rendering's kwargs against the reserved names must not build
// the callable tables the names come from: layout renders a trajectory
// once per assistant turn, and building some sixty callables each time
// made every rendering a third slower (BenchmarkRenderGolden). A
// rendering's variables cost fewer allocations than there are reserved
// names, which building the tables cannot.
func TestVariablesDoNotBuildTheReservedNames(t *testing.T) {
	tmpl, err := New(`{{ enable_thinking }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Kwargs: map[string]any{"enable_thinking": false}}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := tmpl.variables(in, false, argsDict); err != nil {
			t.Fatal(err)
		}
	})
	if n := len(reservedNames()); allocs >= float64(n) {
		t.Errorf("variables: %.0f allocations a call, want fewer than the %d reserved names", allocs, n)
	}
}
