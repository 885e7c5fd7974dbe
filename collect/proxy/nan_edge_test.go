package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// A syntax error that only happens to sit at the letters NaN or
// Infinity (a string's bad escape "\N", a NaN where an object key goes)
// is not a NaN value: the 400 keeps encoding/json's wording rather than
// naming a field as NaN. A number too large for a float64 before the
// NaN does not stop the path at its own key.
func TestProxyNaNNamedEdges(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	runAgent(t, base+"/v1", "t1", "g")
	reward := base + "/hone/trajectories/t1/reward"
	for _, tc := range []struct{ body, want, notWant string }{
		{`{"reward": 1, "metadata": {"dir": "C:\NaN"}}`, `invalid character 'N' in string escape code`, `is NaN`},
		{`{"reward": 1, "metrics": {"a": 1, NaN: 2}}`, `looking for beginning of object key string`, `is NaN`},
		{`{"reward": 1, "metadata": {"tags": [1 NaN]}}`, `after array element`, `is NaN`},
		{`{"reward": 1, "metrics": {"a": 1-Infinity}}`, `invalid character '-'`, `is -Infinity`},
		{`{"reward": 1, "metadata": {"big": 1e400, "x": NaN}}`, `metadata[\"x\"] is NaN`, `metadata[\"big\"]`},
	} {
		status, msg := do(t, mustRequest(t, http.MethodPost, reward, tc.body))
		if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.notWant) {
			t.Errorf("POST %s: %d %s; want 400 saying %s, not %s", tc.body, status, msg, tc.want, tc.notWant)
		}
	}
}
