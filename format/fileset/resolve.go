package fileset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Stdin is the input argument that means standard input.
const Stdin = "-"

// Options says how Resolve treats directories and "-".
type Options struct {
	// Ext is the name ending of the files a directory stands for;
	// "" means ".parquet".
	Ext string
	// Stdin is read for "-"; nil means os.Stdin.
	Stdin io.Reader
	// TempDir is where "-" is copied; "" means os.TempDir().
	TempDir string
	// Sequential says the inputs are read once from the start (JSON
	// lines): "-" is then read from Stdin as it comes, not copied.
	Sequential bool
	// Folder, when set, checks the files a directory argument stands
	// for, in order, before they are taken: a folder can stand for a
	// whole that its files must make up (the stages check that a folder
	// of shard parts holds every part, format/shard.CheckFolder). Its
	// error fails Resolve, naming the argument. Files and globs are taken
	// as named, unchecked.
	Folder func(names []string) error
}

// Set is an ordered set of resolved inputs. Close removes the copies of
// stdin and of pipes; a Set is not safe for concurrent use while being
// closed.
type Set struct {
	names []string
	// spools holds the copy of each input that can be read only once
	// ("-", and a named pipe such as bash's <(…)), by name; Close removes
	// them.
	spools map[string]string
	stdin  io.Reader // stdin read in order (Options.Sequential)
	held   [][]byte  // the contents of names[i], read before (Held)
	// otherCase is what ListSet passed over for the case of its
	// extension alone (OtherCase).
	otherCase []string
	// repeated is what Resolve passed over as a file an earlier name
	// already brought (Repeated).
	repeated []string
	// buckets are the object-store buckets the set's files share, so that
	// reading a folder of objects reuses one client's connections rather
	// than making one per object; Close closes them.
	buckets *buckets
}

// Files is the set of the named files or URLs taken as they are: no glob,
// directory or "-". For names resolved before, e.g. recorded in a
// manifest; a name that cannot be opened fails at Open.
func Files(names ...string) *Set {
	return &Set{names: append([]string(nil), names...), buckets: newBuckets()}
}

// Held is the set of the named inputs whose contents were read before:
// Open serves data[i] as the i-th input, named names[i], and never reads
// the name again. A caller that checks or hashes what it read (a run's
// manifest records input files by sha256) then decodes those very bytes,
// even when the file is replaced in between; opening the name again could
// give the new file's.
func Held(names []string, data [][]byte) *Set {
	if len(names) != len(data) {
		panic(fmt.Sprintf("fileset.Held: %d names for %d contents", len(names), len(data)))
	}
	return &Set{names: append([]string(nil), names...), held: append([][]byte(nil), data...)}
}

// Len is the number of inputs; 0 for a nil set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// Name is the i-th input's name: the path or URL, "-" for stdin.
func (s *Set) Name(i int) string { return s.names[i] }

// Names are the inputs' names in order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.names...)
}

// MarshalJSON writes the names, so a run's saved config lists its inputs,
// with their queries' secrets masked (RedactURL): the config is kept and
// shown where the store's keys are not. Nothing opens the names it lists.
func (s *Set) MarshalJSON() ([]byte, error) {
	names := make([]string, len(s.names))
	for i, n := range s.names {
		names[i] = RedactURL(n)
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads names written by MarshalJSON as Files does: taken as
// they are, with no copy of stdin behind "-".
func (s *Set) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return fmt.Errorf("input set: want a list of names: %w", err)
	}
	*s = Set{names: names, buckets: newBuckets()}
	return nil
}

// Open opens the i-th input. It may be called again after Close of the
// File; stdin is copied once, when the set was resolved.
func (s *Set) Open(ctx context.Context, i int) (*File, error) {
	name := s.names[i]
	if s.held != nil {
		b := s.held[i]
		return &File{Name: name, Size: int64(len(b)), r: bytes.NewReader(b), c: io.NopCloser(nil)}, nil
	}
	if p, ok := s.spools[name]; ok {
		f, err := local{}.Open(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("open the copy of %s: %w", name, err)
		}
		f.Name = name
		return f, nil
	}
	if name != Stdin {
		return openIn(ctx, s.buckets, name)
	}
	switch {
	case s.stdin != nil:
		return &File{Name: Stdin, Size: -1, r: noReadAt{}, c: io.NopCloser(nil)}, nil
	default:
		return nil, argErrorf(Stdin, "stdin is not part of this set")
	}
}

// Stdin returns standard input for a set resolved with
// Options.Sequential, nil otherwise: the caller reads "-" from it in order.
func (s *Set) Stdin() io.Reader { return s.stdin }

// noReadAt stands for stdin read in order: it has no random access.
type noReadAt struct{}

func (noReadAt) ReadAt([]byte, int64) (int, error) {
	return 0, errors.New("stdin is read in order here (not copied); read it with Set.Stdin")
}

