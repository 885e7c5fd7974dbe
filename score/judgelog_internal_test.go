package score

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestJudgeLogNamesTheDefaultServer: with no --judge-base-url (nor
// $OPENAI_BASE_URL) the judge line names api.openai.com, where the calls
// go, and warns when no key is set for it, which every call would then
// need; it logged base_url="" and api_key_set=false alone. OpenAI's
// base URL given by name is warned about alike.
func TestJudgeLogNamesTheDefaultServer(t *testing.T) {
	for _, c := range []struct {
		base, key string
		want      []string
		warn      bool
	}{
		{"", "", []string{"base_url=https://api.openai.com/v1/", "no API key"}, true},
		{"", "sk-x", []string{"base_url=https://api.openai.com/v1/"}, false},
		{"http://127.0.0.1:8000/v1", "", []string{"base_url=http://127.0.0.1:8000/v1"}, false},
		{"https://api.openai.com/v1", "", []string{"base_url=https://api.openai.com/v1", "no API key"}, true},
	} {
		var logged bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		if _, _, err := buildJudge(context.Background(), Options{JudgeModel: "m", JudgeBaseURL: c.base, JudgeAPIKey: c.key, NoCache: true}, log, nil); err != nil {
			t.Fatal(err)
		}
		s := logged.String()
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("base %q key %q: log lacks %q:\n%s", c.base, c.key, w, s)
			}
		}
		if got := strings.Contains(s, "level=WARN"); got != c.warn {
			t.Errorf("base %q key %q: warned %v, want %v:\n%s", c.base, c.key, got, c.warn, s)
		}
	}
}
