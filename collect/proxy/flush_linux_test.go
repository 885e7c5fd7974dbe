package proxy_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/collect/proxy"
)

// renamesInto starts watching dir for files renamed into it (inotify) and
// returns a function that lists their names so far, in order.
func renamesInto(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	var names []string
	return func() []string {
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if errors.Is(err, syscall.EAGAIN) {
				return names
			}
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				names = append(names, string(bytes.TrimRight(name, "\x00")))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// A flushed group's file appears by one rename, of the writer's own
// temporary file. The proxy used to have trajectory.WriteFile write (and
// rename into) ".px-000001.parquet.tmp", then renamed that again.
func TestProxyFlushRenamesOnce(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	renames := renamesInto(t, out)
	runAgent(t, srv.URL+"/v1", "a", "g")
	resp, err := http.Post(srv.URL+"/hone/groups/g/close", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close: %v %v", err, resp.Status)
	}
	// The close answers after the file is in place, so its rename is queued.
	if got := renames(); !slices.Equal(got, []string{"px-000001.parquet"}) {
		t.Errorf("renames into the output folder: %q, want only the file itself", got)
	}
	st, err := os.Stat(filepath.Join(out, "px-000001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 like every output", st.Mode().Perm())
	}
}
