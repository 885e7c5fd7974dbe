package flagval

import (
	"fmt"
	"net/url"

	"github.com/hone-rl/hone/format/urlmask"
)

// BaseURL checks an OpenAI-compatible base URL a stage calls (collect's
// --base-url, score's --judge-base-url, the proxy's --upstream): it must be
// http(s) with a host. One without its scheme (vLLM prints
// "localhost:8000/v1") parses as a path, and every call made with it
// fails with "unsupported protocol scheme" only once the run is under way.
// what names the setting in the error.
func BaseURL(what, s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want an http(s)://host:port/v1 base URL", what, urlmask.Shown(s))
	}
	return nil
}

// CredentialsNotSent is the warning for base URL s (named by what) whose
// userinfo holds a password or a token (http://user:pw@host/v1), which
// the OpenAI client never sends: it sends its own Authorization: Bearer
// <API key> and no Basic auth, so a server that needs them answers every
// call 401 with no word of why. use names where the key goes instead.
// The URL is shown masked (urlmask.Shown). "" when s carries no userinfo.
func CredentialsNotSent(what, s, use string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	return fmt.Sprintf("%s %s: the credentials in the URL's userinfo are not sent (the server gets only the API key, as Authorization: Bearer); give the key with %s", what, urlmask.Shown(s), use)
}
