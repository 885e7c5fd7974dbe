package fileset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
)

// Store reads and writes the files under one kind of name: the local file
// system (plain paths and file:// URLs) now, an object store later. Names
// passed in and returned are in the caller's form (a file:// URL stays a
// URL), so messages show what the user typed. The input rule (extension,
// hidden names, order, duplicates) is Resolve's, not the store's.
type Store interface {
	// Stat says whether name is a directory; an absent name gives an error
	// matching fs.ErrNotExist.
	Stat(ctx context.Context, name string) (dir bool, err error)
	// Info is what a stat of the file name says, without reading it; an
	// absent name gives an error matching fs.ErrNotExist.
	Info(ctx context.Context, name string) (FileInfo, error)
	// List returns the regular files directly in dir, sorted by name (a
	// local symbolic link to a regular file is one).
	List(ctx context.Context, dir string) ([]string, error)
	// Glob returns the names of the files matching pattern, sorted.
	Glob(ctx context.Context, pattern string) ([]string, error)
	// Open opens name for random access.
	Open(ctx context.Context, name string) (*File, error)
	// Create starts writing name, replaced only when the Output is
	// committed.
	Create(ctx context.Context, name string) (Output, error)
}

// schemeRE matches a URL's scheme and "://".
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// storeFor picks the store for a name by its URL scheme. Plain paths and
// file:// URLs are local; a scheme a gocloud.dev/blob driver registered
// (linked by importing format/fileset/blobdrivers) is an object store.
func storeFor(name string) (Store, error) { return storeIn(nil, name) }

// storeIn is storeFor whose object store shares the buckets in c (nil: a
// bucket per call).
func storeIn(c *buckets, name string) (Store, error) {
	m := schemeRE.FindStringSubmatch(name)
	if m == nil {
		return local{}, nil
	}
	scheme := strings.ToLower(m[1])
	switch {
	case scheme == "file":
		return local{}, nil
	case blob.DefaultURLMux().ValidBucketScheme(scheme):
		return blobStore{c: c}, nil
	default:
		return nil, &ArgError{Arg: name, Err: fmt.Errorf("no support for %s:// in this program: name a local path, a file:// URL, or an object-store URL of a driver it links (the hone commands link s3://, and gs:// and azblob:// when built with -tags gcs,azblob)", m[1])}
	}
}

// local is the local file system. It takes plain paths and file:// URLs
// (file:///abs/path or file://localhost/abs/path).
type local struct{}

