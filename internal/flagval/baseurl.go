package flagval

import (
	"errors"
	"fmt"
	"net/url"
)

// BaseURL checks an OpenAI-compatible base URL a stage calls (collect's
// --base-url, score's --judge-base-url, the proxy's --upstream): it must be
// http(s) with a host. One without its scheme (vLLM prints
// "localhost:8000/v1") parses as a path, and every call made with it
// fails with "unsupported protocol scheme" only once the run is under way.
// what names the setting in the error.
func BaseURL(what, s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want an http(s)://host:port/v1 base URL", what, Shown(s))
	}
	return nil
}

// Shown is URL s as a message may print it: the password of its userinfo
// (http://user:PASSWORD@host) masked, as net/http masks it in its own
// errors, for stderr and logs are read by more people than the server's
// password is given to. The user stays: it says who asked. A userinfo
// that is a user alone (http://sk-TOKEN@host) is a token, and is masked
// whole, as format/fileset masks an object-store endpoint's. A URL that
// does not parse is s as it stands.
func Shown(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s // as given: String would respell its escapes
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	u.User = url.User(maskedToken)
	return u.String()
}

// maskedToken stands for a userinfo's token, spelled as url.Redacted
// spells a password.
const maskedToken = "xxxxx"

// ShownErr is err with the URL of net/http's error (a *url.Error, as an
// HTTP client returns it) shown as Shown shows it: net/http masks a
// password there, but not a token given as the userinfo's user
// (http://sk-TOKEN@host/v1), which every failed call's message would
// then print. Any other error is err as it stands.
func ShownErr(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || err != error(ue) {
		return err
	}
	masked := *ue
	masked.URL = Shown(ue.URL)
	return &masked
}

// CredentialsNotSent is the warning for base URL s (named by what) whose
// userinfo holds a password or a token (http://user:pw@host/v1), which
// the OpenAI client never sends: it sends its own Authorization: Bearer
// <API key> and no Basic auth, so a server that needs them answers every
// call 401 with no word of why. use names where the key goes instead.
// The URL is shown masked (Shown). "" when s carries no userinfo.
func CredentialsNotSent(what, s, use string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	return fmt.Sprintf("%s %s: the credentials in the URL's userinfo are not sent (the server gets only the API key, as Authorization: Bearer); give the key with %s", what, Shown(s), use)
}