// Close removes the copies of stdin and of pipes, if any, and closes the
// object-store buckets the set's files share (one still held by an open
// File when that File is closed). Open still works after Close, each File
// then with a bucket of its own.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	if err := s.buckets.Close(); err != nil {
		errs = append(errs, err)
	}
	for name, p := range s.spools {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the copy of %s: %w", name, err))
		}
	}
	s.spools = nil
	return errors.Join(errs...)
}

// Resolve turns input arguments into a Set by the rule in the package
// documentation. Stdin is copied last, after every other argument
// resolved, so a typo does not consume a pipe. Errors that blame an
// argument match ErrBadArgument and name it.
func Resolve(ctx context.Context, args []string, opts Options) (*Set, error) {
	if len(args) == 0 {
		return nil, &ArgError{Arg: "", Err: errors.New("no input given: name files, globs, directories, or - for stdin")}
	}
	ext := opts.Ext
	if ext == "" {
		ext = ".parquet"
	}
	// The set's buckets serve the resolving too: the files it lists are in
	// the buckets it will read them from.
	s := &Set{buckets: newBuckets()}
	seen := make(map[string]bool)
	for _, arg := range args {
		if err := ctx.Err(); err != nil {
			s.Close()
			return nil, err
		}
		names, err := expand(ctx, s.buckets, arg, ext, opts.Folder)
		if err == nil && arg == Stdin && seen[Stdin] {
			err = argErrorf(arg, "stdin given more than once")
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("input %w", err)
		}
		for _, n := range names {
			if k := fileKey(n); !seen[k] {
				seen[k] = true
				s.names = append(s.names, n)
			} else {
				s.repeated = append(s.repeated, n)
			}
		}
	}
	// A pipe is read once: copy it now, as stdin, so that each Open of
	// the set reads all of it.
	for _, n := range s.names {
		if n == Stdin || !isPipe(n) {
			continue
		}
		p, err := spoolPipe(ctx, n, opts.TempDir)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.keep(n, p)
	}
	if seen[Stdin] {
		if err := s.takeStdin(ctx, opts); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// keep records p as the copy of input name.
func (s *Set) keep(name, p string) {
	if s.spools == nil {
		s.spools = map[string]string{}
	}
	s.spools[name] = p
}

// takeStdin copies stdin to a temporary file, or keeps it to be read in
// order.
func (s *Set) takeStdin(ctx context.Context, opts Options) error {
	in := opts.Stdin
	if in == nil {
		in = os.Stdin
	}
	if opts.Sequential {
		s.stdin = in
		return nil
	}
	p, err := spool(ctx, in, opts.TempDir)
	if err != nil {
		return fmt.Errorf("copy stdin: %w", err)
	}
	s.keep(Stdin, p)
	return nil
}

// List applies the directory rule to dir: the regular files directly in
// it whose names end in ext and do not start with ".", sorted by name. An
// empty result is not an error here (a watched folder may be empty).
func List(ctx context.Context, dir, ext string) ([]string, error) { return listIn(ctx, nil, dir, ext) }

// ListSet is List's files as a Set, whose listing, Info and ReadFile
// share one bucket per bucket URL (Close closes them): a watched folder
// of objects is listed, statted and read over one client's connections,
// not a new one per object.
func ListSet(ctx context.Context, dir, ext string) (*Set, error) {
	c := newBuckets()
	names, other, err := listCased(ctx, c, dir, ext)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Set{names: names, otherCase: other, buckets: c}, nil
}

// OtherCase is the files of a ListSet folder that the directory rule
// passes over only for the case of their extension (a.PARQUET where ext
// is ".parquet"), sorted by name: the rule is case-sensitive, as every
// reader of inputs is, so a caller that keeps reading a folder (a watched
// one) names them rather than pass them over without a word.
func (s *Set) OtherCase() []string { return s.otherCase }

// Repeated is the names Resolve read once rather than twice, as spelled
// where they came again (a file given twice, or also in a folder given),
// in argument order: a caller that would write every input's rows once
// (a merge) names them rather than drop them without a word.
func (s *Set) Repeated() []string { return s.repeated }

// Info stats the i-th input's name (see StatFile); a set's stdin, or
// input held (Held), has no stat of its own.
func (s *Set) Info(ctx context.Context, i int) (FileInfo, error) {
	if name := s.names[i]; s.held == nil && s.spools[name] == "" && name != Stdin {
		return statIn(ctx, s.buckets, name)
	}
	return FileInfo{}, argErrorf(s.names[i], "was read before; its name is not statted again")
}

// Listed is what the listing that made the set (ListSet) said of its
// i-th object, size and time, before it is read: no request of its own,
// where Info asks the store (a HEAD). A file the listing said nothing of
// (a local one, or one read since) is statted as Info does.
func (s *Set) Listed(ctx context.Context, i int) (FileInfo, error) {
	if o, ok := s.buckets.peekListed(s.names[i]); ok {
		return FileInfo{Size: o.Size, ModTime: o.ModTime}, nil
	}
	return s.Info(ctx, i)
}

// ReadFile reads the i-th input whole (see the function ReadFile).
func (s *Set) ReadFile(ctx context.Context, i int) ([]byte, error) {
	if name := s.names[i]; s.held == nil && s.spools[name] == "" && name != Stdin {
		return readIn(ctx, s.buckets, name)
	}
	f, err := s.Open(ctx, i)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f.Reader())
}

// listIn is List with the buckets in c shared (nil: a bucket of its own).
func listIn(ctx context.Context, c *buckets, dir, ext string) ([]string, error) {
	out, _, err := listCased(ctx, c, dir, ext)
	return out, err
}

// listCased is listIn that also returns the names it passes over only for
// the case of their extension (Set.OtherCase).
func listCased(ctx context.Context, c *buckets, dir, ext string) (out, other []string, err error) {
	st, err := storeIn(c, dir)
	if err != nil {
		return nil, nil, err
	}
	all, err := st.List(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range all {
		b := base(n)
		switch {
		case strings.HasPrefix(b, "."):
		case strings.HasSuffix(b, ext):
			out = append(out, n)
		case len(b) >= len(ext) && strings.EqualFold(b[len(b)-len(ext):], ext):
			other = append(other, n)
		}
	}
	return out, other, nil
}

// expand resolves one argument other than a repeated "-".
func expand(ctx context.Context, c *buckets, arg, ext string, check func([]string) error) ([]string, error) {
	if arg == Stdin {
		return []string{Stdin}, nil
	}
	st, err := storeIn(c, arg)
	if err != nil {
		return nil, err
	}
	dir, err := st.Stat(ctx, arg)
	switch {
	case err == nil && dir:
		files, err := listIn(ctx, c, arg, ext)
		if err != nil {
			return nil, fmt.Errorf("%q: list directory: %w", arg, err)
		}
		dangling, err := DanglingLinks(ctx, arg, ext)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", DisplayName(arg), err)
		}
		if len(dangling) > 0 {
			return nil, danglingError(arg, dangling)
		}
		if len(files) == 0 {
			return nil, argErrorf(arg, "directory has no *%s files", ext)
		}
		if check != nil {
			if err := check(files); err != nil {
				return nil, fmt.Errorf("%q: %w", DisplayName(arg), err)
			}
		}
		return files, nil
	case err == nil:
		return []string{arg}, nil // a name that exists is taken literally, glob characters and all
	case errors.Is(err, ErrBadArgument):
		return nil, err
	case errors.Is(err, ErrNoBucket):
		// Said as such: "no such file or directory" sent the user
		// looking for the object in a bucket that is not there.
		var nb *noBucketError
		errors.As(err, &nb)
		return nil, &ArgError{Arg: arg, query: true, Err: nb}
	case errors.Is(err, fs.ErrNotExist) && hasMeta(pathPart(arg)):
		return glob(ctx, st, arg)
	case errors.Is(err, fs.ErrNotExist):
		return nil, argErrorf(arg, "no such file or directory")
	default:
		return nil, fmt.Errorf("%q: %w", DisplayName(arg), err)
	}
}

// glob expands a pattern that names no existing file.
func glob(ctx context.Context, st Store, pattern string) ([]string, error) {
	matches, err := st.Glob(ctx, pattern)
	if err != nil {
		if errors.Is(err, ErrBadArgument) {
			return nil, err
		}
		return nil, argErrorf(pattern, "bad glob pattern: %w", err)
	}
	var out []string
	for _, m := range matches {
		if strings.HasPrefix(base(m), ".") && !strings.HasPrefix(base(pattern), ".") {
			continue // as in the shell, * does not match a leading dot (our temporary files)
		}
		out = append(out, m)
	}
	var dangling, special []string
	if _, ok := st.(local); ok {
		for _, m := range out {
			p, _, err := localName(m)
			if err != nil {
				continue
			}
			if target, ok := danglingLink(p); ok {
				dangling = append(dangling, m+" -> "+target)
			} else if kind := specialKind(p); kind != "" {
				special = append(special, m+": not a regular file ("+kind+")")
			}
		}
	}
	if len(dangling) > 0 {
		return nil, danglingError(pattern, dangling)
	}
	if len(special) > 0 {
		// A glob means files: a device or pipe it matched (a link to
		// /dev/zero or a terminal) was copied as a pipe, without end.
		return nil, argErrorf(pattern, "%s; a glob matches regular files only: name a pipe or device on its own", strings.Join(special, "; "))
	}
	if len(out) == 0 {
		return nil, argErrorf(pattern, "glob matches no files")
	}
	return out, nil
}

// ErrNotRegular is CheckRegular's error for a path that is there but no
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// CheckRegular returns nil when the local path (a link followed) is a
// regular file, an error wrapping ErrNotRegular that names it and what it
// is ("a named pipe", "a character device", "a folder") when it is
// another thing, and Stat's error otherwise (errors.Is(err,
// fs.ErrNotExist) for a missing one). Readers of a file polled for good
// (a run's latest, an adapter's files) check first: opening a named pipe
// with no writer blocks, and a device (a link to /dev/zero) never ends.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		return nil
	}
	kind := "a folder"
	if !st.IsDir() {
		kind = specialKind(path)
	}
	return fmt.Errorf("%s is %w (%s)", path, ErrNotRegular, kind)
}

