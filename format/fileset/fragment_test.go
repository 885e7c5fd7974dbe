package fileset

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A name with a URL fragment is refused, and the message shows the "#" it
// complains of without the query's values. Before, the name was shown cut
// at its "?", so for s3://b/k?endpoint=…#f the fragment was out of sight.
func TestResolveNamesTheFragment(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"s3://b/a.parquet?endpoint=http://10.9.8.7:9000&region=xx#f.parquet", `fragment "#f.parquet"`},
		{"s3://b/d/#2?endpoint=http://10.9.8.7:9000", `fragment "#2"`},
		{"s3://b/a#1.parquet", `fragment "#1.parquet"`},
	} {
		_, err := Resolve(context.Background(), []string{tc.arg}, Options{})
		if err == nil || !errors.Is(err, ErrBadArgument) {
			t.Fatalf("%s: %v, want a bad argument", tc.arg, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "%23") {
			t.Errorf("%s: %q does not name the %s", tc.arg, msg, tc.want)
		}
		if strings.Contains(msg, "10.9.8.7") || strings.Contains(msg, "region") {
			t.Errorf("%s: %q shows the query", tc.arg, msg)
		}
	}
}
