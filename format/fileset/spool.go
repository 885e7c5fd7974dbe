package fileset

import (
	"context"
	"fmt"
	"io"
	"os"
)

// spool copies in to a new temporary file in dir (os.TempDir() when empty)
// and returns its path, stopping when ctx is cancelled. The name starts
// with "." and holds ".tmp-", like every temporary file of Hone's, so a
// directory input never picks it up. On error nothing is left behind.
func spool(ctx context.Context, in io.Reader, dir string) (string, error) {
	f, err := os.CreateTemp(dir, ".hone-stdin.tmp-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, ctxReader{ctx, in})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("copy to %s: %w", f.Name(), err)
	}
	return f.Name(), nil
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

// isPipe reports whether the local input name is a file that can be read
// only once: a named pipe (bash's <(…) is /dev/fd/N, one), a character
// device such as /dev/stdin on a terminal or a socket. Such a file has no
// size and no random access, so it is copied like stdin.
func isPipe(name string) bool {
	if st, err := storeFor(name); err != nil || st != (local{}) {
		return false
	}
	p, _, err := localName(name)
	if err != nil {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && !st.Mode().IsRegular()
}

// spoolPipe copies the pipe name to a temporary file in dir and returns its
// path.
func spoolPipe(ctx context.Context, name, dir string) (string, error) {
	p, _, err := localName(name)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return spoolOpen(ctx, name, f, dir)
}

// spoolOpen copies the opened pipe f, input name, to a temporary file in
// dir and returns its path.
func spoolOpen(ctx context.Context, name string, f *os.File, dir string) (string, error) {
	p, err := spool(ctx, f, dir)
	if err != nil {
		return "", fmt.Errorf("copy %s (a pipe): %w", name, err)
	}
	return p, nil
}
