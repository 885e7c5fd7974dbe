package trajectory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

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

// idReaders is how many files ReadIDs reads at once. Reading a file's ids
// is a few small reads (over an object store, a request for the object's
// size and one or two ranged reads, each a round trip), so one file after
// another spent the start waiting: 16 at once keep a store's connections
// busy without holding many descriptors or connections.
const idReaders = 16

// ReadIDs calls each with the group and trajectory id of every row of the
// set, in order, after checking each file's footer as Open does. It reads
// the two id columns alone: a caller that needs only the ids (the proxy,
// at start, refusing those its folder holds) then pays for them, not for
// every conversation's messages, which are most of a file's bytes.
// Nothing else is checked: duplicate ids are the caller's to find. Files
// are read several at a time, but each is called in the set's order, and
// an error is the one the files read in order would give first.
func ReadIDs(ctx context.Context, in *fileset.Set, each func(RowIDs) error) error {
	return readIDs(ctx, in, idReaders, each)
}

// fileRowIDs is one file's rows, and the error that stopped its reading
// after them, if any.
type fileRowIDs struct {
	rows []RowIDs
	err  error
}

// readIDs is ReadIDs reading up to workers files at once. The files read
// ahead of the one being handed to each are at most workers: a slot is
// taken before a file is read and given back once its rows were handed
// over.
func readIDs(ctx context.Context, in *fileset.Set, workers int, each func(RowIDs) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Stop the readers, then wait for them: none is left reading (a
	// descriptor or connection held) after ReadIDs returned.
	defer wg.Wait()
	defer cancel()
	got := make([]chan fileRowIDs, in.Len())
	for i := range got {
		got[i] = make(chan fileRowIDs, 1)
	}
	slots := make(chan struct{}, workers)
	wg.Go(func() {
		for i := range got {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				rows, err := readFileIDs(ctx, in, i)
				got[i] <- fileRowIDs{rows, err}
			})
		}
	})
	for i := range got {
		var f fileRowIDs
		select {
		case f = <-got[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-slots
		// The rows read before a file's error first: the error each
		// would have given on one of them comes before the file's.
		for _, r := range f.rows {
			if err := each(r); err != nil {
				return err
			}
		}
		if f.err != nil {
			return f.err
		}
	}
	return nil
}

// readFileIDs reads the ids of the set's i-th file: those read before an
// error too.
func readFileIDs(ctx context.Context, in *fileset.Set, i int) ([]RowIDs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	src := setSource(in, i)
	of, _, err := openChecked(ctx, src)
	if err != nil {
		return nil, err
	}
	defer of.closer.Close()
	var rows []RowIDs
	err = fileIDs(src.name, of.pf, func(r RowIDs) error {
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// fileIDs calls each for every row of pf, named name in errors.
func fileIDs(name string, pf *parquet.File, each func(RowIDs) error) error {
	names := [2]string{"group_id", "trajectory_id"}
	var cols [2]int
	for j, c := range names {
		leaf, ok := pf.Schema().Lookup(c)
		if !ok {
			// checkColumns refused a file without it already.
			return badInput(name, -1, "", c, fmt.Errorf("trajectory: %s: no column %s", fileset.DisplayName(name), c))
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
				return badInput(name, row, "", "", fmt.Errorf("trajectory: %s: row group %d, column %s: %w", fileset.DisplayName(name), rgi, names[j], err))
			}
		}
		if len(ids[0]) != len(ids[1]) || int64(len(ids[0])) != rg.NumRows() {
			return badInput(name, row, "", "", fmt.Errorf("trajectory: %s: row group %d: %d rows, %d group ids, %d trajectory ids", fileset.DisplayName(name), rgi, rg.NumRows(), len(ids[0]), len(ids[1])))
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
