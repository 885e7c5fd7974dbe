package shard

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec, index string
		want        Shard
	}{
		{"0/1", "", Shard{0, 1}},
		{"2/4", "", Shard{2, 4}},
		{"auto/8", "7", Shard{7, 8}},
		{"3/4", "1", Shard{3, 4}}, // an explicit index wins over the job's
	} {
		got, err := Parse(tc.spec, tc.index)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q, %q) = %v, %v; want %v", tc.spec, tc.index, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ spec, index, mention string }{
		{"4/4", "", "from 0 to 3"},
		{"-1/4", "", "from 0 to 3"},
		{"1", "", "want i/n"},
		{"0/0", "", "≥ 1"},
		{"x/2", "", "from 0 to 1"},
		{"auto/4", "", "JOB_COMPLETION_INDEX"},
		{"auto/4", "4", "from 0 to 3"},
	} {
		if _, err := Parse(tc.spec, tc.index); err == nil || !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), tc.spec) {
			t.Errorf("Parse(%q, %q): %v; want an error naming it and saying %q", tc.spec, tc.index, err, tc.mention)
		}
	}
}

// Every place belongs to exactly one shard, for any count.
func TestPlacesPartition(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		for _, total := range []int{0, 1, 5, 20} {
			var all []int
			for i := range n {
				all = append(all, Shard{i, n}.Places(total)...)
			}
			slices.Sort(all)
			want := make([]int, total)
			for k := range want {
				want[k] = k
			}
			if !slices.Equal(all, want) && !(len(all) == 0 && total == 0) {
				t.Errorf("n=%d total=%d: places %v", n, total, all)
			}
		}
	}
	if got := (Shard{1, 3}).Places(8); !slices.Equal(got, []int{1, 4, 7}) {
		t.Errorf("1/3 of 8: %v", got)
	}
	if !(Shard{}).Owns(5) || (Shard{}).String() != "" {
		t.Error("the zero Shard is not the whole run")
	}
}

func TestOutput(t *testing.T) {
	s := Shard{3, 16}
	for in, want := range map[string]string{
		"out.parquet":               "out.parquet",
		"runs/r1/":                  "runs/r1/part-00003-of-00016.parquet",
		"s3://b/r1/?region=x&y=z":   "s3://b/r1/part-00003-of-00016.parquet?region=x&y=z",
		"s3://b/r1/x.parquet?a=b/c": "s3://b/r1/x.parquet?a=b/c",
	} {
		if got, err := s.Output(in); err != nil || got != want {
			t.Errorf("Output(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := (Shard{}).Output("runs/r1/"); !errors.Is(err, ErrFolderWhole) {
		t.Errorf("a folder output without a shard: %v", err)
	}
	// A run of one shard (round.yaml's -p shards=1) writes its one part.
	one, err := Parse("0/1", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := one.Output("s3://b/r1/?region=x"); err != nil || got != "s3://b/r1/part-00000-of-00001.parquet?region=x" {
		t.Errorf("0/1: Output = %q, %v; want the part 0 of 1", got, err)
	}
}

// CheckFolder takes a folder whose parts are all there, with other files
// beside them, and refuses one missing a part or holding parts of two
// counts, naming the missing parts (the first few, the rest counted).
func TestCheckFolder(t *testing.T) {
	part := func(dir string, i, n int, query string) string {
		return fmt.Sprintf("%spart-%05d-of-%05d.parquet%s", dir, i, n, query)
	}
	q := "?region=x&endpoint=http://h"
	if err := CheckFolder([]string{part("s3://b/r/", 0, 2, q), part("s3://b/r/", 1, 2, q), "s3://b/r/extra.parquet" + q}); err != nil {
		t.Errorf("every part there: %v", err)
	}
	if err := CheckFolder([]string{"a.parquet", "part-1.parquet"}); err != nil {
		t.Errorf("no parts: %v", err)
	}
	err := CheckFolder([]string{part("s3://b/r/", 0, 4, q), part("s3://b/r/", 1, 4, q), part("s3://b/r/", 3, 4, q)})
	if !errors.Is(err, ErrMissingPart) || !strings.Contains(err.Error(), "part-00002-of-00004.parquet") || !strings.Contains(err.Error(), "1 of its 4") {
		t.Errorf("part 2 of 4 missing: %v", err)
	}
	var many []string
	for i := 0; i < 100; i += 10 {
		many = append(many, part("d/", i, 100, ""))
	}
	if err := CheckFolder(many); !errors.Is(err, ErrMissingPart) || !strings.Contains(err.Error(), "90 of its 100") || !strings.Contains(err.Error(), "and 82 more") {
		t.Errorf("90 of 100 missing: %v", err)
	}
	if err := CheckFolder([]string{part("d/", 0, 1, ""), part("d/", 0, 2, ""), part("d/", 1, 2, "")}); !errors.Is(err, ErrMissingPart) || !strings.Contains(err.Error(), "1 and 2 parts") {
		t.Errorf("parts of two counts: %v", err)
	}
}
