package trajectory

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// DefaultRowGroupBytes is the default size, estimated before compression, at
// which the writer ends a row group. A reader's memory is bounded by the
// largest row group, so this is also roughly what reading costs.
const DefaultRowGroupBytes = 32 << 20

// WriterOptions configures a Writer. The zero value is ready to use.
type WriterOptions struct {
	// RowGroupBytes ends a row group, between groups, once the rows buffered
	// since the last one reach about this many bytes (before compression).
	// 0 means DefaultRowGroupBytes. A single group larger than this becomes a
	// row group of its own.
	RowGroupBytes int64
	// Metadata is extra key-value metadata for the file footer.
	// MetadataKeySchemaVersion is always set by the writer.
	Metadata map[string]string
}

// Writer writes groups of trajectories as one zstd-compressed Parquet file.
// It is not safe for concurrent use.
type Writer struct {
	pw      *parquet.GenericWriter[row]
	opts    WriterOptions
	ids     map[string]struct{} // trajectory ids written, to reject duplicates
	groups  map[string]struct{} // group ids written, to reject a group given twice
	pending int64               // estimated bytes in the current row group
	rows    int64
	err     error // sticky: after a failure the file is unusable
	closed  bool
}

// NewWriter returns a Writer that writes a Parquet file to w. Nothing is
// complete until Close returns nil.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	if opts.RowGroupBytes <= 0 {
		opts.RowGroupBytes = DefaultRowGroupBytes
	}
	popts := []parquet.WriterOption{
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		// Row groups end only where WriteGroup says so.
		parquet.MaxRowsPerRowGroup(1 << 62),
		parquet.KeyValueMetadata(MetadataKeySchemaVersion, strconv.Itoa(SchemaVersion)),
		createdByOption(),
	}
	for k, v := range opts.Metadata {
		if k != MetadataKeySchemaVersion {
			popts = append(popts, parquet.KeyValueMetadata(k, v))
		}
	}
	return &Writer{
		pw:     parquet.NewGenericWriter[row](w, popts...),
		opts:   opts,
		ids:    make(map[string]struct{}),
		groups: make(map[string]struct{}),
	}
}

// WriteGroup validates and writes one whole group, which must hold at least
// one trajectory; the group's Metadata and Metrics go on each of its rows.
// A trajectory with an
// empty GroupID takes the group's ID; one with a different GroupID is an
// error. A group ID or trajectory ID already written to this file, or not
// valid UTF-8, is an error; any other string is written with its invalid
// byte sequences as U+FFFD (utf8.go). A group refused by these checks (or by Validate) writes nothing,
// and the Writer goes on; after an error writing the file the Writer is
// unusable and Close reports it.
func (w *Writer) WriteGroup(ctx context.Context, g Group) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("trajectory: write group %q: writer closed", g.ID)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.ID == "" {
		return fmt.Errorf("trajectory: write group: empty group id")
	}
	if len(g.Trajectories) == 0 {
		// A file has no row for an empty group, so it could not be read back.
		return fmt.Errorf("trajectory: write group %q: no trajectories", g.ID)
	}
	if !utf8.ValidString(g.ID) {
		// An id is an identity: replacing its bytes could make two ids one.
		return fmt.Errorf("trajectory: write group %q: group_id is not valid UTF-8", g.ID)
	}
	if _, dup := w.groups[g.ID]; dup {
		return fmt.Errorf("trajectory: write group %q: group already written to this file", g.ID)
	}
	rows := make([]row, len(g.Trajectories))
	var size int64
	seen := make(map[string]struct{}, len(g.Trajectories))
	for i := range g.Trajectories {
		t := g.Trajectories[i] // copy: the caller's value is not modified
		if t.GroupID == "" {
			t.GroupID = g.ID
		}
		if t.GroupID != g.ID {
			return fmt.Errorf("trajectory: group %q, trajectory %d (%q): group_id is %q", g.ID, i, t.ID, t.GroupID)
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("trajectory: group %q, trajectory %d (%q): %w", g.ID, i, t.ID, err)
		}
		if !utf8.ValidString(t.ID) {
			return fmt.Errorf("trajectory: group %q, trajectory %d (%q): trajectory_id is not valid UTF-8", g.ID, i, t.ID)
		}
		if _, dup := w.ids[t.ID]; dup {
			return fmt.Errorf("trajectory: group %q: trajectory_id %q already written", g.ID, t.ID)
		}
		if _, dup := seen[t.ID]; dup {
			return fmt.Errorf("trajectory: group %q: trajectory_id %q twice in the group", g.ID, t.ID)
		}
		seen[t.ID] = struct{}{}
		rows[i] = toRow(&t)
		rows[i].GroupMetadata, rows[i].GroupMetrics = g.Metadata, g.Metrics
		rows[i].makeValidUTF8()
		size += estimateSize(&t) + groupSize(&g)
	}
	// End the current row group before this group if adding it would pass
	// the threshold, so the group lands whole in the next one.
	if w.pending > 0 && w.pending+size > w.opts.RowGroupBytes {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if err := w.write(rows); err != nil {
		return err
	}
	w.groups[g.ID] = struct{}{}
	for id := range seen {
		w.ids[id] = struct{}{}
	}
	w.pending += size
	w.rows += int64(len(rows))
	return nil
}

