package fileset

import (
	"net/url"
	"slices"
	"strings"
)

// redacted is what a masked value of an object-store URL's query shows.
const redacted = "REDACTED"

// querySecrets is a replacer that masks, wherever a message quotes the
// object-store URL name with its query (as written or as a driver prints
// it), what the query may hold of a secret: the value of a parameter
// other than the stores' own settings (someone's secret_access_key=…,
// which the driver refuses in an error that quotes the URL), the
// password of the endpoint's user (http://user:PASSWORD@host) and a user
// with no password, which is a token (http://TOKEN@host). Pod logs are
// read by more people than the store's keys are given to.
func querySecrets(name string) *strings.Replacer {
	_, raw, ok := strings.Cut(name, "?")
	if !ok {
		return strings.NewReplacer()
	}
	raw, _, _ = strings.Cut(raw, "#")
	var pairs []string
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		key, kerr := url.QueryUnescape(k)
		val, verr := url.QueryUnescape(v)
		if kerr != nil || verr != nil {
			key, val = k, v
		}
		switch {
		case v == "":
		case key == "endpoint":
			pairs = append(pairs, endpointSecrets(v, val)...)
		case !shownParam(key):
			pairs = append(pairs, kv, k+"="+redacted, key+"="+val, key+"="+redacted)
		}
	}
	return strings.NewReplacer(pairs...)
}

// endpointSecrets are the replacer's pairs that mask the secret of the
// endpoint parameter's userinfo (userinfoSecret) in each spelling a
// message may quote of it: a password between the user's ':' and the
// '@', the user kept (it says who asked); a user with no password, a
// token, between the scheme's "//" and the '@'.
func endpointSecrets(raw, val string) []string {
	var pairs []string
	for _, e := range []string{raw, val} {
		secret, isUser := userinfoSecret(e)
		if secret == "" {
			continue
		}
		before, masked := ":", ":"+redacted+userinfoAt
		if isUser {
			before, masked = "//", "//"+redacted+userinfoAt
		}
		forms := []string{secret, url.QueryEscape(secret)}
		if dec, err := url.PathUnescape(secret); err == nil {
			forms = append(forms, dec, url.QueryEscape(dec))
		}
		for _, f := range forms {
			if old := before + f + userinfoAt; f != "" && !slices.Contains(pairs, old) {
				pairs = append(pairs, old, masked)
			}
		}
	}
	for _, e := range []string{raw, val} {
		escaped := escapedSecrets(e)
		for i := 0; i < len(escaped); i += 2 {
			if !slices.Contains(pairs, escaped[i]) {
				pairs = append(pairs, escaped[i], escaped[i+1])
			}
		}
	}
	return pairs
}

// maxEscapeLevels bounds how many times escapedSecrets decodes an
// endpoint: a secret escaped more often than this is no URL a store reads.
const maxEscapeLevels = 4

// escapedSecrets are the replacer's pairs that mask the spellings in e, from the ':' or "//" before the
// secret through the '@' after it, of the userinfo secret that e holds
// with some of its reserved characters percent-escaped, once or more
// (endpoint=http%3A%2F%2Fme%3APW%40host, as a URL builder writes the
// parameter): e is decoded a level at a time, each decoded byte keeping
// where it is spelt in e, and the secret found in a decoded level is
// taken where e spells it. The mask writes the userinfo's delimiters
// plain (":REDACTED@", "//REDACTED@"), as IsRedacted looks for them, the
// user before the ':' kept. Matching the plain ":PW@" missed every such
// spelling, and the password was printed whole.
func escapedSecrets(e string) []string {
	dec, at := e, make([]int, len(e)+1)
	for i := range at {
		at[i] = i
	}
	var pairs []string
	for range maxEscapeLevels {
		var ok bool
		if dec, at, ok = unescapeOnce(dec, at); !ok {
			break
		}
		lo, hi, isUser := userinfoSpan(dec)
		if lo < 0 {
			continue
		}
		before := ":" // before the password
		if isUser {
			before = "//" // the scheme's, before the token
		}
		if old := e[at[lo-len(before)]:at[hi+1]]; !slices.Contains(pairs, old) {
			pairs = append(pairs, old, before+redacted+userinfoAt)
		}
	}
	return pairs
}

