package fileset

import (
	"fmt"
	"net/url"
	"strings"
)

// redacted is what a masked value of an object-store URL's query shows.
const redacted = "REDACTED"

// querySecrets is a replacer that masks, wherever a message quotes the
// object-store URL name with its query (as written or as a driver prints
// it), what the query may hold of a secret: the value of a parameter
// other than the stores' own settings (someone's secret_access_key=…,
// which the driver refuses in an error that quotes the URL) and the
// password of the endpoint's user (http://user:PASSWORD@host). Pod logs
// are read by more people than the store's keys are given to.
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
			if u, err := url.Parse(val); err == nil && u.User != nil {
				if pw, set := u.User.Password(); set && pw != "" {
					// As written (escaped or not) between the user and the host.
					mask := fmt.Sprintf(":%s@", redacted)
					pairs = append(pairs, fmt.Sprintf(":%s@", pw), mask, fmt.Sprintf(":%s@", url.QueryEscape(pw)), mask)
				}
			}
		case !shownParam(key):
			pairs = append(pairs, kv, k+"="+redacted, key+"="+val, key+"="+redacted)
		}
	}
	return strings.NewReplacer(pairs...)
}

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
