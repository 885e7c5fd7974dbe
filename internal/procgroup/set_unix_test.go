//go:build unix

package procgroup

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// KillAll kills the group of a program started through the set, which
// ignores SIGTERM and waits on its stdin, and keeps any program from
// starting after it; one forgotten (waited for elsewhere) is not
// signalled: it exits 0 once its stdin gives a line.
func TestSetKillAll(t *testing.T) {
	s := NewSet()
	if SetFrom(WithSet(context.Background(), s)) != s || SetFrom(context.Background()) != nil {
		t.Fatal("the set does not travel in the context")
	}
	start := func() (*exec.Cmd, io.WriteCloser) {
		cmd := exec.Command("sh", "-c", "trap '' TERM; read line")
		Own(cmd)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(cmd, cmd.Start); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { Kill(cmd) })
		return cmd, in
	}
	kept, _ := start()
	forgotten, in := start()
	s.Forget(forgotten)
	if err := s.KillAll(); err != nil {
		t.Fatal(err)
	}
	if err := kept.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the program in the set ended with %v, want killed", err)
	}
	io.WriteString(in, "go on\n")
	if err := forgotten.Wait(); err != nil {
		t.Errorf("the forgotten program ended with %v, want exit 0 (not signalled)", err)
	}
	late := exec.Command("true")
	if err := s.Start(late, late.Start); !errors.Is(err, ErrStopping) || late.Process != nil {
		t.Errorf("a start after KillAll: %v; want ErrStopping and no process", err)
	}
}