// unescapeOnce decodes each valid %XX of dec once, with at (where each
// byte of dec, and its end, is spelt in the endpoint as written) carried
// over to the decoded bytes; ok is false where dec holds no escape. A '%'
// with no two hex digits after it stays, as the driver's decoding keeps
// no such endpoint anyway.
func unescapeOnce(dec string, at []int) (string, []int, bool) {
	var b strings.Builder
	nat := make([]int, 0, len(at))
	for i := 0; i < len(dec); i++ {
		nat = append(nat, at[i])
		if dec[i] == '%' && i+2 < len(dec) && isHex(dec[i+1]) && isHex(dec[i+2]) {
			b.WriteByte(unhex(dec[i+1])<<4 | unhex(dec[i+2]))
			i += 2
			continue
		}
		b.WriteByte(dec[i])
	}
	nat = append(nat, at[len(dec)])
	return b.String(), nat, b.Len() < len(dec)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// userinfoSecret is the secret of endpoint e's userinfo as it stands
// there, and whether it is the user itself (no ':' in the userinfo, the
// user then being a token) rather than the password. The userinfo is
// found by hand, ending at the last '@' of the host part: a password
// holding '/', '@' or a bad escape, which url.Parse refuses or splits
// elsewhere, is the one the driver prints in its own parse error.
func userinfoSecret(e string) (string, bool) {
	lo, hi, isUser := userinfoSpan(e)
	if lo < 0 {
		return "", false
	}
	return e[lo:hi], isUser
}

// userinfoSpan is where userinfoSecret's secret stands in e, e[lo:hi]
// (lo -1 where e has none), hi being its '@'.
func userinfoSpan(e string) (lo, hi int, isUser bool) {
	i := strings.Index(e, "://")
	if i < 0 {
		return -1, -1, false
	}
	start := i + len("://")
	rest := e[start:]
	if _, err := url.Parse(e); err == nil {
		// A URL that parses ends its userinfo before the first '/':
		// an '@' in its path is no password's end, and masking up to
		// it would hide the host too.
		rest, _, _ = strings.Cut(rest, "/")
	}
	at := strings.LastIndexByte(rest, userinfoEnd)
	if at < 0 {
		return -1, -1, false
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 {
		return start, start + at, true
	}
	return start + colon + 1, start + at, false
}

// userinfoEnd is the '@' that ends a URL's userinfo, by its code: the
// literal is kept for run folders' served names (TestContractRunFolder).
const userinfoEnd = 0x40

// userinfoAt is userinfoEnd as a string.
const userinfoAt = string(rune(userinfoEnd))

// shownParam reports whether the value of the URL query parameter key is
// one of the store's settings (gocloud.dev's parameters of s3://, gs://
// and azblob:// URLs, no secret among them), which an error may show: they
// say which store was asked, and how.
func shownParam(key string) bool {
	switch key {
	case "region", "endpoint", "profile", "awssdk", "disable_https", "use_path_style",
		"dualstack", "fips", "rate_limiter_capacity", "anonymous", "hostname_immutable",
		"accelerate", "ssetype", "kmskeyid", "role", "role_session_name", "role_duration",
		"web_identity_token_file", "request_checksum_calculation", "response_checksum_validation",
		"grpc", "zonal", "universe_domain", "access_id", "private_key_path",
		"domain", "protocol", "cdn", "localemu", "storage_account":
		return true
	}
	return false
}

// RedactURL is name (a path, or an object-store URL with its query) as a
// message or log may show it: the query's secrets masked (querySecrets).
func RedactURL(name string) string { return querySecrets(name).Replace(name) }

// StoredName is name as a file that more people read than the store's
// keys are given to keeps it (a run's manifest): an object-store URL with
// its query's secrets masked (RedactURL); a local path as it is, since a
// '?' in it is part of a file's name, not a query, and masking it would
// name two files alike.
func StoredName(name string) string {
	if !IsURL(name) {
		return name
	}
	return RedactURL(name)
}

// IsRedacted reports whether name is an object-store URL as RedactURL
// gives it with a secret masked: a name kept in a file that way (a run's
// manifest) cannot open the store, and is matched, not opened. A local
// path (StoredName keeps it whole) never is. Only what the mask writes
// counts (querySecrets): a parameter's whole value where the parameter is
// not a store setting, and the endpoint's userinfo secret; a setting the
// user gave the value REDACTED (region=REDACTED) is no mask, and its name
// opens the store.
func IsRedacted(name string) bool {
	_, raw, ok := strings.Cut(name, "?")
	if !ok || !IsURL(name) {
		return false
	}
	raw, _, _ = strings.Cut(raw, "#")
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		switch {
		case key == "endpoint":
			if strings.Contains(v, ":"+redacted+userinfoAt) || strings.Contains(v, "//"+redacted+userinfoAt) {
				return true
			}
		case !shownParam(key) && v == redacted:
			return true
		}
	}
	return false
}

// maskedError is an error whose text has the secrets of the URL it came
// from masked (querySecrets); it still matches what it wraps.
type maskedError struct {
	err error
	r   *strings.Replacer
}

func (e *maskedError) Error() string { return e.r.Replace(e.err.Error()) }

func (e *maskedError) Unwrap() error { return e.err }

// maskErr is err with the secrets of name's query masked in its text.
func maskErr(name string, err error) error {
	if err == nil || !strings.Contains(name, "?") {
		return err
	}
	return &maskedError{err: err, r: querySecrets(name)}
}
