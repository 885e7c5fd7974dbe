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
