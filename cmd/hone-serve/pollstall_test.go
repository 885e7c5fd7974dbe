package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestPollOfStalledStoreAbandoned: a store that takes the connection and
// never answers held a poll of the store for ever, so serving stayed on
// the steps pulled before with no word. Each poll is abandoned after
// --poll-timeout, warned about once naming the store and the deadline,
// and tried again at the next poll; the server answers meanwhile, and once
// the store answers again the recovery is logged and the newer step is
// served.
func TestPollOfStalledStoreAbandoned(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	local := filepath.Join(dir, "train", "r1")
	publish := func(n int) { publishTestStep(t, tiny, local, s3.URL("hone", "adapters/r1"), n) }
	publish(1)
	addr, log := startRun(t, nil, "--model", tiny, "--threads", "1", "--adapters", s3.URL("hone", "adapters"),
		"--adapters-cache", filepath.Join(dir, "cache"), "--poll-interval", "20ms", "--poll-timeout", "300ms")
	served := func(id string) bool {
		resp, err := http.Get("http://" + addr + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Data []struct{ ID string } }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(body.Data, func(d struct{ ID string }) bool { return d.ID == id })
	}
	waitfor.Until(t, 20*time.Second, "r1@1 served", func() bool { return served("r1@1") })
	s3.Stall(true)
	abandoned := func() []string {
		var out []string
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "abandoned after --poll-timeout 300ms") {
				out = append(out, l)
			}
		}
		return out
	}
	waitfor.Until(t, 20*time.Second, "a stalled poll abandoned with a warning", func() bool { return len(abandoned()) > 0 })
	if w := abandoned()[0]; !strings.Contains(w, `"from":"s3://hone/adapters`) {
		t.Errorf("the warning does not name the store: %s", w)
	}
	// A request held after the warning is a later poll's.
	held := s3.Stalled()
	waitfor.Until(t, 20*time.Second, "the next poll", func() bool { return s3.Stalled() > held })
	if !served("r1@1") {
		t.Error("r1@1 not served while the store stalls")
	}
	if n := len(abandoned()); n != 1 {
		t.Errorf("the stalled store warned about %d times, want once", n)
	}
	s3.Stall(false)
	publish(2)
	waitfor.Until(t, 20*time.Second, "the recovery logged", func() bool { return strings.Contains(log.String(), "pulling adapters works again") })
	waitfor.Until(t, 20*time.Second, "r1@2 served", func() bool { return served("r1@2") })
}

// TestStalledRunDoesNotHoldTheOthers: --poll-timeout bounded a whole poll,
// every run's pull in it, so one run whose folder hung (or whose pull took
// longer than the deadline) had the poll abandoned before the runs after
// it were pulled, at every poll: their new steps were never served, and
// at start the server failed on a store that answered. Each run's pull has
// the deadline to itself now: the stuck run is passed over with a warning
// naming it, as a run that cannot be pulled is, and the others are
// pulled, at start as at each poll.
func TestStalledRunDoesNotHoldTheOthers(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	tiny := "../../serve/testdata/tiny"
	publish := func(run string, n int) {
		publishTestStep(t, tiny, filepath.Join(dir, "train", run), s3.URL("hone", "adapters/"+run), n)
	}
	publish("r1", 1)
	publish("r2", 1)
	s3.StallUnder("hone", "adapters/r1")
	addr, log := startRun(t, nil, "--model", tiny, "--threads", "1", "--adapters", s3.URL("hone", "adapters"),
		"--adapters-cache", filepath.Join(dir, "cache"), "--poll-interval", "20ms", "--poll-timeout", "300ms")
	served := func(id string) bool {
		resp, err := http.Get("http://" + addr + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Data []struct{ ID string } }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(body.Data, func(d struct{ ID string }) bool { return d.ID == id })
	}
	waitfor.Until(t, 20*time.Second, "r2@1 served beside the stuck r1", func() bool { return served("r2@1") })
	publish("r2", 2)
	waitfor.Until(t, 20*time.Second, "r2@2 served beside the stuck r1", func() bool { return served("r2@2") })
	if l := log.String(); !strings.Contains(l, `"run":"r1"`) || !strings.Contains(l, "abandoned after --poll-timeout 300ms") {
		t.Errorf("no warning naming the stuck run r1 and --poll-timeout:\n%s", l)
	}
	s3.Stall(false)
	waitfor.Until(t, 20*time.Second, "r1@1 served once its folder answers", func() bool { return served("r1@1") })
}

// TestStartOnStalledStoreFails: the first poll, at start, of a store that
// never answers fails the start after --poll-timeout, naming the store and
// the deadline, instead of holding it for ever.
func TestStartOnStalledStoreFails(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	s3.Stall(true)
	adapters := s3.URL("hone", "adapters")
	r := remoteAdapters{cache: filepath.Join(t.TempDir(), "cache"), timeout: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		stop, err := r.start(context.Background(), &adapters, time.Hour, 2, slog.New(slog.DiscardHandler))
		if err == nil {
			stop()
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
	if err == nil || !strings.Contains(err.Error(), "s3://hone/adapters") || !strings.Contains(err.Error(), "abandoned after --poll-timeout 200ms") {
		t.Errorf("start on a stalled store: %v; want an error naming the store and --poll-timeout 200ms", err)
	}
}
