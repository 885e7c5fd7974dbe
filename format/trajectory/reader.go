package trajectory

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/parquet-go/parquet-go"
)

// FileInfo describes one input file, from its footer.
type FileInfo struct {
	Path          string            `json:"path"` // as given, or "-" for stdin
	Size          int64             `json:"size"`
	Rows          int64             `json:"rows"`
	RowGroups     int               `json:"row_groups"`
	SchemaVersion int               `json:"schema_version"`
	Metadata      map[string]string `json:"metadata"` // the footer's key-value metadata
}

// Reader reads groups from a set of trajectory files in order. It holds
// one batch of decoded rows and the current group in memory, never a whole
// file, plus a map entry (a 64-bit hash of the id and a packed location,
// about 20-40 bytes) per trajectory and group seen, for the duplicate
// checks. A hash collision between two different ids, odds about n²/2⁶⁵,
// would be reported as a duplicate. Not safe for concurrent use.
type Reader struct {
	srcs  []*source
	infos []FileInfo

	cur   int         // index of the source being read
	file  *openedFile // open handle on srcs[cur], nil between files
	rgi   int         // next row group to open in file
	rgr   *parquet.GenericReader[row]
	batch []row
	bpos  int   // next row in batch
	brow  int64 // file row index of batch[0]
	peek  *located
	done  bool
	err   error // sticky

	seed   maphash.Seed
	ids    map[uint64]uint64 // id hash -> location.pack()
	groups map[uint64]uint64
}

type location struct {
	file int32
	row  int64
}

// Packed locations keep the duplicate-check maps small: 24 bits of file
// index, 40 bits of row.
const maxFiles, maxRows = 1 << 24, 1 << 40

func (l location) pack() uint64 { return uint64(l.file)<<40 | uint64(l.row) }

func unpack(v uint64) location { return location{file: int32(v >> 40), row: int64(v & (maxRows - 1))} }

type located struct {
	t   Trajectory
	loc location
	// The group's fields as this row holds them.
	gmeta    map[string]string
	gmetrics map[string]float64
}

// source is one input: a name for messages and a way to open it.
type source struct {
	name string
	open func(ctx context.Context) (io.ReaderAt, int64, io.Closer, error)
}

// show is the file's name as messages give it: an object without its
// bucket query (fileset.DisplayName), which names no file and put the
// store's address in every bad-input error. InputError.File keeps the
// name as the set has it.
func (s *source) show() string { return fileset.DisplayName(s.name) }

type openedFile struct {
	pf     *parquet.File
	ra     io.ReaderAt
	closer io.Closer
}

const readBatch = 64

