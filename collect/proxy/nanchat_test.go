package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestProxyNaNNamedChat: a NaN or Infinity in a recorded chat request, as
// Python's json.dumps writes float('nan') for a temperature or a logit
// bias, is a 400 naming the field and saying JSON has no NaN, as on the
// reward and close routes; it was encoding/json's "invalid character 'N'
// looking for beginning of value". A bad escape that only reads "\NaN" is
// not named as a NaN.
func TestProxyNaNNamedChat(t *testing.T) {
	up, _, _ := upstream(t)
	base := proxyTo(t, up.URL, t.TempDir())
	const msgs = `"model":"m","messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ body, want, notWant string }{
		{`{` + msgs + `,"temperature":NaN}`, `temperature is NaN`, `invalid character`},
		{`{` + msgs + `,"logit_bias":{"7":-Infinity}}`, `logit_bias[\"7\"] is -Infinity`, `invalid character`},
		{`{"model":"m","messages":[{"role":"user","content":"C:\NaN"}]}`, `invalid character 'N' in string escape code`, `is NaN`},
	} {
		status, msg := chat(t, base, tc.body, "t1", "g")
		if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.notWant) {
			t.Errorf("chat %s: %d %s; want 400 saying %s, not %s", tc.body, status, msg, tc.want, tc.notWant)
		}
	}
}
