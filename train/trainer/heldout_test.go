package trainer

import (
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
)

// TestAllHeldOutNamesObjectWithoutQuery: inputs whose every trajectory is
// held out are bad input naming each input as the user names it: an
// object-store URL without the query that opens its bucket
// (endpoint=…&use_path_style=…), which named no input and put the store's
// address in the message.
func TestAllHeldOutNamesObjectWithoutQuery(t *testing.T) {
	h := HeldOut{Read: 1, Rows: []string{"s3://bkt/in/a.parquet row 0 (group g, trajectory t)"}}
	names := []string{
		"s3://bkt/in/a.parquet?endpoint=http://127.0.0.1:9000&use_path_style=true",
		"/data/b.parquet",
	}
	err := h.Report(nil, names)
	if !errors.Is(err, ErrAllHeldOut) || !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("Report: %v, want ErrAllHeldOut and bad input", err)
	}
	if !strings.Contains(err.Error(), "of s3://bkt/in/a.parquet, /data/b.parquet are in split") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("Report: %v; want the inputs named without their query", err)
	}
}
