package trajectory

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/parquet-go/parquet-go"
)

// RowIDs is one row's ids, as ReadIDs gives them.
type RowIDs struct {
	File         string // the input's name
	Row          int64  // 0-based, across the file's row groups
	GroupID      string
	TrajectoryID string
}

// ReadIDs calls each with the group and trajectory id of every row of the
// set, in order, after checking each file's footer as Open does. It reads
// the two id columns alone: a caller that needs only the ids (the proxy,
// at start, refusing those its folder holds) then pays for them, not for
// every conversation's messages, which are most of a file's bytes.
// Nothing else is checked: duplicate ids are the caller's to find.
func ReadIDs(ctx context.Context, in *fileset.Set, each func(RowIDs) error) error {
	for i := range in.Len() {
		if err := ctx.Err(); err != nil {
			return err
		}
		src := setSource(in, i)
		of, _, err := openChecked(ctx, src)
		if err != nil {
			return err
		}
		err = fileIDs(src.name, of.pf, each)
		of.closer.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// fileIDs calls each for every row of pf, named name in errors.
func fileIDs(name string, pf *parquet.File, each func(RowIDs) error) error {
	names := [2]string{"group_id", "trajectory_id"}
	var cols [2]int
	for j, c := range names {
		leaf, ok := pf.Schema().Lookup(c)
		if !ok {
			// checkColumns refused a file without it already.
			return badInput(name, -1, "", c, fmt.Errorf("trajectory: %s: no column %s", name, c))
		}
		cols[j] = leaf.ColumnIndex
	}
	var row int64
	for rgi, rg := range pf.RowGroups() {
		var ids [2][]string
		for j, ci := range cols {
			err := protect("read ids", func() error {
				var err error
				ids[j], err = columnStrings(rg.ColumnChunks()[ci])
				return err
			})
			if err != nil {
				return badInput(name, row, "", "", fmt.Errorf("trajectory: %s: row group %d, column %s: %w", name, rgi, names[j], err))
			}
		}
		if len(ids[0]) != len(ids[1]) || int64(len(ids[0])) != rg.NumRows() {
			return badInput(name, row, "", "", fmt.Errorf("trajectory: %s: row group %d: %d rows, %d group ids, %d trajectory ids", name, rgi, rg.NumRows(), len(ids[0]), len(ids[1])))
		}
		for k := range ids[0] {
			if err := each(RowIDs{File: name, Row: row, GroupID: ids[0][k], TrajectoryID: ids[1][k]}); err != nil {
				return err
			}
			row++
		}
	}
	return nil
}

// columnStrings reads the values of a column chunk of strings.
func columnStrings(cc parquet.ColumnChunk) ([]string, error) {
	pages := cc.Pages()
	defer pages.Close()
	var out []string
	var buf []parquet.Value
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		n := int(p.NumValues())
		if cap(buf) < n {
			buf = make([]parquet.Value, n)
		}
		buf = buf[:n]
		got, err := p.Values().ReadValues(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			parquet.Release(p)
			return nil, err
		}
		for _, v := range buf[:got] {
			s := "" // a null, as the row reader reads it
			if !v.IsNull() {
				s = string(v.ByteArray()) // a copy: the page's buffer is released
			}
			out = append(out, s)
		}
		parquet.Release(p)
		if got != n {
			return nil, fmt.Errorf("page of %d values held %d", n, got)
		}
	}
}
