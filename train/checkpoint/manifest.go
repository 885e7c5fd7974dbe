package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
)

// Manifest records which input files incremental runs consumed, and the
// sessions of a run resumed with new input files.
type Manifest struct {
	Consumed []FileEntry `json:"consumed"`
	// Pending is the session in progress: set before its first step is
	// trained, cleared (its files moved to Consumed) after its last. A run
	// that finds it set resumes that session instead of starting a new one.
	Pending *Session `json:"pending,omitempty"`
	// Sessions lists, by index, the sessions of a run trained on the input
	// files given to each command (not --watch-dir): a session begins when
	// a resumed run is given files other than its last session's.
	Sessions []Session `json:"sessions,omitempty"`
}

// FileEntry identifies one input file by name and content.
type FileEntry struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Step   int    `json:"step,omitempty"` // the run's step after the session that consumed it
	// ModTime and ETag are what a stat of Path gave just before the bytes
	// hashed were read, at HashedAt (this machine's clock); all zero where
	// none was taken (a manifest written before they were, stdin, a stat
	// whose size was not the size read). With Size they let a later
	// --watch-dir call take a file as this entry without reading it
	// (SameStat).
	ModTime  time.Time `json:"mtime,omitzero"`
	ETag     string    `json:"etag,omitempty"`
	HashedAt time.Time `json:"hashed_at,omitzero"`
	// FileID is the stat's fileset.FileInfo.ID (a local file's device and
	// inode): a path that names another file since (a symbolic link
	// retargeted) is read again though its size and time are the same.
	FileID string `json:"file_id,omitempty"`
	// Groups digests the ids of the groups a --watch-dir session trained
	// from the file, as Session.Groups does a named-file session's: a
	// later watch session of other files with the same groups (a file
	// re-scored) is told apart by it. Empty for a named-file session's
	// files (their session keeps them), a file consumed untrained (only
	// held-out rows), and in a manifest written before it was kept (no
	// check then).
	Groups string `json:"groups,omitempty"`
}

// RacyWindow is how much older than the moment it was statted and hashed
// a file's modification time must be for that stat to vouch for its
// contents later. A file written again within its time's granularity
// (a second for S3 and Azure, coarse on some file systems) or as it was
// hashed can keep its size and time with other contents: a stat that
// close to the hashing is "racy", as git calls it, and the file is read
// again. The window also covers an object store's clock running up to
// that much behind this machine's.
const RacyWindow = 2 * time.Second

// SameStat reports whether the file at path, which stats as now, may be
// taken as e's contents without reading it: e was statted at that path
// (compared masked, as a manifest keeps it: Manifest.redacted),
// size, modification time, ETag and file ID (these two where both have
// one) are equal, and that stat was not racy (RacyWindow). Anything else
// is read and hashed, so that sha256 stays what identifies a file.
func (e FileEntry) SameStat(path string, now fileset.FileInfo) bool {
	switch {
	case e.ModTime.IsZero() || e.HashedAt.IsZero() || now.ModTime.IsZero():
		return false
	case fileset.StoredName(e.Path) != fileset.StoredName(path) || e.Size != now.Size || !e.ModTime.Equal(now.ModTime):
		return false
	case e.ETag != "" && now.ETag != "" && e.ETag != now.ETag:
		return false
	case e.FileID != "" && now.ID != "" && e.FileID != now.ID:
		return false
	}
	return e.ModTime.Before(e.HashedAt.Add(-RacyWindow))
}

// setStat records st, taken at the moment at before the bytes e was hashed
// from were read. A stat whose size is not the size read is of another
// version (the file was rewritten in between): none is recorded, and the
// file is read again by the next call.
func (e *FileEntry) setStat(st fileset.FileInfo, at time.Time) {
	if st.Size != e.Size {
		return
	}
	e.ModTime, e.ETag, e.FileID, e.HashedAt = st.ModTime, st.ETag, st.ID, at.Round(0)
}

