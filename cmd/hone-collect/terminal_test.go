//go:build linux

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openTerminal opens a new pseudo-terminal: the master, to read what was
// written, and the slave, a terminal to hand a process as its stderr.
func openTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("open /dev/ptmx: %v", err)
		}
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// played is what a terminal shows after out: "\r" returns to the start of
// the row, "\n" starts the next one, other bytes overwrite.
func played(out string) []string {
	rows := [][]byte{nil}
	col := 0
	for i := 0; i < len(out); i++ {
		r := len(rows) - 1
		switch c := out[i]; c {
		case '\r':
			col = 0
		case '\n':
			rows, col = append(rows, nil), 0
		default:
			for len(rows[r]) <= col {
				rows[r] = append(rows[r], ' ')
			}
			rows[r][col] = c
			col++
		}
	}
	s := make([]string, len(rows))
	for i, r := range rows {
		s[i] = strings.TrimRight(string(r), " ")
	}
	return s
}

// On a terminal, the progress line shows a heartbeat while a slow model
// call keeps anything from finishing, and the log lines of failed episodes
// scroll above it whole, never written over it.
func TestProgressOnTerminal(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// sleep: the slow model is the point: 1.3 s without an answer is
		// what makes the progress line show its 1 s heartbeat.
		time.Sleep(1300 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"no such model"}}`))
	}))
	defer slow.Close()
	master, slave := openTerminal(t)
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "guess", "--groups", "2", "-G", "1", "--concurrency", "1",
		"--model", "m", "--base-url", slow.URL+"/v1", "--retries", "0", "-o", filepath.Join(t.TempDir(), "out.parquet"))
	cmd.Stderr = slave
	var got bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&got, master) // ends with an error once the slave is closed
	}()
	err := cmd.Run()
	slave.Close()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1 (every episode failed)", err)
	}
	// The master returns what is buffered, then EIO; give it a moment.
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		master.Close()
		<-read
	}
	out := got.String()
	if !strings.Contains(out, "waiting 1s") {
		t.Errorf("no heartbeat while nothing finished for 1.3s:\n%q", out)
	}
	rows := played(out)
	var logs []string
	for _, r := range rows {
		if strings.Contains(r, "msg=") {
			logs = append(logs, r)
			if !strings.HasPrefix(r, "time=") || strings.Contains(r, "groups ") {
				t.Errorf("log row mixed with the progress line: %q", r)
			}
		}
	}
	if len(logs) != 2 {
		t.Errorf("%d log rows, want one per failed episode:\n%s", len(logs), strings.Join(rows, "\n"))
	}
}
