//go:build unix

package fileset

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFD opens the output /dev/fd/N (or /proc/<pid>/fd/N), this
// process's descriptor fd, as a shell's `> /dev/fd/N` does: a duplicate
// of a descriptor open for writing, or the file anew when it is open for
// reading only.
func openFD(name string, fd int) (*streamOutput, error) {
	if !handedOver(fd) {
		return nil, fmt.Errorf("output %w", argErrorf(name,
			"descriptor %d was not open when the command started; open it for the command (as %d>FILE does) or name a file", fd, fd))
	}
	dup, err := dupCloexec(fd)
	if err != nil {
		return nil, fmt.Errorf("open output %q: %w", name, err)
	}
	if readOnly(dup) {
		// 3<FILE: a duplicate cannot be written. A shell's
		// `> /dev/fd/3` opens the file anew, for writing and
		// truncated; so does this.
		syscall.Close(dup)
		return reopenFD(name, fd)
	}
	// Named as given: a write error then says /dev/stdout, not the
	// /proc/<pid>/fd path the user never wrote.
	return &streamOutput{f: os.NewFile(uintptr(dup), name), name: name}, nil
}

// dupCloexec duplicates fd close-on-exec. The fork lock keeps the
// duplicate from a child a concurrent exec starts.
func dupCloexec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	dup, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(dup)
	}
	return dup, err
}

// readOnly says whether the descriptor fd is open for reading only.
func readOnly(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE == unix.O_RDONLY
}

// reopenFD opens the file that this process's descriptor fd holds anew
// through /proc/self/fd, for writing and truncated, as a shell's
// `> /dev/fd/N` does; errors name the output as given.
func reopenFD(name string, fd int) (*streamOutput, error) {
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open output %q (descriptor %d, open for reading only) for writing: %w", name, fd, err)
	}
	// Named as given, as a duplicate is.
	return &streamOutput{f: os.NewFile(uintptr(nfd), name), name: name}, nil
}

// handedOver says whether the descriptor fd came with the command from
// whatever started it (a shell's N>FILE), rather than being one the
// command opened itself (an input, the poller, a connection to a server),
// which -o /dev/fd/N would otherwise write into. Go opens all of its own
// close-on-exec, and an inherited one cannot be: exec would have closed
// it. A descriptor that is not open at all is not handed over either.
func handedOver(fd int) bool {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil && flags&unix.FD_CLOEXEC == 0
}

// flockRetry takes f's exclusive flock, waiting for a cleaner that holds
// it for a moment; a signal's interruption is retried.
func flockRetry(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// tryFlock takes f's exclusive flock if no one holds it, without waiting.
func tryFlock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// holdLock keeps f's flock past f's Close until release is called: a
// duplicate descriptor shares the lock (flock locks the open file, not
// the descriptor), and release closes it. Without a duplicate (out of
// descriptors) the lock ends with the Close.
func holdLock(f *os.File) (release func()) {
	lock, err := dupCloexec(int(f.Fd()))
	if err != nil {
		return func() {}
	}
	return func() { syscall.Close(lock) }
}
