package fileset

import "testing"

// TestIsRedactedOnlyWhatTheMaskWrites: a name is taken as masked only
// where RedactURL writes a mask: a secret parameter's whole value, or the
// endpoint's userinfo secret. A store setting the user gave the value
// REDACTED (region=REDACTED, profile=REDACTEDteam), which no mask writes,
// was taken as masked too, and such a pending object was never opened at
// its name.
func TestIsRedactedOnlyWhatTheMaskWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"s3://b/k.parquet?region=REDACTED", false},
		{"s3://b/k.parquet?profile=REDACTEDteam&region=x", false},
		{"s3://b/k.parquet?endpoint=http://host&role=REDACTED", false},
		{"s3://b/k.parquet?secret_access_key=REDACTED", true},
		{"s3://b/k.parquet?region=x&secret%5Fkey=REDACTED", true},
		{"s3://b/k.parquet?endpoint=http://me:REDACTED@host", true},
		{"s3://b/k.parquet?endpoint=http%3A%2F%2Fme:REDACTED@host", true},
		{"s3://b/k.parquet?endpoint=http%3a//REDACTED@host", true},
		{"/data/round?region=REDACTED.parquet", false},
	} {
		if got := IsRedacted(tc.name); got != tc.want {
			t.Errorf("IsRedacted(%s) = %v; want %v", tc.name, got, tc.want)
		}
	}
	for _, n := range []string{
		"s3://b/k.parquet?region=x&token=abc",
		"s3://b/k.parquet?endpoint=http://me:pw@host",
		"s3://b/k.parquet?endpoint=http%3a%2f%2fme%3apw%40host",
	} {
		if m := RedactURL(n); !IsRedacted(m) {
			t.Errorf("IsRedacted(RedactURL(%s) = %s) is false", n, m)
		}
	}
}