// Open opens a set of trajectory files resolved by fileset.Resolve (or
// named by fileset.Files). Every footer is read and checked (schema
// version, columns) before Open returns. The caller keeps the set and
// closes it after the Reader. The first file stays open for Next, its
// reads under ctx (an object store's reads belong to the context of the
// open): pass Open the context the reading runs under.
func Open(ctx context.Context, in *fileset.Set) (*Reader, error) {
	r := newReader()
	for i := range in.Len() {
		r.srcs = append(r.srcs, setSource(in, i))
	}
	if len(r.srcs) == 0 {
		return nil, badInput("", -1, "", "", fmt.Errorf("trajectory: no input files"))
	}
	if len(r.srcs) >= maxFiles {
		return nil, badInput("", -1, "", "", fmt.Errorf("trajectory: %d input files; at most %d in one set", len(r.srcs), maxFiles-1))
	}
	if err := r.checkAll(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// NewReader reads one trajectory file from ra, which holds size bytes; name
// is used in messages. The caller keeps ownership of ra.
func NewReader(name string, ra io.ReaderAt, size int64) (*Reader, error) {
	r := newReader()
	r.srcs = []*source{{name: name, open: func(context.Context) (io.ReaderAt, int64, io.Closer, error) {
		return ra, size, io.NopCloser(nil), nil
	}}}
	if err := r.checkAll(context.Background()); err != nil {
		return nil, err
	}
	return r, nil
}

func newReader() *Reader {
	return &Reader{
		seed:   maphash.MakeSeed(),
		ids:    make(map[uint64]uint64),
		groups: make(map[uint64]uint64),
	}
}

// setSource is the i-th input of a set, opened when read.
func setSource(in *fileset.Set, i int) *source {
	return &source{name: in.Name(i), open: func(ctx context.Context) (io.ReaderAt, int64, io.Closer, error) {
		f, err := in.Open(ctx, i)
		if err != nil {
			return nil, 0, nil, err
		}
		return f, f.Size, f, nil
	}}
}

// checkAll reads and checks every footer, then closes the files again so a
// large input set does not hold a descriptor per file; the first stays
// open for Next, which reads it first, so its footer is not read twice
// (over an object store, each read is a request).
func (r *Reader) checkAll(ctx context.Context) error {
	r.infos = make([]FileInfo, len(r.srcs))
	for i, src := range r.srcs {
		if err := ctx.Err(); err != nil {
			return err
		}
		of, info, err := openChecked(ctx, src)
		if err != nil {
			return err
		}
		if i == 0 {
			r.file, r.cur, r.rgi = of, 0, 0
		} else {
			of.closer.Close()
		}
		r.infos[i] = info
	}
	return nil
}

// Files describes the input files, in reading order.
func (r *Reader) Files() []FileInfo { return slices.Clone(r.infos) }

// expectedSchema is the layout this build writes; files must have each of
// its leaf columns with the same physical type and nesting, except the
// optional columns added after schema version 1 (addedColumns).
var expectedSchema = parquet.SchemaOf(row{})

// addedColumns are the columns (dot-joined paths; a path stands for every
// leaf below it) added to the layout after files were first written. They
// are optional: a file without them reads with their fields empty.
var addedColumns = []string{
	"messages.list.element.reasoning_content",
	// Schema version 2.
	"additional_histories",
	"logs",
	"group_metadata",
	"group_metrics",
}

func isAddedColumn(name string) bool {
	for _, p := range addedColumns {
		if name == p || strings.HasPrefix(name, p+".") {
			return true
		}
	}
	return false
}

// Schema returns the Parquet schema this build writes. Files written by
// older builds may lack the optional columns added since; readers accept
// them.
func Schema() *parquet.Schema { return expectedSchema }

func openChecked(ctx context.Context, src *source) (*openedFile, FileInfo, error) {
	info := FileInfo{Path: src.name}
	ra, size, closer, err := src.open(ctx)
	if err != nil {
		return nil, info, badInput(src.name, -1, "", "", fmt.Errorf("trajectory: open %s: %w", src.show(), err)) // a missing file is bad input, a refused one is not
	}
	info.Size = size
	var pf *parquet.File
	err = checkFrame(ra, size)
	if err == nil {
		err = protect("read footer", func() error {
			var err error
			pf, err = parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
			return err
		})
	}
	if err == nil {
		err = checkFile(pf, size)
	}
	if err != nil {
		closer.Close()
		return nil, info, badInput(src.name, -1, "", "", fmt.Errorf("trajectory: %s: not a readable trajectory file: %w", src.show(), err))
	}
	md := pf.Metadata()
	info.Rows = md.NumRows
	info.RowGroups = len(md.RowGroups)
	info.SchemaVersion = 1 // files without the key predate it or come from other tools
	info.Metadata = make(map[string]string, len(md.KeyValueMetadata))
	for _, kv := range md.KeyValueMetadata {
		info.Metadata[kv.Key] = kv.Value
	}
	if v, ok := info.Metadata[MetadataKeySchemaVersion]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			closer.Close()
			return nil, info, badInput(src.name, -1, "", "", fmt.Errorf("trajectory: %s: metadata %s=%q is not a schema version", src.show(), MetadataKeySchemaVersion, v))
		}
		if n > SchemaVersion {
			closer.Close()
			return nil, info, badInput(src.name, -1, "", "", fmt.Errorf("trajectory: %s: written with schema version %d, this build reads up to %d; upgrade hone", src.show(), n, SchemaVersion))
		}
		info.SchemaVersion = n
	}
	if err := checkColumns(pf.Schema()); err != nil {
		closer.Close()
		return nil, info, badInput(src.name, -1, "", "", fmt.Errorf("trajectory: %s: %w", src.show(), err))
	}
	return &openedFile{pf: pf, ra: ra, closer: closer}, info, nil
}

// Magic opens and ends every Parquet file.
const Magic = "PAR1"

// StartsWithMagic reports whether r begins with Parquet's magic: how a
// stage tells a trajectory file from JSON lines when the input's name says
// nothing (stdin, a pipe, another ending).
func StartsWithMagic(r io.ReaderAt) bool {
	var b [len(Magic)]byte
	n, _ := r.ReadAt(b[:], 0)
	return n == len(b) && string(b[:]) == Magic
}