// localName splits name into the path to use and a function that puts a
// path back into name's form.
func localName(name string) (string, func(string) string, error) {
	if schemeRE.FindStringIndex(name) == nil {
		return name, func(p string) string { return p }, nil
	}
	u, err := url.Parse(name)
	if err != nil {
		return "", nil, &ArgError{Arg: name, Err: fmt.Errorf("not a file URL: %w", err)}
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", nil, &ArgError{Arg: name, Err: fmt.Errorf("file URL names host %q; only local files (file:///path) are read", u.Host)}
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Path == "" {
		return "", nil, &ArgError{Arg: name, Err: errors.New("a file URL is file:///absolute/path (write ? as %3F and # as %23)")}
	}
	host := u.Host
	back := func(p string) string {
		return (&url.URL{Scheme: "file", Host: host, Path: filepath.ToSlash(p)}).String()
	}
	return filepath.FromSlash(u.Path), back, nil
}

func (local) Stat(ctx context.Context, name string) (bool, error) {
	p, _, err := localName(name)
	if err != nil {
		return false, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

func (local) Info(ctx context.Context, name string) (FileInfo, error) {
	p, _, err := localName(name)
	if err != nil {
		return FileInfo{}, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return FileInfo{}, err
	}
	if !st.Mode().IsRegular() {
		// A pipe's size and time say nothing of what a reading gives.
		return FileInfo{}, &ArgError{Arg: name, Err: errors.New("not a regular file")}
	}
	return FileInfo{Size: st.Size(), ModTime: st.ModTime(), ID: fileID(st)}, nil
}

func (local) List(ctx context.Context, dir string) ([]string, error) {
	p, back, err := localName(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p) // sorted by name
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		full := filepath.Join(p, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			// A link to a regular file is that file, as cat dir/* and
			// the glob read it; one to a folder is not descended into,
			// and a dangling one is DanglingLinks's to name.
			if st, err := os.Stat(full); err != nil || !st.Mode().IsRegular() {
				continue
			}
		} else if !e.Type().IsRegular() {
			continue
		}
		names = append(names, back(full))
	}
	return names, nil
}

// DanglingLinks names the symbolic links directly in the local folder dir
// whose name ends in ext (and does not start with ".") and whose target
// does not exist or is a loop of links, each as "NAME -> TARGET" (TARGET
// ending in " (a loop of symbolic links)" for a loop): List passes them over, and a
// caller says what becomes of them (Resolve refuses them; a --watch-dir
// call leaves them for a later one). An object store has no links: nil.
func DanglingLinks(ctx context.Context, dir, ext string) ([]string, error) {
	st, err := storeIn(nil, dir)
	if err != nil {
		return nil, err
	}
	if _, ok := st.(local); !ok {
		return nil, nil
	}
	p, back, err := localName(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("%s: list directory: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ext) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if target, ok := danglingLink(filepath.Join(p, e.Name())); ok {
			out = append(out, back(filepath.Join(p, e.Name()))+" -> "+target)
		}
	}
	return out, nil
}

// loopNote ends the target danglingLink gives for a link that leads back
// to itself, so that danglingError words it as a loop, not as missing.
const loopNote = " (a loop of symbolic links)"

// danglingLink says whether the local path p is a symbolic link whose
// target does not exist (also where it runs through a file), or that leads back to itself (its target then
// ends in loopNote), and names that target as the link holds it. A loop
// names no file, as a missing target does: the listing passes it over.
func danglingLink(p string) (string, bool) {
	_, err := os.Stat(p)
	loop := errors.Is(err, syscall.ELOOP)
	// A target that runs through a file as if it were a folder
	// (a.parquet/x.parquet) does not exist either, though stat says
	// ENOTDIR.
	missing := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
	if !loop && !missing {
		return "", false
	}
	target, err := os.Readlink(p)
	if err != nil {
		return "", false // not a link (or gone since): the reading names it
	}
	if loop {
		target += loopNote
	}
	return target, true
}

func (local) Glob(ctx context.Context, pattern string) ([]string, error) {
	p, back, err := localName(pattern)
	if err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(p)
	if err != nil {
		return nil, err
	}
	slices.Sort(matches)
	var names []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			continue // a glob names files; a matched directory is not descended into
		}
		names = append(names, back(m))
	}
	return names, nil
}

func (local) Open(ctx context.Context, name string) (*File, error) {
	p, _, err := localName(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, &ArgError{Arg: name, Err: errors.New("is a directory; name a file")}
	}
	if !st.Mode().IsRegular() {
		// A pipe (bash's <(…)): no size, no random access, one reading.
		// Read it into a copy that Close removes.
		defer f.Close()
		tmp, err := spoolOpen(ctx, name, f, "")
		if err != nil {
			return nil, err
		}
		c, err := local{}.Open(ctx, tmp)
		if err != nil {
			os.Remove(tmp)
			return nil, err
		}
		c.Name, c.c = name, removeOnClose{c.c, tmp}
		return c, nil
	}
	return &File{Name: name, Size: st.Size(), r: f, c: f}, nil
}

// removeOnClose closes a copy of a pipe and removes it.
type removeOnClose struct {
	io.Closer
	path string
}

func (r removeOnClose) Close() error {
	err := r.Closer.Close()
	if rerr := os.Remove(r.path); err == nil {
		err = rerr
	}
	return err
}

func (local) Create(ctx context.Context, name string) (Output, error) {
	p, _, err := localName(name)
	if err != nil {
		return nil, err
	}
	target, stream, err := outputTarget(p)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("output %w", argErrorf(name, "is a loop of symbolic links (or more than %d in a row); name a file", maxLinks))
	}
	if err != nil {
		return nil, fmt.Errorf("create %w", err)
	}
	if stream {
		// A socket cannot be opened (ENXIO): say what it is.
		if st, err := os.Stat(target); err == nil && st.Mode()&fs.ModeSocket != 0 {
			return nil, fmt.Errorf("output %w", argErrorf(name, "is a socket; name a file, a pipe or a device"))
		}
		return openStream(ctx, name, target)
	}
	o, err := createLocal(name, target)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// FileInfo is what a stat of a file or object says: enough to tell, as
// git's index and rsync do, that it was not rewritten since an earlier
// stat gave the same, without reading it.
type FileInfo struct {
	Size int64
	// ModTime is a local file's modification time (to the nanosecond on
	// most file systems) or an object's last-modified time (to the second
	// on S3 and Azure).
	ModTime time.Time
	// ETag is the object store's version tag ("" for a local file): it
	// changes whenever the object is written with other contents, even
	// within the second its ModTime is given to.
	ETag string
	// ID is a local file's device and inode ("" for an object): a name
	// that comes to stand for another file (a symbolic link retargeted, a
	// file renamed over it) changes it even where size and time stay.
	ID string
}

// StatFile stats one named file or URL as it is (no glob, directory or
// "-"), with a bucket of its own.
func StatFile(ctx context.Context, name string) (FileInfo, error) {
	return statIn(ctx, nil, name)
}

// statIn is StatFile with the buckets in c shared (nil: a bucket of its
// own).
func statIn(ctx context.Context, c *buckets, name string) (FileInfo, error) {
	st, err := storeIn(c, name)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := st.Info(ctx, name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == name {
			return FileInfo{}, err // os.Stat's error names the file already
		}
		return FileInfo{}, fmt.Errorf("stat %s: %w", DisplayName(name), err)
	}
	return fi, nil
}

// File is an opened input: random access, since a Parquet footer sits at
// the end, and its size.
type File struct {
	Name string // as in the set: the path or URL, "-" for stdin
	Size int64
	r    io.ReaderAt
	c    io.Closer
}

// ReadAt reads len(p) bytes at off.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.r.ReadAt(p, off) }

// WillRead says that the reads to come fall in [off, off+n), a Parquet
// row group's column chunks for instance. An object store then fetches
// the range in one request when it is first read (up to MaxWillRead bytes)
// and fetches nothing past its edges for reads inside it, nor into it for
// reads before it. A local file ignores it.
func (f *File) WillRead(off, n int64) {
	if w, ok := f.r.(interface{ WillRead(off, n int64) }); ok {
		w.WillRead(off, n)
	}
}

// Reader reads the file from the start, for formats read in order (JSON
// lines).
func (f *File) Reader() io.Reader { return io.NewSectionReader(f.r, 0, f.Size) }

// Close releases the file.
func (f *File) Close() error { return f.c.Close() }

// Open opens one named file or URL as it is: no glob, directory or "-".
// For a name taken from a resolved set (a manifest, a flag naming one
// file).
func Open(ctx context.Context, name string) (*File, error) { return openIn(ctx, nil, name) }

// openIn is Open with the buckets in c shared (nil: a bucket of its own).
func openIn(ctx context.Context, c *buckets, name string) (*File, error) {
	st, err := storeIn(c, name)
	if err != nil {
		return nil, err
	}
	f, err := st.Open(ctx, name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == name {
			return nil, err // os.Open's error names the file already
		}
		return nil, fmt.Errorf("open %s: %w", DisplayName(name), err)
	}
	return f, nil
}

// ErrBadArgument is matched (errors.Is) by every error that blames an
// input or output argument: a missing file, a glob that matches nothing, a
// directory without input files, "-" twice, an unknown URL scheme.
var ErrBadArgument = errors.New("bad input or output argument")

// ErrNoBucket is matched (errors.Is) by the error of a URL whose bucket
// the store does not have (a typo, a bucket not made yet); so is
// fs.ErrNotExist.
var ErrNoBucket = errors.New("no such bucket")

// ArgError is the type of the errors that blame an argument. Its text
// names the argument.
type ArgError struct {
	Arg string // the argument as given
	Err error
	// query says the text shows Arg's object-store query: the error is
	// about the bucket it opens (a bad parameter, a bucket the store
	// named there does not have). Any other error quotes Arg as the user
	// names the file (DisplayName): endpoint=…&use_path_style=… says
	// nothing of a missing object or a glob that matched none.
	query bool
}

func (e *ArgError) Error() string {
	if e.Arg == "" {
		return e.Err.Error()
	}
	// The driver's own error may quote the URL with its query too.
	r := querySecrets(e.Arg)
	if !e.query {
		return fmt.Sprintf("%q: %s", DisplayName(e.Arg), r.Replace(e.Err.Error()))
	}
	return fmt.Sprintf("%q: %s", r.Replace(e.Arg), r.Replace(e.Err.Error()))
}

// Unwrap returns the wrapped error.
func (e *ArgError) Unwrap() error { return e.Err }

// Is makes every ArgError match ErrBadArgument.
func (e *ArgError) Is(target error) bool { return target == ErrBadArgument }

// argErrorf is an ArgError for arg with a formatted reason.
func argErrorf(arg, format string, args ...any) error {
	return &ArgError{Arg: arg, Err: fmt.Errorf(format, args...)}
}