// specialKind names what the local path p (or the file a link at p
// leads to) is when it is not a regular file or a folder: "a character
// device", "a named pipe", ...; "" otherwise, or when it cannot be statted
// (the reading then names the error).
func specialKind(p string) string {
	st, err := os.Stat(p)
	if err != nil || st.Mode().IsRegular() || st.IsDir() {
		return ""
	}
	switch m := st.Mode(); {
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "of mode " + st.Mode().String()
}

// danglingError refuses an argument (a folder or a glob) that names
// symbolic links whose targets do not exist or loop (each "NAME ->
// TARGET", as DanglingLinks gives them), as
// a folder and a glob alike: passed over, the file the link was meant to
// bring would go untrained without a word.
func danglingError(arg string, links []string) error {
	var parts []string
	for _, l := range links {
		name, target, _ := strings.Cut(l, " -> ")
		if t, loop := strings.CutSuffix(target, loopNote); loop {
			parts = append(parts, fmt.Sprintf("%s: a symbolic link to %s, which leads back to itself%s", name, t, loopNote))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: a symbolic link to %s, which does not exist", name, target))
	}
	return argErrorf(arg, "%s; remove the link, or point it at a file", strings.Join(parts, "; "))
}

// fileKey is what names the same file alike however it is spelled, for
// reading a file named twice once: the absolute path of a local file
// ("./in/a.parquet", "in/a.parquet" and file:// URLs of it), an object's
// URL with its key as the store takes it.
func fileKey(name string) string {
	if name == Stdin {
		return name
	}
	if IsURL(name) {
		// s3://b/p//a and s3://b/p/a name one key (cleanKey).
		if n, err := parseBlobName(name); err == nil {
			return n.name(n.key)
		}
		return name
	}
	p, _, err := localName(name)
	if err != nil {
		return name
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	// A symbolic link and its target are one file, read once.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// SameFile reports whether a and b name one file however each is spelled
// (fileKey: "./in/a.parquet", an absolute path, a file:// URL, a symbolic
// link), are hard links of one local file, or may name one object
// (sameObject: its query aside but for the store it names). A stage asks
// it before writing over one of its inputs. Stdin is no file: it is the
// same as nothing. ctx bounds the host name lookups of two endpoints
// spelled differently.
func SameFile(ctx context.Context, a, b string) bool {
	if a == Stdin || b == Stdin {
		return false
	}
	if fileKey(a) == fileKey(b) {
		return true
	}
	if IsURL(a) && IsURL(b) {
		if same, ok := sameObject(ctx, a, b); ok {
			return same
		}
	}
	pa, errA := LocalPath(a)
	pb, errB := LocalPath(b)
	if errA != nil || errB != nil {
		return false
	}
	ia, errA := os.Stat(pa)
	ib, errB := os.Stat(pb)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// pathPart is name without the query of an object-store URL, whose "?"
// is no glob character.
func pathPart(name string) string {
	if m := schemeRE.FindStringSubmatch(name); m != nil && !strings.EqualFold(m[1], "file") {
		name, _, _ = strings.Cut(name, "?")
	}
	return name
}

// DisplayName is name as a message shows it: an object-store URL without
// its query, which opens the bucket (endpoint=http://…&use_path_style=…,
// region=…) and says nothing of which file is meant
// ("s3://b/dir/a.parquet?endpoint=…" is "s3://b/dir/a.parquet"); a path
// or file:// URL as it is. A listed name carries its folder's query, so a
// message naming several files repeated it for each.
func DisplayName(name string) string { return pathPart(name) }

// HasExt reports whether name (a path, or a URL without an object store's
// query: s3://b/round.parquet?region=… has ".parquet") ends in ext. The
// stages that tell an input's format by its name ask it here.
func HasExt(name, ext string) bool { return strings.HasSuffix(pathPart(name), ext) }

// base is the last element of a path or URL.
func base(name string) string { return path.Base(filepath.ToSlash(pathPart(name))) }
