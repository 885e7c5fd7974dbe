package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// hone-inspect takes s3:// URLs like local paths: an object, a folder and a
// glob as inputs, and -o as an output, against a real S3 protocol server.
func TestObjectStoreInputsAndOutput(t *testing.T) {
	dir, _, _ := fixtures(t)
	s3 := fakes3d.StartTest(t, "runs")
	for _, name := range []string{"a.parquet", "b.parquet"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		r := run(t, b, "cat", "-o", s3.URL("runs", "round-1/"+name), "-")
		if r.code != 0 {
			t.Fatalf("cat to S3: exit %d\n%s", r.code, r.stderr)
		}
	}
	local := statsByBase(t, mustRun(t, nil, "stats", "--json", dir).stdout)
	for _, arg := range []string{s3.URL("runs", "round-1"), s3.URL("runs", "round-1/*.parquet")} {
		if got := statsByBase(t, mustRun(t, nil, "stats", "--json", arg).stdout); !reflect.DeepEqual(got, local) {
			t.Errorf("stats %s:\n%v\nwant, as for the local folder:\n%v", arg, got, local)
		}
	}
	if got, want := mustRun(t, nil, "head", s3.URL("runs", "round-1/b.parquet")).stdout, mustRun(t, nil, "head", filepath.Join(dir, "b.parquet")).stdout; got != want {
		t.Errorf("head of an object:\n%s\nwant:\n%s", got, want)
	}
	r := run(t, nil, "stats", s3.URL("runs", "round-2"))
	if r.code != 2 || !strings.Contains(r.stderr, "s3://runs/round-2") {
		t.Errorf("a missing folder: exit %d, %q; want 2 naming the URL", r.code, r.stderr)
	}
	if n := s3.Requests(http.MethodGet); n == 0 {
		t.Error("no GET reached the fake S3")
	}
}

// statsByBase is stats --json with each file's path cut to its base name,
// so a folder's stats and an S3 prefix's compare.
func statsByBase(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	files, _ := m["files"].([]any)
	if len(files) == 0 {
		t.Fatalf("stats --json lists no files:\n%s", out)
	}
	for _, f := range files {
		fm := f.(map[string]any)
		p, _, _ := strings.Cut(fm["path"].(string), "?")
		fm["path"] = path.Base(filepath.ToSlash(p))
	}
	return m
}

// Reading only a file's footer over S3 fetches the footer and the magic
// number (in requests of fileset.ReadAround at least), not the object.
func TestObjectStoreFooterOnly(t *testing.T) {
	s3 := fakes3d.StartTest(t, "runs")
	rng := rand.New(rand.NewPCG(1, 2))
	var gs []trajectory.Group
	for g := range 200 {
		text := make([]byte, 16<<10)
		for i := range text {
			text[i] = 'a' + byte(rng.IntN(26)) // incompressible enough
		}
		gs = append(gs, trajectory.Group{ID: fmt.Sprintf("g%d", g), Trajectories: []trajectory.Trajectory{
			traj(fmt.Sprintf("t%d", g), "math", 1, f(1), 1)}})
		gs[g].Trajectories[0].Messages[0].Content = string(text)
	}
	name := s3.URL("runs", "big.parquet")
	if err := trajectory.WriteFile(context.Background(), name, gs, trajectory.WriterOptions{RowGroupBytes: 200 << 10}); err != nil {
		t.Fatal(err)
	}
	f, err := fileset.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	size := f.Size
	tail := make([]byte, 8)
	if _, err := f.ReadAt(tail, size-8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	footer := int64(tail[0]) | int64(tail[1])<<8 | int64(tail[2])<<16 | int64(tail[3])<<24 // little-endian length before "PAR1"
	before := s3.SentBytes()
	r := mustRun(t, nil, "schema", name)
	read := s3.SentBytes() - before
	if want := footer + 8 + fileset.ReadAround; size < 2<<20 || read > want {
		t.Errorf("schema of a %d-byte object (footer %d bytes) read %d bytes; want at most %d\n%s", size, footer, read, want, r.stdout)
	}
	t.Logf("schema of a %d-byte object, footer %d bytes: read %d bytes", size, footer, read)
}
