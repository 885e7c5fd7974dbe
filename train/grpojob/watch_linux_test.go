package grpojob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// opensIn starts watching dir (inotify) and returns a function that counts
// the opens of each file in it so far.
func opensIn(t *testing.T, dir string) func() map[string]int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	opens := map[string]int{}
	return func() map[string]int {
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if errors.Is(err, syscall.EAGAIN) {
				return opens
			}
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				if s := string(bytes.TrimRight(name, "\x00")); s != "" { // "": the folder itself
					opens[s]++
				}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// A watch session opens each new file once: it reads it whole, hashes
// those bytes for the manifest and decodes the same bytes (from which the
// session's length is counted). Watch mode used to decode the files a
// second time only to count their groups, and before that opened each
// file once to hash it and again to decode it, which let a file replaced
// in between be trained under the other contents' hash
// (TestWatchTrainsTheBytesItHashed).
func TestWatchReadsEachNewFileOnce(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := filepath.Join(dir, "incoming")
	if err := os.MkdirAll(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"round1.parquet", "round2.parquet"}
	writeGroups(t, md, filepath.Join(watch, names[0]), 2, 3, varied)
	writeGroups(t, md, filepath.Join(watch, names[1]), 1, 3, varied)
	opens := opensIn(t, watch)

	o := baseOptions(md, dir, "cron")
	o.WatchDir = watch
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	got := opens()
	for _, name := range names {
		if got[name] != 1 {
			t.Errorf("%s opened %d times in a watch session, want 1", name, got[name])
		}
	}
}

// A --watch-dir call over a local folder opens only the files that landed
// since the last call: those it consumed stat as they did when it hashed
// them (size, modification time to the nanosecond, long enough before
// the hashing). Each call used to open and read every file of the folder.
func TestWatchOpensOnlyNewLocalFiles(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := filepath.Join(dir, "incoming")
	if err := os.MkdirAll(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	// Written an hour ago, as far as their times say: not racy.
	write := func(name string, groups int) {
		p := filepath.Join(watch, name)
		writeGroups(t, md, p, groups, 3, varied)
		at := time.Now().Add(-time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		write(fmt.Sprintf("round%d.parquet", i+1), i+1)
	}
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	write("round4.parquet", 1)
	opens := opensIn(t, watch)
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	got := maps.Clone(opens()) // opens counts from the start
	if len(got) != 1 || got["round4.parquet"] != 1 {
		t.Errorf("the call after round4.parquet landed opened %v, want round4.parquet once", got)
	}
	log.Reset()
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil || !strings.Contains(log.String(), "nothing new") {
		t.Fatalf("%v, want nothing new\n%s", err, log.String())
	}
	if now := opens(); !maps.Equal(now, got) {
		t.Errorf("a call with nothing new opened files: %v in all, %v before it; want none", now, got)
	}
}
