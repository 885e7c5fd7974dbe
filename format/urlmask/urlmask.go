package urlmask

import (
	"errors"
	"net/url"
)

// Masked stands for a userinfo's secret, spelled as url.Redacted spells a
// password, so that a password and a token read alike once masked.
const Masked = "xxxxx"

// Shown is URL s as a message may print it: the password of its userinfo
// (http://user:PASSWORD@host) masked, as net/http masks it in its own
// errors, for stderr and logs are read by more people than the server's
// password is given to. The user stays: it says who asked. A userinfo
// that is a user alone (http://sk-TOKEN@host) is a token, and is masked
// whole. A URL that does not parse is s as it stands, and one without
// userinfo too: String would respell its escapes.
func Shown(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	u.User = url.User(Masked)
	return u.String()
}

// ShownErr is err with the URL of net/http's error (a *url.Error, as an
// HTTP client returns it) shown as Shown shows it: net/http masks a
// password there, but not a token given as the userinfo's user
// (http://sk-TOKEN@host/v1), which every failed call's message would
// then print. Any other error, a *url.Error wrapped in another among
// them, is err as it stands.
func ShownErr(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || err != error(ue) {
		return err
	}
	masked := *ue
	masked.URL = Shown(ue.URL)
	return &masked
}
