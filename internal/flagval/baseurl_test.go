package flagval

import "testing"

func TestBaseURL(t *testing.T) {
	for _, s := range []string{"http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://h"} {
		if err := BaseURL("--base-url", s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"127.0.0.1:8000/v1", "localhost:8000/v1", "ftp://h/v1", "http:///v1", "", "http://[::1"} {
		if err := BaseURL("--base-url", s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestShownMasksToken: a userinfo that is a user alone is a token
// (http://sk-abc@host): it is masked whole, a password masked and its
// user kept, and a URL without userinfo is printed as given.
func TestShownMasksToken(t *testing.T) {
	for s, want := range map[string]string{
		"http://sk-abc123@127.0.0.1:8000/v1": "http://xxxxx@127.0.0.1:8000/v1",
		"http://hone:pw@127.0.0.1:8000/v1":   "http://hone:xxxxx@127.0.0.1:8000/v1",
		"http://127.0.0.1:8000/v1?a=%41":     "http://127.0.0.1:8000/v1?a=%41",
		"":                                   "",
	} {
		if got := Shown(s); got != want {
			t.Errorf("Shown(%q) = %q, want %q", s, got, want)
		}
	}
}