// Session is one training session: which files, from which step to which.
// Index counts the sessions of a run given input files (0 for the first);
// --watch-dir sessions leave it 0, and record their groups by file
// (FileEntry.Groups) once consumed.
type Session struct {
	Index     int         `json:"index,omitempty"`
	Files     []FileEntry `json:"files"`
	StartStep int         `json:"start_step"`
	EndStep   int         `json:"end_step"`
	// Groups digests the ids of the groups the session trains: the first
	// 8 bytes of each id's SHA-256, sorted and deduplicated, in base64
	// (about 11 bytes a group: 1.1 MB for 100,000). A later session of
	// other files with the same groups (a file re-scored) is told apart
	// by it, where the files' sha256 differ. Empty in a manifest written
	// before it was kept (no check then), and never in a step's state.
	Groups string `json:"groups,omitempty"`
}

// Has reports whether a file with this checksum was consumed.
func (m *Manifest) Has(sum string) bool {
	for _, e := range m.Consumed {
		if e.SHA256 == sum {
			return true
		}
	}
	return false
}

// ReadManifest reads manifest.json (empty when absent).
func (r *Run) ReadManifest() (Manifest, error) {
	var m Manifest
	path := filepath.Join(r.Dir, ManifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return m, nil
}

// WriteManifest replaces manifest.json atomically, its files' names with
// their secrets masked (Manifest.redacted).
func (r *Run) WriteManifest(m Manifest) error {
	b, err := json.MarshalIndent(m.redacted(), "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: manifest: %w", err)
	}
	return runfolder.WriteFile(filepath.Join(r.Dir, ManifestName), append(b, '\n'))
}

// MaskManifest rewrites manifest.json masked (WriteManifest) where m, as
// read from it, holds a file's name that WriteManifest would not keep
// (fileset.StoredName): a manifest written by code before names were
// masked, an object-store endpoint's password in it, which only a call
// that wrote the manifest for its own reasons rewrote. m is left as it is,
// for the call that still opens its names.
func (r *Run) MaskManifest(m Manifest) error {
	unmasked := func(es []FileEntry) bool {
		return slices.ContainsFunc(es, func(e FileEntry) bool { return fileset.StoredName(e.Path) != e.Path })
	}
	if unmasked(m.Consumed) || m.Pending != nil && unmasked(m.Pending.Files) ||
		slices.ContainsFunc(m.Sessions, func(s Session) bool { return unmasked(s.Files) }) {
		return r.WriteManifest(m)
	}
	return nil
}

// redacted is m with each file's name as fileset.StoredName gives it (an
// object-store endpoint's password masked): the run folder is copied with
// the adapters and read by more people than the store's keys are given
// to. A file is matched by its masked name (FileEntry.SameStat) and
// found again by its sha256, never opened at a name read back. m's own
// entries are left as they are, for the call that still reads them.
func (m Manifest) redacted() Manifest {
	m.Consumed = redactEntries(m.Consumed)
	if m.Pending != nil {
		p := m.Pending.Redacted()
		m.Pending = &p
	}
	if m.Sessions != nil {
		ss := make([]Session, len(m.Sessions))
		for i, s := range m.Sessions {
			ss[i] = s.Redacted()
		}
		m.Sessions = ss
	}
	return m
}

// Redacted is s with its files' names masked (Manifest.redacted), as a
// step's state keeps it too.
func (s Session) Redacted() Session {
	s.Files = redactEntries(s.Files)
	return s
}

// redactEntries is a copy of es with each name masked.
func redactEntries(es []FileEntry) []FileEntry {
	if es == nil {
		return nil
	}
	out := slices.Clone(es)
	for i := range out {
		out[i].Path = fileset.StoredName(out[i].Path)
	}
	return out
}

// SameFiles reports whether a and b hold the same contents in the same
// order, by sha256 (names may differ).
func SameFiles(a, b []FileEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].SHA256 != b[i].SHA256 {
			return false
		}
	}
	return true
}

