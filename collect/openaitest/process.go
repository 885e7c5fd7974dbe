package openaitest

import (
	"bufio"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listening matches the line a Hone server logs once bound, e.g.
// `level=INFO msg="hone-serve listening" addr=127.0.0.1:41234`.
var listening = regexp.MustCompile(`listening.*addr=(\S+)`)

// StartProcess runs a server binary (the real hone-serve, say, started with
// --port 0) as a process and returns the host:port it logged on stderr as
// listening. The test fails if none is logged within a minute, or at once
// if the process ends its stderr (exits) first, quoting the stderr's end. At cleanup
// the process gets SIGTERM, and SIGKILL if it has not exited 10 s later.
func StartProcess(t testing.TB, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	// ended carries the last lines of stderr once it closes: a server that
	// exits before it listens (a bad flag, a missing model) fails the test
	// at once with what it said, not after the minute.
	ended := make(chan []string, 1)
	go func() {
		var tail []string
		// A reader, not a Scanner: a line longer than a Scanner's limit
		// would stop it before the end, the server's writes then
		// blocking on a full pipe.
		r := bufio.NewReader(stderr)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				line = strings.TrimSuffix(line, "\n")
				if m := listening.FindStringSubmatch(line); m != nil {
					select {
					case addr <- m[1]:
					default:
					}
				}
				tail = append(tail, line)
				if len(tail) > 20 {
					tail = tail[1:]
				}
			}
			if err != nil {
				break
			}
		}
		ended <- tail
	}()
	select {
	case a := <-addr:
		return a
	case tail := <-ended:
		select {
		case a := <-addr:
			return a
		default:
		}
		t.Fatalf("%s exited before it logged a listening address; its stderr ended:\n%s", bin, strings.Join(tail, "\n"))
	case <-time.After(time.Minute):
		t.Fatalf("%s did not log a listening address within a minute", bin)
	}
	return ""
}
