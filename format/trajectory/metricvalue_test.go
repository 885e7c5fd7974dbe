package trajectory

import (
	"encoding/json"
	"testing"
)

// TestMetricValue pins the one reading of a user's metric value that the
// stdio environment, the proxy and JSONL import share.
func TestMetricValue(t *testing.T) {
	for _, c := range []struct {
		in         string
		value      float64
		isNull, ok bool
	}{
		{"0.5", 0.5, false, true},
		{"-3", -3, false, true},
		{"1e2", 100, false, true},
		{"true", 1, false, true},
		{" false ", 0, false, true},
		{"null", 0, true, true},
		{`"1"`, 0, false, false},
		{`"yes"`, 0, false, false},
		{"[1]", 0, false, false},
		{`{"a":1}`, 0, false, false},
		{"1e999", 0, false, false},
	} {
		value, isNull, ok := MetricValue(json.RawMessage(c.in))
		if value != c.value || isNull != c.isNull || ok != c.ok {
			t.Errorf("MetricValue(%s) = %v, null %v, ok %v; want %v, null %v, ok %v", c.in, value, isNull, ok, c.value, c.isNull, c.ok)
		}
	}
}
