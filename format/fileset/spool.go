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
		return "", fmt.Errorf("copy stdin: %w", err)
	}
	_, err = io.Copy(f, ctxReader{ctx, in})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("copy stdin to %s: %w", f.Name(), err)
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
