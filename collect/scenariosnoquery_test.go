package collect_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/format/fileset/s3test"

	_ "gocloud.dev/blob/s3blob" // s3://, as the hone commands link it
)

// TestScenarioErrorsNameObjectWithoutQuery: a bad line of a scenario file
// read from an object store is named "OBJECT:LINE" as the user names the
// object, without the query that opens its bucket
// (endpoint=…&use_path_style=…), which put the store's address before the
// line number of every error; so is a Parquet object that is not one.
func TestScenarioErrorsNameObjectWithoutQuery(t *testing.T) {
	s3 := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	body := `{"id":"a"}` + "\n" + `{"id":"a"}` + "\n"
	if _, err := s3.Backend.PutObject("bkt", "sc.jsonl", nil, strings.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
	_, err := collect.ReadScenarios(context.Background(), s3.URL("bkt", "sc.jsonl"))
	if err == nil || !strings.Contains(err.Error(), `s3://bkt/sc.jsonl:2: scenario id "a" already on line 1`) || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("a scenario id twice in an object: %v; want an error naming s3://bkt/sc.jsonl:2 without its query", err)
	}
	if _, err := s3.Backend.PutObject("bkt", "sc.parquet", nil, strings.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
	_, err = collect.ReadScenarios(context.Background(), s3.URL("bkt", "sc.parquet"))
	if err == nil || !strings.Contains(err.Error(), "scenarios s3://bkt/sc.parquet: ") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("an object named .parquet holding JSON lines: %v; want an error naming s3://bkt/sc.parquet without its query", err)
	}
}
