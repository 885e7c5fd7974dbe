// Package urlmask is the one way a URL that a stage calls (an
// OpenAI-compatible base URL, vLLM's upstream) is shown in a log line or
// an error: the secret of its userinfo masked. It lives in format, which
// every stage may import, so that hone-collect, hone-score and hone-serve
// print one URL alike: serve may not import internal/flagval, so a mask
// kept there left serve to keep a copy of its own.
//
// An object-store URL's query (s3://b/k?endpoint=http://u:PW@h) is
// masked by format/fileset's RedactURL, which writes REDACTED and keeps
// the name a manifest stores matchable (IsRedacted); this package masks
// the userinfo of the URL itself only.
package urlmask
