package vllm

import (
	"net/url"
)

// shown is upstream URL s as the log and errors print it: a password in
// its userinfo masked (the user says who asked), a userinfo that is a user
// alone masked whole, for that is a token. hone-collect's and
// hone-score's URLs are masked so (internal/flagval, which serve may not
// import). A URL that does not parse is s as it stands.
func shown(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	u.User = url.User("xxxxx") // spelled as Redacted spells a password
	return u.String()
}

// shownErr is err, an HTTP client's error, with its *url.Error's URL
// shown: net/http masks a password there, but not a token user.
func shownErr(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	masked := *ue
	masked.URL = shown(ue.URL)
	return &masked
}
