// Package shard is the one rule by which a stage run as n parallel jobs
// splits its work: shard i of n takes the units (scenarios for
// hone-collect, groups for hone-score) whose place k in the whole run has
// k mod n == i. Units are whole groups, so a group is never split; every
// unit keeps the id and seed it has in an unsharded run, so the parts
// together hold the same groups as one run would (in another order).
//
// A shard is written "i/n", or "auto/n" where the index comes from the
// job runner (Kubernetes' Indexed Jobs set JOB_COMPLETION_INDEX; the
// command reads it and passes it to Parse). A shard whose output names a
// folder (ends in "/") writes part-IIIII-of-NNNNN.parquet in it, and the
// readers take the folder. The part's name records the count, so a reader
// of the folder checks that every part is there (CheckFolder): a shard job
// that failed or has not finished leaves a folder that is not the run.
package shard

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
)

// Shard is one of Count parts of a run. The zero value is the whole run.
type Shard struct {
	Index, Count int
}

// Parse reads "i/n" or "auto/n"; for "auto", index is the job's index as
// the job runner gave it ("" when none did, which is an error).
func Parse(spec, index string) (Shard, error) {
	i, n, ok := strings.Cut(spec, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/n or auto/n, e.g. 0/4", spec)
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		return Shard{}, fmt.Errorf("shard %q: the count n must be a whole number ≥ 1", spec)
	}
	if i == "auto" {
		if index == "" {
			return Shard{}, fmt.Errorf("shard %q: auto takes the index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), which is not set", spec)
		}
		i = index
	}
	idx, err := strconv.Atoi(i)
	if err != nil || idx < 0 || idx >= count {
		return Shard{}, fmt.Errorf("shard %q: the index %q must be a whole number from 0 to %d", spec, i, count-1)
	}
	return Shard{Index: idx, Count: count}, nil
}

// Whole reports whether s is the whole run (no sharding).
func (s Shard) Whole() bool { return s.Count <= 1 }

// Owns reports whether the unit at place k of the whole run is s's.
func (s Shard) Owns(k int) bool { return s.Whole() || k%s.Count == s.Index }

// Places returns the places in [0, total) that s owns, in order.
func (s Shard) Places(total int) []int {
	var out []int
	for k := range total {
		if s.Owns(k) {
			out = append(out, k)
		}
	}
	return out
}

// String is "i/n", or "" for the whole run.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// ErrFolderWhole is returned by Output for a folder output of an unsharded
// run, which names no file.
var ErrFolderWhole = errors.New("an output ending in / names a folder, which only a sharded run (--shard i/n) writes a part into")

// Output is the file a shard writes for the output name out: out itself,
// or for a folder (out ends in "/") the part
// out + "part-IIIII-of-NNNNN.parquet". A query on an object-store URL
// (s3://b/dir/?region=…) stays at the end. A shard of a count of 1 (0/1,
// what a workflow run with one shard asks for) writes part 0 of 1; only
// the zero Shard, no --shard at all, has no part to write.
func (s Shard) Output(out string) (string, error) {
	name, query, _ := strings.Cut(out, "?")
	if !strings.HasSuffix(name, "/") {
		return out, nil
	}
	if s.Count < 1 {
		return "", fmt.Errorf("output %q: %w", out, ErrFolderWhole)
	}
	name += fmt.Sprintf("part-%05d-of-%05d.parquet", s.Index, s.Count)
	if query != "" {
		name += "?" + query
	}
	return name, nil
}

// ErrMissingPart is matched (errors.Is) by CheckFolder's error.
var ErrMissingPart = errors.New("the folder is not a whole sharded output")

// partRE matches the name Output gives a part: index and count, each
// zero-padded to 5 digits or more.
var partRE = regexp.MustCompile(`^part-([0-9]{5,})-of-([0-9]{5,})\.parquet$`)

// maxNamed is how many missing parts CheckFolder's error names; the rest
// are counted.
const maxNamed = 8

// CheckFolder checks the files a folder stands for as an input (paths or
// URLs, as fileset lists them). Where some are parts of a sharded output
// (part-IIIII-of-NNNNN.parquet), each part 0 to N-1 must be there, and
// all of one count N: a folder missing a part (its job failed, or has not
// finished) was read as if whole, and the next stage scored or trained on
// the rest without a word; parts of two counts are two runs' outputs in
// one folder. Other files are no concern of it. Its error matches
// ErrMissingPart and names the missing parts; the caller names the folder.
func CheckFolder(names []string) error {
	have := map[int]map[int]bool{} // count → the indexes there
	for _, n := range names {
		m := partRE.FindStringSubmatch(fileset.Base(n))
		if m == nil {
			continue
		}
		i, err1 := strconv.Atoi(m[1])
		count, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || i >= count {
			continue // not a name Output gives: no part of a count
		}
		if have[count] == nil {
			have[count] = map[int]bool{}
		}
		have[count][i] = true
	}
	if len(have) > 1 {
		var counts []string
		for _, c := range slices.Sorted(maps.Keys(have)) {
			counts = append(counts, strconv.Itoa(c))
		}
		return fmt.Errorf("%w: it holds parts of sharded runs of %s parts, two runs' outputs; remove the stale parts, or name the files to read", ErrMissingPart, strings.Join(counts, " and "))
	}
	for count, idx := range have {
		var missing []string
		for i := range count {
			if !idx[i] {
				missing = append(missing, fmt.Sprintf("part-%05d-of-%05d.parquet", i, count))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		named := missing
		if len(named) > maxNamed {
			named = append(named[:maxNamed:maxNamed], fmt.Sprintf("and %d more", len(missing)-maxNamed))
		}
		return fmt.Errorf("%w: %d of its %d shard parts missing (%s): their jobs (--shard i/%d) failed or have not finished; rerun them, or name the parts there (DIR/*.parquet) to read only those", ErrMissingPart, len(missing), count, strings.Join(named, ", "), count)
	}
	return nil
}
