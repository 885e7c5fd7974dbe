package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/train/trainer"
)

// TestFinalPublishToStalledStoreGivesUp: the publish at the end of a run,
// to a store that takes the connection and never answers, gives up after
// the attempt's deadline with an error naming the store, the deadline and
// the local folder the run stays in. Before, it waited for ever: the
// trainer never exited, and a SIGTERM did not end it (the last publish
// runs past the signal).
func TestFinalPublishToStalledStoreGivesUp(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the temporary --out-cache, which stays
	s3 := fakes3d.StartTest(t, "hone")
	r := remoteOut{every: time.Hour, timeout: 300 * time.Millisecond}
	o := trainer.Options{Out: s3.URL("hone", "adapters"), Name: "stall"}
	finish, err := r.start(context.Background(), &o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(o.OutLocal, "stall")
	if err := os.MkdirAll(filepath.Join(local, "step-000001"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"step-000001/adapter_config.json": "{}", "latest": "step-000001\n"} {
		if err := os.WriteFile(filepath.Join(local, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s3.Stall(true)
	done := make(chan error, 1)
	go func() { done <- finish(nil) }()
	var ferr error
	if !waitfor.Within(30*time.Second, func() bool {
		select {
		case ferr = <-done:
			return true
		default:
			return false
		}
	}) {
		// The stall is let go (Close), so the publish returns and the
		// test's folders can go.
		s3.Stall(false)
		<-done
		t.Fatalf("the last publish to a stalled store was still waiting after 30s (%d requests held)", s3.Stalled())
	}
	if ferr == nil || !strings.Contains(ferr.Error(), "s3://hone/adapters/stall") || !strings.Contains(ferr.Error(), "--publish-timeout 300ms") ||
		!strings.Contains(ferr.Error(), local) {
		t.Errorf("the last publish to a stalled store: %v; want an error naming the store, --publish-timeout 300ms and %s", ferr, local)
	}
}

// TestPublishToStalledStoreRetried runs hone-train grpo as a process that
// publishes every 10ms to a store that stops answering mid-run: each tick
// publish is abandoned after --publish-timeout with a warning naming the
// store and the deadline, and tried again at the next tick; when the store
// answers again, publishing goes on (the recovery is logged), and with it
// stalled at the end the last publish gives up, so SIGTERM ends the
// process. Before, the first stalled publish held the publisher for the
// rest of the run and the last one held the process for ever.
func TestPublishToStalledStoreRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess")
	}
	s3 := fakes3d.StartTest(t, "hone")
	// --keep-last bounds what a publish after the stall has to upload
	// (the steps trained meanwhile, hundreds), so that it fits in the
	// deadline.
	p := startPublishing(t, s3.URL("hone", "adapters"), "stalled", "--publish-timeout", "500ms", "--keep-last", "2")
	p.waitFor("a first publish", func() bool { return strings.Contains(p.log.String(), "msg=published") })
	s3.Stall(true)
	abandoned := func() []string { return warnLines(p.log.String(), "abandoned after --publish-timeout 500ms") }
	p.waitFor("a stalled publish abandoned", func() bool { return len(abandoned()) > 0 })
	if w := abandoned()[0]; !strings.Contains(w, `to="s3://hone/adapters/stalled`) {
		t.Errorf("the warning does not name the store: %s", w)
	}
	// A request held after the warning is a later attempt's.
	held := s3.Stalled()
	p.waitFor("the next tick's attempt", func() bool { return s3.Stalled() > held })
	s3.Stall(false)
	p.waitFor("the recovery logged", func() bool { return recoveryLine(p.log.String()) != "" })
	s3.Stall(true)
	held = s3.Stalled()
	p.waitFor("a request held after the recovery", func() bool { return s3.Stalled() > held })
	p.interrupt()
	if !strings.Contains(p.log.String(), `level=ERROR msg="publish failed"`) || !strings.Contains(p.log.String(), "abandoned after --publish-timeout 500ms") {
		t.Errorf("the last publish, stalled, logged no error naming the deadline:\n%s", p.shown())
	}
}

// TestStartOnStalledStoreGivesUp: the start-up calls to the store (its
// listing, the write check, the pull) of a store that takes the connection
// and never answers give up after --publish-timeout with an error naming
// the store and the call. Before, the trainer waited for ever before it
// trained.
func TestStartOnStalledStoreGivesUp(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	s3 := fakes3d.StartTest(t, "hone")
	s3.Stall(true)
	r := remoteOut{every: time.Hour, timeout: 200 * time.Millisecond}
	o := trainer.Options{Out: s3.URL("hone", "adapters"), Name: "stall"}
	done := make(chan error, 1)
	go func() {
		finish, err := r.start(context.Background(), &o, slog.New(slog.DiscardHandler))
		if err == nil {
			err = finish(nil)
		}
		done <- err
	}()
	var err error
	if !waitfor.Within(30*time.Second, func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	}) {
		s3.Stall(false)
		<-done
		t.Fatalf("the start on a stalled store was still waiting after 30s (%d requests held)", s3.Stalled())
	}
	if err == nil || !strings.Contains(err.Error(), "s3://hone/adapters/stall") || !strings.Contains(err.Error(), "list") ||
		!strings.Contains(err.Error(), "abandoned after --publish-timeout 200ms") {
		t.Errorf("start on a stalled store: %v; want an error naming the store, the listing and --publish-timeout 200ms", err)
	}
}
