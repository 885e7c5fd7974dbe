package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestShardInPlaceRefusedObjectQuery: -o naming the input object with
// another query (its parameters in another order, a region added, the
// endpoint spelled with a trailing "/", or given by AWS_ENDPOINT_URL on
// one side and by the query on the other) is re-scoring in place as much
// as the same URL twice. The check compared the URLs, query and all, so
// --shard 0/2 wrote its half of the groups over the whole object and
// exited 0.
func TestShardInPlaceRefusedObjectQuery(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	b, err := fileset.ReadFile(context.Background(), scenario(t, t.TempDir(), "x.parquet", 0, 4, 2))
	if err != nil {
		t.Fatal(err)
	}
	ep := s3.Endpoint
	for _, c := range []struct {
		name, in, out string
		env           []string
	}{
		{"reordered", s3.URL("hone", "x.parquet"),
			"s3://hone/x.parquet?region=us-east-1&disable_https=true&use_path_style=true&endpoint=" + ep, nil},
		{"region added", "s3://hone/x.parquet?endpoint=" + ep + "&use_path_style=true",
			s3.URL("hone", "x.parquet") + "&awssdk=v2", nil},
		{"endpoint with a slash", s3.URL("hone", "x.parquet"),
			"s3://hone/x.parquet?endpoint=" + ep + "/&use_path_style=true", nil},
		{"endpoint from the environment", "s3://hone/x.parquet?use_path_style=true",
			s3.URL("hone", "x.parquet"), []string{"AWS_ENDPOINT_URL=" + ep}},
		{"key spelled with //", s3.URL("hone", "x.parquet"),
			"s3://hone//x.parquet?use_path_style=true&endpoint=" + ep, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := fileset.WriteFile(context.Background(), s3.URL("hone", "x.parquet"), b); err != nil {
				t.Fatal(err)
			}
			r := runBin(t, c.env, nil, "-o", c.out, "--shard", "0/2", "--scorer", "env", c.in)
			got, err := fileset.ReadFile(context.Background(), s3.URL("hone", "x.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			if r.code != 2 || !bytes.Equal(got, b) || !strings.Contains(r.stderr, "names an input") {
				t.Fatalf("-o %s, input %s: exit %d (want 2), input unchanged %v:\n%s", c.out, c.in, r.code, bytes.Equal(got, b), r.stderr)
			}
		})
	}
}

// TestShardToOtherStoreSameKey: the same bucket and key on another
// endpoint is another object (a copy from one MinIO to another), not
// the input: --shard writes its part there.
func TestShardToOtherStoreSameKey(t *testing.T) {
	src := fakes3d.StartTest(t, "hone")
	dst := fakes3d.StartTest(t, "hone")
	in := src.URL("hone", "x.parquet")
	b, err := fileset.ReadFile(context.Background(), scenario(t, t.TempDir(), "x.parquet", 0, 4, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(context.Background(), in, b); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, nil, "-o", dst.URL("hone", "x.parquet"), "--shard", "0/2", "--scorer", "env", in)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
	}
	if got, _ := fileset.ReadFile(context.Background(), in); !bytes.Equal(got, b) {
		t.Error("the input on the first store changed")
	}
	if _, err := fileset.StatFile(context.Background(), dst.URL("hone", "x.parquet")); err != nil {
		t.Errorf("no part on the second store: %v", err)
	}
}

// TestShardInPlaceRefusedEndpointAlias: -o naming the input object
// through another host name of its store's address (localhost for
// 127.0.0.1, as a short and a full cluster DNS name of one service) is
// re-scoring in place. The check compared the endpoints' host names as
// written, so --shard 0/2 wrote its half over the whole input, exit 0.
func TestShardInPlaceRefusedEndpointAlias(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	b, err := fileset.ReadFile(context.Background(), scenario(t, t.TempDir(), "x.parquet", 0, 4, 2))
	if err != nil {
		t.Fatal(err)
	}
	in := s3.URL("hone", "x.parquet")
	if err := fileset.WriteFile(context.Background(), in, b); err != nil {
		t.Fatal(err)
	}
	alias := "s3://hone/x.parquet?use_path_style=true&region=us-east-1&endpoint=" + strings.Replace(s3.Endpoint, "127.0.0.1", "localhost", 1)
	r := runBin(t, nil, nil, "-o", alias, "--shard", "0/2", "--scorer", "env", in)
	got, err := fileset.ReadFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 2 || !bytes.Equal(got, b) || !strings.Contains(r.stderr, "names an input") {
		t.Fatalf("-o %s, input %s: exit %d (want 2), input unchanged %v:\n%s", alias, in, r.code, bytes.Equal(got, b), r.stderr)
	}
}
