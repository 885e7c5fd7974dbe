package fileset

import (
	"context"
	"strings"
	"testing"
)

// TestArgErrorsHideQuerySecrets: the errors that quote an object-store
// URL with its query (a parameter the driver does not know, a bucket
// that is not there) mask what may be a secret there, the value of a
// parameter other than the store's known settings and the password of
// the endpoint's user, and still name the parameter and the store. A
// key pasted into the query (secret_access_key=…, as other tools take
// it) was printed twice, into the logs of every pod that failed.
func TestArgErrorsHideQuerySecrets(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	t.Chdir(t.TempDir()) // the failed output's bytes are kept there
	const secret = "SUPERSECRETKEY42"
	check := func(what string, err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v; the secret is printed", what, err)
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", what, err, w)
			}
		}
	}
	_, err := Resolve(ctx, []string{s3.url("bkt", "in/") + "&secret_access_key=" + secret}, Options{})
	check("an input with a key in its query", err, `unknown query parameter "secret_access_key"`, "secret_access_key=", "endpoint="+s3.srv.Endpoint)
	out, err := Create(ctx, s3.url("bkt", "out.parquet")+"&aws_secret="+secret)
	if err == nil {
		err = out.Commit()
	}
	check("an output with a key in its query", err, `unknown query parameter "aws_secret"`)

	withUser := strings.Replace(s3.url("nobkt", "x.parquet"), "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	_, err = Resolve(ctx, []string{withUser}, Options{})
	check("a missing bucket on an endpoint with a password", err, "does not exist", "me:")
}

// TestEndpointPasswordWithReservedCharsHidden: an endpoint password
// holding a character a URL reserves ('/', '@', ':', '%'), written
// escaped once (what the store reads as the character itself, the
// driver then failing to parse the endpoint and printing it) or twice
// (what a store reads as the escaped password, as it must be to work),
// is masked in errors and in RedactURL as a plain one is. It was printed
// whole: the mask looked only for the password decoded once or escaped
// again once, never as written.
func TestEndpointPasswordWithReservedCharsHidden(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const tail = "ss42WORD" // what follows the reserved character
	for _, pw := range []string{"pa%2F" + tail, "pa%252F" + tail, "pa%40" + tail, "pa%2540" + tail,
		"pa:" + tail, "pa%3A" + tail, "pa/" + tail, "pa@" + tail, "pa%25" + tail} {
		name := strings.Replace(s3.url("nobkt", "x.parquet"), "endpoint=http://", "endpoint=http://me:"+pw+"@", 1)
		if got := RedactURL(name); strings.Contains(got, tail) || !strings.Contains(got, "me:REDACTED@") {
			t.Errorf("password %s: RedactURL gives %s; want it masked", pw, got)
		}
		_, err := Resolve(ctx, []string{name}, Options{})
		if err == nil {
			t.Fatalf("password %s: no error for a missing bucket", pw)
		}
		if strings.Contains(err.Error(), tail) {
			t.Errorf("password %s: %v; the password is printed", pw, err)
		}
	}
}

// TestRedactURLKeepsHost: masking an endpoint's password leaves its host,
// which a resume compares masked (two stores must not read as one),
// even where the endpoint's path holds an '@'.
func TestRedactURLKeepsHost(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"s3://b/k?endpoint=http://me:pw@hostA:9000/p@x", "s3://b/k?endpoint=http://me:pw@hostB:9000/p@x"},
		{"s3://b/k?endpoint=http://me:p%252Fw@hostA/p@x", "s3://b/k?endpoint=http://me:p%252Fw@hostB/p@x"},
		{"s3://b/k?endpoint=http://me:pw@hostA", "s3://b/k?endpoint=http://me:pw@hostB"},
	} {
		if ra, rb := RedactURL(c.a), RedactURL(c.b); ra == rb || strings.Contains(ra, "pw") {
			t.Errorf("RedactURL(%s) = %s, RedactURL(%s) = %s; want the hosts kept apart and the password masked", c.a, ra, c.b, rb)
		}
	}
}

