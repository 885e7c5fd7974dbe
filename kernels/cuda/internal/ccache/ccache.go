// Package ccache runs a C or C++ compiler through a cache of its outputs,
// keyed by everything the compiler sees: its identity (resolved path and
// --version), its arguments, and the preprocessed translation unit, so that
// every header's text is in the key and an edit anywhere misses.
//
// Why: one `make test` builds the same CUDA emulator (cudafake) and the same
// CPU-shim harness (kernels/cuda's tests) in many test processes: kernels/cuda,
// cudafake, train/model, train/trainer, serve/engine and the commands' tests,
// then again under -race and without cgo. Each build takes 7–15 s of a core;
// preprocessing, which decides a hit, a fifth of a second. It is ccache's
// preprocessor mode, small enough to hold here rather than install.
package ccache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Cache is a folder of compiled outputs, each named by its key. The zero
// Cache (Dir "") caches nothing: every Compile runs the compiler.
type Cache struct {
	Dir string
}

// keep is how long an entry unused stays: Compile removes older entries
// (and their lock files) whenever it stores a new one.
const keep = 7 * 24 * time.Hour

// Default is the cache the tests share: hone-ccache in the user's cache
// folder (os.UserCacheDir, beside Go's build cache), or the zero Cache where
// there is none. Removing the folder empties it.
func Default() Cache {
	base, err := os.UserCacheDir()
	if err != nil {
		return Cache{}
	}
	return Cache{Dir: filepath.Join(base, "hone-ccache")}
}

// Compile runs `compiler args... -o out` with stdin on its standard input
// (args name the inputs; "-" reads stdin), unless the cache holds the
// output of a compile with the same key: then it copies that to out. It
// reports whether out came from the cache. A failed compile is not cached:
// its error holds the compiler's output. A cache folder that cannot be used
// (not writable, a full disk) costs only the caching: the compile still runs.
// Processes that miss the same key at once compile it once: the others wait
// on the entry's lock file.
func (c Cache) Compile(ctx context.Context, compiler string, args []string, stdin string, out string) (hit bool, err error) {
	if c.Dir == "" {
		return false, run(ctx, compiler, args, stdin, out)
	}
	key, err := c.key(ctx, compiler, args, stdin)
	if err != nil {
		// Preprocessing failed: the compile says why, in its own words.
		return false, run(ctx, compiler, args, stdin, out)
	}
	unlock, err := c.lock(key)
	if err != nil {
		return false, run(ctx, compiler, args, stdin, out)
	}
	defer unlock()
	entry := filepath.Join(c.Dir, key)
	if err := copyFile(entry, out); err == nil {
		touch(entry)
		return true, nil
	}
	if err := run(ctx, compiler, args, stdin, out); err != nil {
		return false, err
	}
	c.store(out, entry)
	return false, nil
}

// run compiles: compiler args... -o out.
func run(ctx context.Context, compiler string, args []string, stdin string, out string) error {
	cmd := exec.CommandContext(ctx, compiler, append(append([]string(nil), args...), "-o", out)...)
	cmd.Stdin = strings.NewReader(stdin)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", compiler, err, msg)
	}
	return nil
}

// key is the hex SHA-256 of the compiler's resolved path and --version
// output, the arguments, and the preprocessed text (compiler args... -E).
func (c Cache) key(ctx context.Context, compiler string, args []string, stdin string) (string, error) {
	path, err := exec.LookPath(compiler)
	if err != nil {
		return "", err
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return "", err
	}
	version, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", compiler, err)
	}
	pre := exec.CommandContext(ctx, compiler, append(append([]string(nil), args...), "-E")...)
	pre.Stdin = strings.NewReader(stdin)
	var text bytes.Buffer
	pre.Stdout = &text
	if err := pre.Run(); err != nil {
		return "", fmt.Errorf("%s -E: %w", compiler, err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(path), version, []byte(strings.Join(args, "\x00")), text.Bytes()} {
		fmt.Fprintf(h, "%d\x00", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lock takes the entry's lock file (flock, exclusive), creating the cache
// folder if need be, and returns what releases it.
func (c Cache) lock(key string) (unlock func(), err error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, key+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// store copies out into the cache as entry, through a temporary file and a
// rename so that no reader sees half an entry, then trims the folder. A
// failure leaves the cache as it was: the caller has its output already.
func (c Cache) store(out, entry string) {
	tmp, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return
	}
	tmp.Close()
	if err := copyFile(out, tmp.Name()); err != nil || os.Rename(tmp.Name(), entry) != nil {
		os.Remove(tmp.Name())
		return
	}
	c.trim(time.Now().Add(-keep))
}

// trim removes entries, lock files and stray temporary files last used
// before cutoff.
func (c Cache) trim(cutoff time.Time) {
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(c.Dir, e.Name()))
		}
	}
}

// touch marks an entry used now, when its time is more than an hour old
// (as Go's build cache does, to spare a write on every hit).
func touch(path string) {
	if info, err := os.Stat(path); err == nil && time.Since(info.ModTime()) > time.Hour {
		now := time.Now()
		os.Chtimes(path, now, now)
	}
}

// copyFile copies src to dst (created or truncated, executable: the
// outputs are programs and shared libraries).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}
