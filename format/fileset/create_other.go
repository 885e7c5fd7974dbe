//go:build !unix

package fileset

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// errNoFlock is what flockRetry gives where there is no flock: the
// temporary file is then written unlocked, as on a file system without
// flock, and RemoveStaleTemps leaves every such file alone rather than
// guess which writer is dead.
var errNoFlock = errors.New("flock is not supported on " + runtime.GOOS)

// openFD refuses /dev/fd/N outputs, which name a Unix process's open
// descriptors: there are none to write into here.
func openFD(name string, fd int) (*streamOutput, error) {
	return nil, fmt.Errorf("output %w", argErrorf(name,
		"descriptor %d: writing into an open descriptor (/dev/fd/N) is not supported on %s; name a file", fd, runtime.GOOS))
}

func flockRetry(*os.File) error { return errNoFlock }

func tryFlock(*os.File) bool { return false }

func holdLock(*os.File) (release func()) { return func() {} }
