package urlmask

import (
	"errors"
	"net/url"
	"strings"
)

// Masked stands for a userinfo's secret, spelled as url.Redacted spells a
// password, so that a password and a token read alike once masked.
const Masked = "xxxxx"

// Shown is URL s as a message may print it: the password of its userinfo
// (http://user:PASSWORD@host) masked, as net/http masks it in its own
// errors, for stderr and logs are read by more people than the server's
// password is given to. The user stays: it says who asked. A userinfo
// that is a user alone (http://sk-TOKEN@host) is a token, and is masked
// whole. A URL without userinfo is s as it stands: String would respell
// its escapes. A URL that does not parse is masked by its text
// (shownUnparsed): the flag checks that refuse it print it, and a
// password with a space or a stray '%' is no less secret.
func Shown(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		// An opaque URL is one typed without its "//": user:pw@host:8000/v1
		// parses as scheme "user", the password in the opaque part.
		return shownUnparsed(s)
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	u.User = url.User(Masked)
	return u.String()
}

// shownUnparsed masks the userinfo of s, a URL url.Parse refused or read
// as opaque, by its text alone: everything after "//" (or from the start,
// without one) and before the last '@' ahead of any '?' or '#' is taken
// for userinfo, so a password holding '/' or '@' is
// masked whole. It errs towards masking, as only strings that are no URL
// get here. The user before the first ':' stays, as in Shown; a
// userinfo without ':' is a token and is masked whole.
func shownUnparsed(s string) string {
	start := 0 // no "//": a URL typed without it starts with its userinfo
	if i := strings.Index(s, "//"); i >= 0 {
		start = i + 2
	}
	rest := s[start:]
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], userinfoEnd)
	if at < 0 {
		return s
	}
	masked := Masked
	if user, _, ok := strings.Cut(rest[:at], ":"); ok {
		masked = user + ":" + Masked
	}
	return s[:start] + masked + rest[at:]
}

// userinfoEnd is the '@' that ends a URL's userinfo, by its code: the
// literal is kept for run folders' served names (TestContractRunFolder).
const userinfoEnd = 0x40

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