// Rows returns the number of trajectories written so far.
func (w *Writer) Rows() int64 { return w.rows }

// Close ends the last row group and writes the footer. It does not close
// the underlying io.Writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	err := protect("close parquet writer", func() error { return w.pw.Close() })
	if err != nil {
		w.err = fmt.Errorf("trajectory: %w", err)
	}
	return w.err
}

func (w *Writer) write(rows []row) error {
	err := protect("write rows", func() error {
		n, err := w.pw.Write(rows)
		if err == nil && n != len(rows) {
			err = fmt.Errorf("wrote %d of %d rows", n, len(rows))
		}
		return err
	})
	if err != nil {
		w.err = fmt.Errorf("trajectory: %w", err)
	}
	return w.err
}

func (w *Writer) flush() error {
	if err := protect("flush row group", w.pw.Flush); err != nil {
		w.err = fmt.Errorf("trajectory: %w", err)
		return w.err
	}
	w.pending = 0
	return nil
}

// estimateSize approximates a trajectory's uncompressed size in bytes.
func estimateSize(t *Trajectory) int64 {
	n := int64(len(t.Run) + len(t.Model) + len(t.Adapter) + len(t.ScenarioID) + len(t.Split) +
		len(t.Payload) + len(t.GroupID) + len(t.ID) + len(t.Env) + len(t.Error) + 64)
	n += historySize(t.Messages, t.Tools)
	for i := range t.AdditionalHistories {
		n += historySize(t.AdditionalHistories[i].Messages, t.AdditionalHistories[i].Tools)
	}
	for _, l := range t.Logs {
		n += int64(len(l)) + 4
	}
	for _, c := range t.RewardComponents {
		n += int64(len(c.Name)+len(c.Explanation)) + 8
	}
	for k := range t.Metrics {
		n += int64(len(k)) + 8
	}
	for k, v := range t.Metadata {
		n += int64(len(k) + len(v))
	}
	return n
}

func historySize(msgs []Message, tools []Tool) int64 {
	var n int64
	for i := range msgs {
		m := &msgs[i]
		n += int64(len(m.Role)+len(m.Content)+len(m.ContentParts)+len(m.ToolCallID)+len(m.Name)+
			len(m.ReasoningContent)+len(m.FinishReason)+len(m.AnswerModel)) + 8*int64(len(m.TokenIDs)) + 32
		for _, c := range m.ToolCalls {
			n += int64(len(c.ID) + len(c.Type) + len(c.Name) + len(c.Arguments))
		}
	}
	for _, tool := range tools {
		n += int64(len(tool.Type) + len(tool.Name) + len(tool.Description) + len(tool.Parameters))
	}
	return n
}

// groupSize approximates the bytes the group's own fields add to each row.
func groupSize(g *Group) int64 {
	var n int64
	for k := range g.Metrics {
		n += int64(len(k)) + 8
	}
	for k, v := range g.Metadata {
		n += int64(len(k) + len(v))
	}
	return n
}

// WriteFile writes groups to name (a path or URL) atomically, through
// fileset.Create: nothing is visible under name until the whole file is
// written and synced.
func WriteFile(ctx context.Context, name string, groups []Group, opts WriterOptions) error {
	out, err := fileset.Create(ctx, name)
	if err != nil {
		return fmt.Errorf("trajectory: write %s: %w", fileset.DisplayName(name), err)
	}
	defer out.Abort()
	w := NewWriter(out, opts)
	for _, g := range groups {
		if err := w.WriteGroup(ctx, g); err != nil {
			return fmt.Errorf("write %s: %w", fileset.DisplayName(name), err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", fileset.DisplayName(name), err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("trajectory: %w", err)
	}
	return nil
}

// protect runs f, turning a panic inside parquet-go into an error.
func protect(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: parquet library panicked: %v", what, p)
		}
	}()
	return f()
}
