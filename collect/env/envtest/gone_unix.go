//go:build unix

package envtest

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ReadPID returns the pid a test's program wrote to path, or 0 while it
// has written none. The program writes a temporary file and renames it,
// so a pid is never read half written.
func ReadPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	return pid
}

// Gone reports whether process pid has exited: kill(pid, 0) finds none,
// or it is a zombie, exited and left for its parent to reap (an orphan's
// parent is then PID 1, which in some containers never reaps). Tests of
// environments that start programs check with it that nothing they
// started outlives them.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc here: only ESRCH says so
	}
	// The state follows the command, which is in parentheses.
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}
