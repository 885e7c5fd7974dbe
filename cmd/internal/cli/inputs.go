package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Stdin is the input argument that means standard input.
const Stdin = "-"

// ExpandInputs turns input arguments into a list of files. Each argument is
// a file path, a glob (matched with filepath.Glob), a directory (meaning the
// files directly in it whose names end in dirExt, e.g. ".parquet"), or "-"
// for stdin. Matches of one glob or directory are sorted by name; the
// arguments keep their order, and a file named twice is kept once, at its
// first place. Like the shell's, a glob matches names starting with "."
// (such as temporary outputs) only if its last element starts with ".". A glob that matches nothing, a missing path, an empty
// directory, "-" given twice, or no arguments at all is a usage error that
// names the argument.
func ExpandInputs(args []string, dirExt string) ([]string, error) {
	if len(args) == 0 {
		return nil, Usagef("no input given: name files, globs, directories, or - for stdin")
	}
	var out []string
	seen := make(map[string]bool)
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, arg := range args {
		if arg == Stdin {
			if seen[Stdin] {
				return nil, Usagef("input %q: stdin given more than once", arg)
			}
			add(Stdin)
			continue
		}
		st, err := os.Stat(arg)
		switch {
		case err == nil && st.IsDir():
			files, err := dirFiles(arg, dirExt)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				add(f)
			}
		case err == nil:
			add(arg)
		case hasMeta(arg):
			matches, gerr := filepath.Glob(arg)
			if gerr != nil {
				return nil, Usagef("input %q: bad glob pattern: %w", arg, gerr)
			}
			if len(matches) == 0 {
				return nil, Usagef("input %q: glob matches no files", arg)
			}
			slices.Sort(matches)
			for _, m := range matches {
				if st, err := os.Stat(m); err == nil && st.IsDir() {
					continue // a glob names files; a matched directory is not descended into
				}
				if hidden(m) && !hidden(arg) {
					continue // as in the shell, * does not match a leading dot (our temp files)
				}
				add(m)
			}
		case errors.Is(err, fs.ErrNotExist):
			return nil, Usagef("input %q: no such file or directory", arg)
		default:
			return nil, BadInputf("input %q: %w", arg, err)
		}
	}
	if len(out) == 0 {
		return nil, Usagef("inputs %q name no files", args)
	}
	return out, nil
}

func hidden(p string) bool { return strings.HasPrefix(filepath.Base(p), ".") }

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

func dirFiles(dir, ext string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, BadInputf("input directory %q: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ext) && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, Usagef("input directory %q has no *%s files", dir, ext)
	}
	return files, nil
}

// Input is one opened input file. For "-" it is a temporary copy of stdin,
// which Close removes; a Parquet reader needs random access to find the
// footer at the end.
type Input struct {
	*os.File
	Name string // the argument, "-" for stdin
	Size int64
	temp string // path of the spooled copy of stdin, removed by Close
}

// Close closes the file and removes a spooled copy of stdin.
func (in *Input) Close() error {
	err := in.File.Close()
	if in.temp != "" {
		if rerr := os.Remove(in.temp); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// OpenInput opens name for random access. For "-" it copies stdin into a
// temporary file in tmpDir (os.TempDir() when empty) first, stopping when
// ctx is cancelled. A missing or unreadable file is bad input.
func OpenInput(ctx context.Context, name string, stdin io.Reader, tmpDir string) (*Input, error) {
	if name != Stdin {
		f, err := os.Open(name)
		if err != nil {
			return nil, BadInputf("open input: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, BadInputf("open input: %w", err)
		}
		return &Input{File: f, Name: name, Size: st.Size()}, nil
	}
	f, err := os.CreateTemp(tmpDir, ".hone-stdin.tmp-*")
	if err != nil {
		return nil, fmt.Errorf("spool stdin: %w", err)
	}
	n, err := io.Copy(f, ctxReader{ctx, stdin})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("spool stdin to %s: %w", f.Name(), err)
	}
	return &Input{File: f, Name: Stdin, Size: n, temp: f.Name()}, nil
}

// ctxReader stops a copy between reads once ctx is done. A read that blocks
// on a quiet pipe still blocks; the second signal is the way out of that.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