// TestEndpointUserTokenHidden: an endpoint whose userinfo is one token
// with no password (http://TOKEN@host, as a token-authenticated gateway
// takes it) has that token masked in errors and in RedactURL as a
// password is, while the host is still shown. It was printed whole: the
// mask looked only for what follows a ':' in the userinfo.
func TestEndpointUserTokenHidden(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const token = "ghp_TOKEN42secret"
	for _, tok := range []string{token, "a%2F" + token, "a%252F" + token} {
		name := strings.Replace(s3.url("nobkt", "x.parquet"), "endpoint=http://", "endpoint=http://"+tok+"@", 1)
		got := RedactURL(name)
		if strings.Contains(got, token) || !strings.Contains(got, "//REDACTED@") {
			t.Errorf("token %s: RedactURL gives %s; want it masked", tok, got)
		}
		_, err := Resolve(ctx, []string{name}, Options{})
		if err == nil {
			t.Fatalf("token %s: no error for a missing bucket", tok)
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("token %s: %v; the token is printed", tok, err)
		}
	}
	if a, b := RedactURL("s3://b/k?endpoint=http://tok@hostA"), RedactURL("s3://b/k?endpoint=http://tok@hostB"); a == b {
		t.Errorf("RedactURL gives %s for both hosts; want them kept apart", a)
	}
}

// TestEscapedEndpointSecretHidden: an endpoint parameter written
// percent-escaped whole (endpoint=http%3A%2F%2Fme%3APASSWORD%40host, as a
// URL builder or a shell-quoting script writes it), or escaped in part,
// has its password or token masked in RedactURL and in errors as the
// unescaped spelling has, the host still shown. It was printed whole:
// the mask looked for the userinfo only as ':' … '@' written plain.
func TestEscapedEndpointSecretHidden(t *testing.T) {
	s3 := newFaultyS3(t, "bkt")
	ctx := context.Background()
	const secret = "PW42secretWORD"
	host := strings.TrimPrefix(s3.srv.Endpoint, "http://")
	escHost := strings.ReplaceAll(host, ":", "%3A")
	for _, ep := range []string{
		"http%3A%2F%2Fme%3A" + secret + "%40" + escHost,
		"http%3a%2f%2fme%3a" + secret + "%40" + host,
		"http%3A%2F%2F" + secret + "%40" + escHost,
		"http://me%3A" + secret + "%40" + host,
		"http%3A//me:" + secret + "%40" + host,
		"http%3A%2F%2Fme%3Apa%252F" + secret + "%40" + escHost,
		"http%3A%2F%2F%6De%3A" + secret + "%40" + escHost,
		// Lower-case escapes, as some URL builders write them.
		"http%3a%2f%2f" + secret + "%40" + host,
		"http%253a%252f%252fme%253a" + secret + "%2540" + host,
		"http://me%3a" + secret + "%40" + host,
		"http%3a%2f%2fme%3apa%2f" + secret + "%40" + host,
	} {
		name := strings.Replace(s3.url("nobkt", "x.parquet"), "endpoint="+s3.srv.Endpoint, "endpoint="+ep, 1)
		got := RedactURL(name)
		if strings.Contains(got, secret) || !IsRedacted(got) {
			t.Errorf("endpoint %s: RedactURL gives %s; want the secret masked", ep, got)
		}
		if !strings.Contains(got, "127.0.0.1") {
			t.Errorf("endpoint %s: RedactURL gives %s; want the host kept", ep, got)
		}
		_, err := Resolve(ctx, []string{name}, Options{})
		if err == nil {
			t.Fatalf("endpoint %s: no error for a missing bucket", ep)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("endpoint %s: %v; the secret is printed", ep, err)
		}
	}
	a := RedactURL("s3://b/k?endpoint=http%3A%2F%2Fme%3Apw%40hostA")
	if b := RedactURL("s3://b/k?endpoint=http%3A%2F%2Fme%3Apw%40hostB"); a == b {
		t.Errorf("RedactURL gives %s for both hosts; want them kept apart", a)
	}
}
