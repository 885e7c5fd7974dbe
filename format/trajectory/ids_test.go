package trajectory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// TestReadIDs: the ids ReadIDs gives, over files of several row groups,
// are those the full reader reads, row for row, with each row's file and
// number.
func TestReadIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var names []string
	for f := range 2 {
		var gs []trajectory.Group
		for g := range 5 {
			gid := fmt.Sprintf("f%d-g%d", f, g)
			gr := trajectory.Group{ID: gid}
			for k := range 3 {
				gr.Trajectories = append(gr.Trajectories, trajectory.Trajectory{Run: "r", GroupID: gid, ID: fmt.Sprintf("%s-t%d", gid, k), Env: "e",
					Messages: []trajectory.Message{{Role: "user", Content: "question"}, {Role: "assistant", Content: "answer"}}})
			}
			gs = append(gs, gr)
		}
		name := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		// Row groups of about one group each: rows are counted across them.
		if err := trajectory.WriteFile(ctx, name, gs, trajectory.WriterOptions{RowGroupBytes: 1}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	var want, got []trajectory.RowIDs
	for _, name := range names {
		r, err := trajectory.Open(ctx, fileset.Files(name))
		if err != nil {
			t.Fatal(err)
		}
		if fi := r.Files(); fi[0].RowGroups < 2 {
			t.Fatalf("%s: %d row groups, want several", name, fi[0].RowGroups)
		}
		row := int64(0)
		for {
			g, err := r.Next(ctx)
			if err != nil {
				break
			}
			for _, tr := range g.Trajectories {
				want = append(want, trajectory.RowIDs{File: name, Row: row, GroupID: g.ID, TrajectoryID: tr.ID})
				row++
			}
		}
		r.Close()
	}
	err := trajectory.ReadIDs(ctx, fileset.Files(names...), func(r trajectory.RowIDs) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ReadIDs gave\n%v\nwant\n%v", got, want)
	}
}
