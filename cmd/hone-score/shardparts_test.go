package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder of shard parts read as an input must hold every part its names
// count: with part 1 of 3 missing (its job failed, or has not finished),
// the folder was read as if whole, and the next stage scored or trained
// on two thirds of the round without a word. It is refused as bad input,
// naming the missing part; a part named alone is still read as it is.
func TestFolderMissingAShardPart(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 3, 4)
	b := scenario(t, dir, "b.parquet", 3, 3, 3)
	scorers := []string{"--scorer", "env"}
	parts := filepath.Join(dir, "scored") + "/"
	if err := os.Mkdir(parts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"0/3", "2/3"} {
		if r := runBin(t, nil, nil, append(append([]string{"-o", parts, "--shard", spec}, scorers...), a, b)...); r.code != 0 {
			t.Fatalf("shard %s: exit %d\n%s", spec, r.code, r.stderr)
		}
	}
	out := filepath.Join(dir, "rescored.parquet")
	r := runBin(t, nil, nil, append(append([]string{"-o", out}, scorers...), parts)...)
	if r.code != 2 || !strings.Contains(r.stderr, "part-00001-of-00003.parquet") || !strings.Contains(r.stderr, parts) {
		t.Fatalf("a folder missing part 1 of 3: exit %d, %q; want bad input (2) naming the folder and the missing part", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output was written from a folder missing a part")
	}
	one := filepath.Join(parts, "part-00000-of-00003.parquet")
	if r := runBin(t, nil, nil, append(append([]string{"-o", out}, scorers...), one)...); r.code != 0 {
		t.Fatalf("one part named alone: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBin(t, nil, nil, append(append([]string{"-o", parts, "--shard", "1/3"}, scorers...), a, b)...); r.code != 0 {
		t.Fatalf("shard 1/3: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBin(t, nil, nil, append(append([]string{"-o", out}, scorers...), parts)...); r.code != 0 {
		t.Fatalf("the folder with every part: exit %d\n%s", r.code, r.stderr)
	}
	if gs := readBack(t, out); len(gs) != 6 {
		t.Errorf("read %d groups from the three parts, want 6", len(gs))
	}
}
