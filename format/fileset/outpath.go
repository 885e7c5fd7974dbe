package fileset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks followed to an output's target, as the
// kernel's own limit (40) bounds a path's.
const maxLinks = 40

// outputTarget follows the symlinks of the local output path p to what
// it names. stream is true where the output must be written into rather
// than replaced: a pipe, device or socket, or a link in /proc/<pid>/fd
// (/dev/stdout, /dev/fd/1), which names an open file of a process (stdout
// redirected with `>` or `>>`), not a name to rename over. Otherwise
// target is the path of the file itself, beside which the temporary file
// is made and over which it is renamed, so that a symlink stays a symlink
// and the file it leads to gets the output. A target that does not exist
// yet (a dangling link's) is returned as it is, for Create to make.
func outputTarget(p string) (target string, stream bool, err error) {
	for range maxLinks {
		dir, file := filepath.Split(p)
		if dir == "" {
			dir = "."
		}
		// A missing folder is made by createLocal; only an existing one
		// can hold a link.
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		p = filepath.Join(dir, file)
		if onProcFS(dir) {
			return p, true, nil
		}
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// createLocal makes it, or says what is in the way.
			return p, false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("output %q: %w", p, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return p, !st.Mode().IsRegular() && !st.IsDir(), nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", false, fmt.Errorf("output %q: %w", p, err)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(dir, link)
		}
		p = link
	}
	return "", false, fmt.Errorf("output %q: %w", p, syscall.ELOOP)
}

// ownFD returns the descriptor that path, a link in this process's
// /proc/<pid>/fd (where /dev/stdout and /dev/fd/N lead) or in /dev/fd,
// stands for. Opening the link would open the file anew, at offset 0
// and without O_APPEND: under `>> log` the output would overwrite what
// log held, and under `{ …; } > log` what the shell writes after it
// would overwrite the output. A duplicate shares the offset and flags,
// as a shell redirect's does.
func ownFD(path string) (int, bool) {
	dir, file := filepath.Split(path)
	dir = filepath.Clean(dir)
	own := "/proc/" + strconv.Itoa(os.Getpid())
	if dir != own+"/fd" && dir != "/dev/fd" &&
		!(strings.HasPrefix(dir, own+"/task/") && strings.HasSuffix(dir, "/fd")) {
		return 0, false
	}
	fd, err := strconv.Atoi(file)
	return fd, err == nil && fd >= 0
}
