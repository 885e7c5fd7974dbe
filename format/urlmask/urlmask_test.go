package urlmask

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
)

// shownCases are the spellings a URL shown in a message may take, with
// how it is shown: every one the callers pass (a base URL with or without
// userinfo, a password, a token user, escapes kept, an object-store URL,
// a query secret, which is not this mask's, and a URL that does not parse).
var shownCases = []struct{ name, in, want string }{
	{"empty", "", ""},
	{"no userinfo", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
	{"no userinfo, escapes kept", "http://127.0.0.1:8000/v1?a=%41", "http://127.0.0.1:8000/v1?a=%41"},
	{"no userinfo, path escape kept", "http://h/a%2Fb/v1/", "http://h/a%2Fb/v1/"},
	{"password", "http://hone:pw@127.0.0.1:8000/v1", "http://hone:xxxxx@127.0.0.1:8000/v1"},
	{"https password, port, trailing slash", "https://u:p@h:8443/v1/", "https://u:xxxxx@h:8443/v1/"},
	{"empty password", "http://hone:@h/v1", "http://hone:xxxxx@h/v1"},
	{"password percent-encoded", "http://us%40er:p%40ss%2Fw@h/v1", "http://us%40er:xxxxx@h/v1"},
	{"password with path escape", "http://u:p@h/a%2Fb", "http://u:xxxxx@h/a%2Fb"},
	{"password, fragment", "http://u:p@h/v1#f", "http://u:xxxxx@h/v1#f"},
	{"password, IPv6 host", "http://u:p@[::1]:8000/v1", "http://u:xxxxx@[::1]:8000/v1"},
	{"password, scheme lowercased", "HTTP://u:p@H/v1", "http://u:xxxxx@H/v1"},
	{"token user", "http://sk-abc123@127.0.0.1:8000/v1", "http://xxxxx@127.0.0.1:8000/v1"},
	{"token user percent-encoded", "https://sk%2Fabc%40x@h/v1", "https://xxxxx@h/v1"},
	{"empty userinfo", "http://@h/v1", "http://xxxxx@h/v1"},
	{"no scheme, authority", "//u:p@h/v1", "//u:xxxxx@h/v1"},
	{"no scheme, host:port", "localhost:8000/v1", "localhost:8000/v1"},
	{"s3 access key and secret", "s3://AKID:SECRET@bucket/key", "s3://AKID:xxxxx@bucket/key"},
	{"s3 no userinfo", "s3://bucket/key?region=us-east-1", "s3://bucket/key?region=us-east-1"},
	{"s3 endpoint query not masked here", "s3://b/k?endpoint=http%3A%2F%2Fu%3Ap%40h", "s3://b/k?endpoint=http%3A%2F%2Fu%3Ap%40h"},
	{"query secret not masked here", "https://h/o?X-Amz-Signature=abc&X-Amz-Credential=AKID", "https://h/o?X-Amz-Signature=abc&X-Amz-Credential=AKID"},
	{"password and query secret", "https://u:p@h/o?X-Amz-Signature=abc", "https://u:xxxxx@h/o?X-Amz-Signature=abc"},
	{"bad escape in password: masked by its text", "http://u:p%zz@h/v1", "http://u:xxxxx@h/v1"},
	{"space in password: masked by its text", "http://u:p w@h/v1", "http://u:xxxxx@h/v1"},
	{"slash in password: masked by its text", "http://u:p/w@h/v1", "http://u:xxxxx@h/v1"},
	{"at sign in password: masked by its text", "http://u:p@w x@h/v1?q=@", "http://u:xxxxx@h/v1?q=@"},
	{"token with space: masked whole", "http://sk abc@h/v1", "http://xxxxx@h/v1"},
	{"unclosed IPv6: masked by its text", "http://u:p@[::1", "http://u:xxxxx@[::1"},
	{"control byte: masked by its text", "http://u:p@h/\x7f", "http://u:xxxxx@h/\x7f"},
	{"no scheme before colon: masked by its text", "://u:p@h", "://u:xxxxx@h"},
	{"does not parse, no userinfo: as given", "http://h w/v1", "http://h w/v1"},
	{"no //, parsed as opaque: masked by its text", "hone:pw@127.0.0.1:8000/v1", "hone:xxxxx@127.0.0.1:8000/v1"},
	{"scheme without //: masked by its text", "http:u:pw@h/v1", "http:xxxxx@h/v1"},
	{"no scheme, no //: a path, as given", "sk-abc@h/v1", "sk-abc@h/v1"},
	{"opaque, no userinfo: as given", "localhost:8000/v1", "localhost:8000/v1"},
	{"does not parse, @ only in the query: as given", "http://h w/v1?to=a@b", "http://h w/v1?to=a@b"},
}

// TestShown: every spelling in shownCases is shown as it was by the two
// copies this function replaced (internal/flagval.Shown and serve/vllm's
// shown), which the same table was run against before they were removed,
// but for a URL that does not parse: they printed it as given, secret and
// all, and Shown masks it by its text.
func TestShown(t *testing.T) {
	for _, c := range shownCases {
		if got := Shown(c.in); got != c.want {
			t.Errorf("%s: Shown(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestShownErr: a client's *url.Error has its URL's token or password
// masked and still wraps the same cause; any other error, a wrapped
// *url.Error among them, is returned as it is.
func TestShownErr(t *testing.T) {
	cause := errors.New("connection refused")
	tok := &url.Error{Op: "Post", URL: "http://sk-abc@h/v1/chat", Err: cause}
	pw := &url.Error{Op: "Post", URL: "http://u:p@h/v1/chat", Err: cause}
	for _, c := range []struct {
		name string
		in   error
		want string
		same bool
	}{
		{"token user", tok, `Post "http://xxxxx@h/v1/chat": connection refused`, false},
		{"password", pw, `Post "http://u:xxxxx@h/v1/chat": connection refused`, false},
		{"wrapped", fmt.Errorf("call: %w", tok), `call: Post "http://sk-abc@h/v1/chat": connection refused`, true},
		{"not a url.Error", fmt.Errorf("http://sk-abc@h/v1 refused: %w", cause), "http://sk-abc@h/v1 refused: connection refused", true},
	} {
		got := ShownErr(c.in)
		if got.Error() != c.want || (got == c.in) != c.same {
			t.Errorf("%s: ShownErr = %v (same %v), want %q (same %v)", c.name, got, got == c.in, c.want, c.same)
		}
		if !errors.Is(got, cause) {
			t.Errorf("%s: ShownErr = %v no longer wraps its cause", c.name, got)
		}
	}
	if ShownErr(nil) != nil {
		t.Error("ShownErr(nil) is not nil")
	}
}
