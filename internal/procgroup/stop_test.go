package procgroup

import (
	"os/exec"
	"testing"
	"time"
)

// A command that never started has nothing to wait for or kill: Stop says
// so rather than dereferencing its missing process.
func TestStopNotStarted(t *testing.T) {
	if err := Stop(exec.Command("true"), time.Millisecond); err == nil {
		t.Fatal("Stop of a command never started returned nil")
	}
}