// checkFrame checks the magic bytes and that the footer length fits in the
// file, before parquet-go sizes a buffer from it (a garbage length made it
// allocate gigabytes).
func checkFrame(ra io.ReaderAt, size int64) error {
	const magic = Magic
	if size < 12 {
		return fmt.Errorf("%d bytes is too short for a Parquet file", size)
	}
	var head, tail [8]byte
	if _, err := ra.ReadAt(head[:4], 0); err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	if _, err := ra.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("read footer: %w", err)
	}
	if string(head[:4]) != magic || string(tail[4:]) != magic {
		if c, ok := jsonStart(ra, size); ok {
			// JSON Lines (chats, an export, ART's logs) is the likeliest
			// file that is not Parquet, and a stage that reads trajectory
			// files alone said only "truncated, or not Parquet".
			return fmt.Errorf("it starts with %q: JSON, not Parquet; convert JSON Lines with hone-inspect from-jsonl -o NEW.parquet FILE", c)
		}
		return fmt.Errorf("no Parquet magic bytes at the start and end (truncated, or not Parquet)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("footer length %d does not fit in %d bytes (truncated?)", n, size)
	}
	return nil
}

// jsonStart reports whether the file's first character, after a UTF-8
// byte-order mark and blanks (an editor's or a Windows tool's), opens a
// JSON object or array, and which.
func jsonStart(ra io.ReaderAt, size int64) (byte, bool) {
	head := make([]byte, min(size, 256))
	n, _ := ra.ReadAt(head, 0)
	rest := bytes.TrimLeft(bytes.TrimPrefix(head[:n], []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(rest) == 0 || (rest[0] != '{' && rest[0] != '[') {
		return 0, false
	}
	return rest[0], true
}

// checkFile rejects footers whose numbers cannot describe this file, before
// the library trusts them with allocations.
func checkFile(pf *parquet.File, size int64) error {
	md := pf.Metadata()
	if md.NumRows < 0 {
		return fmt.Errorf("footer: negative row count %d", md.NumRows)
	}
	var total int64
	for i, rg := range md.RowGroups {
		if rg.NumRows < 0 {
			return fmt.Errorf("footer: row group %d: negative row count", i)
		}
		total += rg.NumRows
		for j, cc := range rg.Columns {
			m := cc.MetaData
			if m.TotalCompressedSize < 0 || m.TotalCompressedSize > size ||
				m.DataPageOffset < 0 || m.DataPageOffset > size ||
				m.NumValues < 0 || m.TotalUncompressedSize < 0 {
				return fmt.Errorf("footer: row group %d, column %d: sizes or offsets outside the file", i, j)
			}
		}
	}
	if total != md.NumRows {
		return fmt.Errorf("footer: row groups hold %d rows, footer says %d", total, md.NumRows)
	}
	return nil
}

// checkColumns reports every expected column that is missing or has the
// wrong type. Extra columns are fine: newer writers may add them.
func checkColumns(have *parquet.Schema) error {
	var errs []error
	for _, path := range expectedSchema.Columns() {
		want, _ := expectedSchema.Lookup(path...)
		got, ok := have.Lookup(path...)
		name := strings.Join(path, ".")
		switch {
		case !ok && isAddedColumn(name):
		case !ok:
			errs = append(errs, fmt.Errorf("column %s: missing", name))
		case got.Node.Type().Kind() != want.Node.Type().Kind():
			errs = append(errs, fmt.Errorf("column %s: type %s, want %s", name, got.Node.Type().Kind(), want.Node.Type().Kind()))
		case got.MaxRepetitionLevel != want.MaxRepetitionLevel:
			errs = append(errs, fmt.Errorf("column %s: nesting (repetition level %d), want %d", name, got.MaxRepetitionLevel, want.MaxRepetitionLevel))
		}
	}
	return errors.Join(errs...)
}

// Next returns the next group. At the end of the input it returns io.EOF.
// Any other error is final: the input is bad at the place the error names.
func (r *Reader) Next(ctx context.Context) (Group, error) {
	if r.err != nil {
		return Group{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return Group{}, err
	}
	first, err := r.nextRow(ctx)
	if err != nil {
		r.err = err
		return Group{}, err
	}
	g := Group{ID: first.t.GroupID, Trajectories: []Trajectory{first.t}, Metadata: first.gmeta, Metrics: first.gmetrics}
	for {
		next, err := r.nextRow(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			r.err = err
			return Group{}, err
		}
		if next.loc.file != first.loc.file || next.t.GroupID != g.ID {
			r.peek = next
			break
		}
		if err := sameGroupFields(first, next); err != nil {
			name := r.srcs[next.loc.file].name
			var fe *fieldError
			errors.As(err, &fe)
			r.err = badInput(name, next.loc.row, g.ID, fe.field, fmt.Errorf("trajectory: %s: row %d (group %q, trajectory %q): %w", fileset.DisplayName(name), next.loc.row, g.ID, next.t.ID, err))
			return Group{}, r.err
		}
		g.Trajectories = append(g.Trajectories, next.t)
	}
	h := maphash.String(r.seed, g.ID)
	if packed, ok := r.groups[h]; ok {
		prev := unpack(packed)
		if prev.file == first.loc.file {
			r.err = badInput(r.srcs[first.loc.file].name, first.loc.row, g.ID, "group_id", fmt.Errorf("trajectory: %s: group %q: rows not contiguous (rows from %d and again from %d)",
				r.srcs[first.loc.file].show(), g.ID, prev.row, first.loc.row))
		} else {
			r.err = badInput(r.srcs[first.loc.file].name, first.loc.row, g.ID, "group_id", fmt.Errorf("trajectory: group %q split across files %s (row %d) and %s (row %d); a group must sit in one file",
				g.ID, r.srcs[prev.file].show(), prev.row, r.srcs[first.loc.file].show(), first.loc.row))
		}
		return Group{}, r.err
	}
	r.groups[h] = first.loc.pack()
	return g, nil
}

// Where returns the file and the first row (0-based, as bad-input errors
// count rows) of the group with this id that Next returned, so that a
// later stage's failure on a group's content can name where it sits; ok is
// false for an id Next has not returned. Rows of a group are contiguous,
// so its trajectory i sits at row+i.
func (r *Reader) Where(groupID string) (file string, row int64, ok bool) {
	packed, ok := r.groups[maphash.String(r.seed, groupID)]
	if !ok {
		return "", 0, false
	}
	l := unpack(packed)
	return r.srcs[l.file].name, l.row, true
}

// sameGroupFields checks that a row repeats its group's metadata and
// metrics as the group's first row holds them. Metrics compare bit for bit,
// so a NaN matches itself.
func sameGroupFields(first, next *located) error {
	if !maps.Equal(first.gmeta, next.gmeta) {
		return &fieldError{field: "group_metadata", msg: fmt.Sprintf("differs from the group's first row (row %d); a group's rows must repeat the same group_metadata", first.loc.row)}
	}
	if !sameMetrics(first.gmetrics, next.gmetrics) {
		return &fieldError{field: "group_metrics", msg: fmt.Sprintf("differs from the group's first row (row %d); a group's rows must repeat the same group_metrics", first.loc.row)}
	}
	return nil
}

// sameMetrics reports whether two metric maps hold the same values bit for
// bit, so that a NaN matches itself (== would call every NaN different).
func sameMetrics(a, b map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// nextRow returns the next row of the input set, checked on its own and
// against the ids seen before.
func (r *Reader) nextRow(ctx context.Context) (*located, error) {
	if r.peek != nil {
		l := r.peek
		r.peek = nil
		return l, nil
	}
	for r.bpos >= len(r.batch) {
		if err := r.fill(ctx); err != nil {
			return nil, err
		}
	}
	loc := location{file: int32(r.cur), row: r.brow + int64(r.bpos)}
	if loc.row >= maxRows {
		return nil, badInput(r.srcs[r.cur].name, loc.row, "", "", fmt.Errorf("trajectory: %s: more than %d rows in one file", r.srcs[r.cur].show(), int64(maxRows)))
	}
	br := &r.batch[r.bpos]
	l := &located{t: fromRow(br), loc: loc}
	if len(br.GroupMetadata) > 0 {
		l.gmeta = br.GroupMetadata
	}
	if len(br.GroupMetrics) > 0 {
		l.gmetrics = br.GroupMetrics
	}
	r.batch[r.bpos] = row{} // let the decoded row go
	r.bpos++
	name := r.srcs[r.cur].name
	if err := l.t.Validate(); err != nil {
		return nil, badInput(name, loc.row, l.t.GroupID, firstField(err), fmt.Errorf("trajectory: %s: row %d (group %q, trajectory %q): %w", fileset.DisplayName(name), loc.row, l.t.GroupID, l.t.ID, err))
	}
	h := maphash.String(r.seed, l.t.ID)
	if packed, ok := r.ids[h]; ok {
		prev := unpack(packed)
		return nil, badInput(name, loc.row, l.t.GroupID, "trajectory_id", fmt.Errorf("trajectory: %s: row %d (group %q): trajectory_id %q duplicates %s row %d",
			fileset.DisplayName(name), loc.row, l.t.GroupID, l.t.ID, r.srcs[prev.file].show(), prev.row))
	}
	r.ids[h] = loc.pack()
	return l, nil
}

// fill decodes the next batch of rows, moving to the next row group or file
// as needed. It returns io.EOF after the last file.
func (r *Reader) fill(ctx context.Context) error {
	if r.done {
		return io.EOF
	}
	if r.rgr != nil {
		next := r.brow + int64(len(r.batch))
		r.batch = r.batch[:cap(r.batch)]
		var n int
		err := protect("read rows", func() error {
			var err error
			n, err = r.rgr.Read(r.batch)
			return err
		})
		r.batch = r.batch[:n]
		r.brow, r.bpos = next, 0
		if n > 0 && (err == nil || err == io.EOF) {
			return nil
		}
		r.rgr.Close()
		r.rgr = nil
		if err != nil && err != io.EOF {
			return badInput(r.srcs[r.cur].name, next, "", "", fmt.Errorf("trajectory: %s: row group %d, near row %d: %w", r.srcs[r.cur].show(), r.rgi-1, next, err))
		}
		return nil
	}
	if r.file != nil && r.rgi < len(r.file.pf.RowGroups()) {
		rg := r.file.pf.RowGroups()[r.rgi]
		r.willRead(r.rgi)
		r.rgi++
		err := protect("open row group", func() error {
			r.rgr = parquet.NewGenericRowGroupReader[row](rg)
			return nil
		})
		if err != nil {
			return badInput(r.srcs[r.cur].name, -1, "", "", fmt.Errorf("trajectory: %s: row group %d: %w", r.srcs[r.cur].show(), r.rgi-1, err))
		}
		if r.batch == nil {
			r.batch = make([]row, 0, readBatch)
		}
		return nil
	}
	if r.file != nil {
		r.file.closer.Close()
		r.file = nil
		r.cur++
	}
	if r.cur >= len(r.srcs) {
		r.done = true
		return io.EOF
	}
	of, _, err := openChecked(ctx, r.srcs[r.cur])
	if err != nil {
		return err
	}
	r.file, r.rgi = of, 0
	r.brow, r.batch, r.bpos = 0, r.batch[:0], 0
	return nil
}

// willRead tells the current file's reader, where it takes hints (an
// object in a store), that the row group's column chunks come next, so
// they are fetched together rather than a window at a time.
func (r *Reader) willRead(i int) {
	w, ok := r.file.ra.(interface{ WillRead(off, n int64) })
	if !ok {
		return
	}
	start, end := int64(-1), int64(0)
	for _, cc := range r.file.pf.Metadata().RowGroups[i].Columns {
		m := cc.MetaData
		off := m.DataPageOffset
		if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < off {
			off = m.DictionaryPageOffset
		}
		if start < 0 || off < start {
			start = off
		}
		end = max(end, off+m.TotalCompressedSize)
	}
	if start >= 0 {
		w.WillRead(start, end-start)
	}
}

// Close releases the open file. The input set stays open: its owner
// closes it.
func (r *Reader) Close() error {
	if r.rgr != nil {
		r.rgr.Close()
		r.rgr = nil
	}
	if r.file != nil {
		r.file.closer.Close()
		r.file = nil
	}
	r.done = true
	return nil
}

// ReadAll reads every group of an input set into memory. For large inputs
// iterate with Open and Next instead.
func ReadAll(ctx context.Context, in *fileset.Set) ([]Group, error) {
	r, err := Open(ctx, in)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var groups []Group
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			return groups, nil
		}
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
}

// ReadFile reads every group of one file (a path or URL, taken as it is)
// into memory.
func ReadFile(ctx context.Context, name string) ([]Group, error) {
	in := fileset.Files(name)
	defer in.Close() // its bucket, when name is an object
	return ReadAll(ctx, in)
}

// Validate reads an input set through and returns the first problem found,
// or nil when every file, row and group is well formed.
func Validate(ctx context.Context, in *fileset.Set) error {
	r, err := Open(ctx, in)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		_, err := r.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