// HashSet returns the entries of every input of in, in order; stdin ("-")
// is hashed from its copy.
func HashSet(ctx context.Context, in *fileset.Set) ([]FileEntry, error) {
	var out []FileEntry
	for i := range in.Len() {
		f, err := in.Open(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		e, err := hashReader(f.Reader(), in.Name(i))
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// CheckUnchanged hashes the inputs of in again and fails, naming the
// first file whose contents differ from its entry in before (HashSet of in,
// taken before in was read for training). Hashing once before the inputs
// are decoded and once after, and refusing a difference, makes the hashes
// a run records those of the bytes it trained on: a file replaced while
// the run read it (a scorer writing the next version under the same name)
// was trained as one version and recorded as the other, and a later call
// given the new version took it as already trained.
func CheckUnchanged(ctx context.Context, in *fileset.Set, before []FileEntry) error {
	now, err := HashSet(ctx, in)
	if err != nil {
		return err
	}
	for i := range now {
		if i >= len(before) || now[i].SHA256 != before[i].SHA256 {
			return fmt.Errorf("checkpoint: input %s changed while it was read (sha256 %s before, %s after); nothing was trained: run again once it is no longer being written",
				fileset.DisplayName(in.Name(i)), entrySum(before, i), now[i].SHA256)
		}
	}
	return nil
}

// entrySum is the sha256 of es[i], "none" past its end.
func entrySum(es []FileEntry, i int) string {
	if i >= len(es) {
		return "none"
	}
	return es[i].SHA256
}

// HashFile returns the entry (sha256, size) of the input file at path (a
// path or URL, as fileset names inputs).
func HashFile(ctx context.Context, path string) (FileEntry, error) {
	f, err := fileset.Open(ctx, path)
	if err != nil {
		return FileEntry{}, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	return hashReader(f.Reader(), path)
}

// ReadInput reads the input file at path (a path or URL) whole, once, and
// returns its entry and the bytes that entry was hashed from. A caller
// that decodes those bytes (fileset.Held) records the hash of what it
// trained on: a file replaced after it was hashed would otherwise be
// trained as its new contents under the old contents' hash, and the new
// contents then passed over as consumed.
func ReadInput(ctx context.Context, path string) (FileEntry, []byte, error) {
	b, err := fileset.ReadFile(ctx, path)
	if err != nil {
		return FileEntry{}, nil, fmt.Errorf("checkpoint: %w", err)
	}
	e, err := hashReader(bytes.NewReader(b), path)
	return e, b, err
}

// Stat is a stat of an input file (fileset.FileInfo) and the moment it
// was taken; Err says why there is none.
type Stat struct {
	fileset.FileInfo
	At  time.Time
	Err error
}

// StatInput stats in's i-th file, through the set's shared buckets.
func StatInput(ctx context.Context, in *fileset.Set, i int) Stat {
	at := time.Now()
	fi, err := in.Info(ctx, i)
	return Stat{FileInfo: fi, At: at, Err: err}
}

// ReadSetInput is ReadInput of in's i-th file, through the set's shared
// buckets, whose entry records st (FileEntry.ModTime…), a stat taken just
// before this read: taken after, it could be a newer version's, which a
// later call would then take for the contents hashed here. A failed stat
// is left out; the read says what is wrong.
func ReadSetInput(ctx context.Context, in *fileset.Set, i int, st Stat) (FileEntry, []byte, error) {
	b, err := in.ReadFile(ctx, i)
	if err != nil {
		return FileEntry{}, nil, fmt.Errorf("checkpoint: %w", err)
	}
	e, err := hashReader(bytes.NewReader(b), in.Name(i))
	if err == nil && st.Err == nil {
		e.setStat(st.FileInfo, st.At)
	}
	return e, b, err
}

// Restat gives the consumed entry with e's path and sha256, if any, e's
// stat (e was read again: its stat matched none, it had none, or it was
// racy), so that the next call need not read it; it reports whether an
// entry changed. Only an entry of that very path takes it: a copy of a
// consumed file under another name is known by its hash and read each
// time, and the consumed entry keeps the path it was trained from.
func (m *Manifest) Restat(e FileEntry) bool {
	if e.HashedAt.IsZero() {
		return false
	}
	for i := range m.Consumed {
		c := &m.Consumed[i]
		if fileset.StoredName(c.Path) == fileset.StoredName(e.Path) && c.SHA256 == e.SHA256 {
			c.ModTime, c.ETag, c.FileID, c.HashedAt = e.ModTime, e.ETag, e.FileID, e.HashedAt
			return true
		}
	}
	return false
}

// hashReader is the entry of the file named path read from r.
func hashReader(r io.Reader, path string) (FileEntry, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return FileEntry{}, fmt.Errorf("checkpoint: hash %s: %w", path, err)
	}
	return FileEntry{Path: path, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}
