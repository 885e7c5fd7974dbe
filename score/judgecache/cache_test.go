package judgecache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/hone-rl/hone/format/fileset/blobdrivers" // s3://
	"github.com/hone-rl/hone/internal/waitfor"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
	"github.com/hone-rl/hone/score/judgecache"
)

func TestCache(t *testing.T) {
	dir := t.TempDir()
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.25, 0.75}), nil
	}}
	c := &judgecache.Cache{Dir: dir, Next: f}
	req := judge.Request{Model: "m", PromptVersion: "v1", System: "rubric A", User: "group content", IDs: []string{"1", "2"}}
	ctx := context.Background()

	v1, err := c.Judge(ctx, req)
	if err != nil || v1.Usage.Calls != 1 || v1.Usage.CacheHits != 0 {
		t.Fatalf("first call: %+v, %v", v1, err)
	}
	v2, err := c.Judge(ctx, req)
	if err != nil || len(f.Calls()) != 1 || v2.Usage != (judge.Usage{CacheHits: 1}) {
		t.Fatalf("second call: calls %d, usage %+v, err %v", len(f.Calls()), v2.Usage, err)
	}
	if v2.Scores[0] != v1.Scores[0] || v2.Scores[1] != v1.Scores[1] {
		t.Fatalf("cached scores %+v differ from %+v", v2.Scores, v1.Scores)
	}
	// Each part of the key matters.
	for name, mod := range map[string]func(*judge.Request){
		"model":   func(r *judge.Request) { r.Model = "m2" },
		"version": func(r *judge.Request) { r.PromptVersion = "v2" },
		"rubric":  func(r *judge.Request) { r.System = "rubric B" },
		"content": func(r *judge.Request) { r.User = "other group" },
		"temperature": func(r *judge.Request) {
			zero := 0.0
			r.Temperature = &zero
		},
	} {
		r := req
		mod(&r)
		if judgecache.Key("", r) == judgecache.Key("", req) {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
	// The server is part of the key, up to a trailing slash; "" is
	// api.openai.com's.
	if judgecache.Key("http://a/v1", req) == judgecache.Key("http://b/v1", req) {
		t.Errorf("changing the server does not change the key")
	}
	if judgecache.Key("http://a/v1/", req) != judgecache.Key("http://a/v1", req) {
		t.Errorf("a trailing slash changes the key")
	}
	if judgecache.Key("", req) != judgecache.Key(judge.OpenAIBaseURL, req) {
		t.Errorf("an empty base URL is not keyed as api.openai.com")
	}
	// One file, no temporaries left behind.
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 || files[0] != c.Path(judgecache.Key("", req)) {
		t.Fatalf("cache files = %v", files)
	}
	// A corrupt entry is a miss, and is rewritten.
	if err := os.WriteFile(files[0], []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Judge(ctx, req); err != nil || len(f.Calls()) != 2 {
		t.Fatalf("corrupt entry: calls %d, err %v", len(f.Calls()), err)
	}
	if _, err := c.Judge(ctx, req); err != nil || len(f.Calls()) != 2 {
		t.Fatalf("after rewrite: calls %d, err %v", len(f.Calls()), err)
	}
}

// TestCacheBadScoreIsMiss: an entry whose score judge.Parse would refuse
// (outside [0,1], or missing, which would read as 0) — written by hand or
// by something else sharing the folder — is a miss: the judge is asked
// again and the entry rewritten, rather than the score trained on.
func TestCacheBadScoreIsMiss(t *testing.T) {
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.25, 0.75}), nil
	}}
	c := &judgecache.Cache{Dir: t.TempDir(), Next: f}
	req := judge.Request{Model: "m", PromptVersion: "v1", System: "rubric", User: "group", IDs: []string{"1", "2"}}
	ctx := context.Background()
	if _, err := c.Judge(ctx, req); err != nil {
		t.Fatal(err)
	}
	path := c.Path(judgecache.Key("", req))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(score map[string]any){
		"above 1": func(score map[string]any) { score["score"] = 7.5 },
		"missing": func(score map[string]any) { delete(score, "score") },
	} {
		var e map[string]any
		if err := json.Unmarshal(good, &e); err != nil {
			t.Fatal(err)
		}
		edit(e["scores"].([]any)[1].(map[string]any))
		bad, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		calls := len(f.Calls())
		v, err := c.Judge(ctx, req)
		if err != nil || len(f.Calls()) != calls+1 || v.Scores[1].Score != 0.75 {
			t.Fatalf("score %s: calls %d → %d, scores %+v, err %v; want the judge asked again", name, calls, len(f.Calls()), v.Scores, err)
		}
		if b, _ := os.ReadFile(path); string(b) != string(good) {
			t.Fatalf("score %s: entry not rewritten:\n%s", name, b)
		}
	}
}

// A file:// URL names a local folder: the entry lands in it, and no
// "file:" folder appears in the working directory.
func TestCacheFileURL(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.25, 0.75}), nil
	}}
	c := &judgecache.Cache{Dir: (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String(), Next: f}
	req := judge.Request{Model: "m", User: "u", IDs: []string{"1", "2"}}
	for range 2 {
		if _, err := c.Judge(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.Calls()) != 1 {
		t.Errorf("%d judge calls, want 1 (the second a hit)", len(f.Calls()))
	}
	key := judgecache.Key("", req)
	if _, err := os.Stat(filepath.Join(dir, key[:2], key+".json")); err != nil {
		t.Error(err)
	}
	if ents, err := os.ReadDir("."); err != nil || len(ents) != 0 {
		t.Errorf("the working directory holds %v (%v)", ents, err)
	}
}

func TestCacheStoresOnlySuccess(t *testing.T) {
	dir := t.TempDir()
	fail := errors.New("boom")
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		if n == 0 {
			return "", fail
		}
		if n == 1 {
			return "not json", nil
		}
		return judgetest.Answer(r.IDs, []float64{1, 0}), nil
	}}
	c := &judgecache.Cache{Dir: dir, Next: f}
	req := judge.Request{Model: "m", User: "u", IDs: []string{"1", "2"}}
	if _, err := c.Judge(context.Background(), req); !errors.Is(err, fail) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Judge(context.Background(), req); !errors.Is(err, judge.ErrFailed) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Judge(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Judge(context.Background(), req); err != nil || len(f.Calls()) != 3 {
		t.Fatalf("calls = %d, err %v", len(f.Calls()), err)
	}
}

// Over the judge stack hone-score builds (Cache, Retry, OpenAI), a call
// that hone-serve answers with its 500 for a judge model whose logits are
// NaN fails once, unretried, and leaves nothing in the cache, so that the
// next run asks again; the answer it then gets is stored and served.
func TestCacheSkipsServerErrors(t *testing.T) {
	dir := t.TempDir()
	s := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
		if n == 0 {
			return judgetest.Reply{Status: 500, Body: `{"error":{"message":"no token could be chosen for choice 0 after 0 generated tokens: ` +
				`model \"judge@7\" gave NaN or -Inf logits to every token","type":"server_error","param":null,"code":"logits_not_finite"}}`}
		}
		return judgetest.Reply{Content: judgetest.Answer(r.IDsFromSchema(), []float64{1, 0})}
	})
	next := judge.Retry{Next: judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL()}), Attempts: 3}
	c := &judgecache.Cache{Dir: dir, Next: next}
	req := judge.Request{Model: "judge@7", User: "u", IDs: []string{"1", "2"}}
	path := c.Path(judgecache.Key("", req))
	_, err := c.Judge(context.Background(), req)
	if !errors.Is(err, judge.ErrFailed) || s.Hits() != 1 {
		t.Fatalf("err %v after %d calls, want the judge's failure after 1", err, s.Hits())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed call left a cache entry (%v)", err)
	}
	v, err := c.Judge(context.Background(), req)
	if err != nil || v.Usage.CacheHits != 0 || v.Scores[0].Score != 1 || s.Hits() != 2 {
		t.Fatalf("second call: %+v, %v after %d calls, want the server's answer", v, err, s.Hits())
	}
	v, err = c.Judge(context.Background(), req)
	if err != nil || v.Usage.CacheHits != 1 || v.Scores[0].Score != 1 || s.Hits() != 2 {
		t.Fatalf("third call: %+v, %v after %d calls, want the cached answer", v, err, s.Hits())
	}
}

func TestSuiteCache(t *testing.T) {
	judgetest.Suite(t, func(t *testing.T, answer func(judge.Request) (string, error)) judge.Judge {
		f := &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) { return answer(r) }}
		return &judgecache.Cache{Dir: t.TempDir(), Next: f}
	})
}

// Two groups whose prompts are the same text, judged at once: the second
// waits for the first's verdict and both get it, from one judge call. Each
// asked the judge before, got an answer of its own (a judge sampling at
// temperature), and the cache kept the one written last, so a re-run with
// the cache wrote other rows than the first run.
func TestSameRequestInFlightShared(t *testing.T) {
	release := make(chan struct{})
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		if n == 0 {
			<-release
		}
		return judgetest.Answer(r.IDs, []float64{float64(n+1) / 16, 0.5}), nil
	}}
	c := &judgecache.Cache{Dir: t.TempDir(), Next: f}
	req := judge.Request{Model: "m", PromptVersion: "v1", System: "rubric", User: "the same group", IDs: []string{"1", "2"}}
	const n = 6
	got := make(chan judge.Verdict, n)
	for range n {
		go func() {
			v, err := c.Judge(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
	}
	waitfor.Until(t, 5*time.Second, "the first judge call", func() bool { return len(f.Calls()) >= 1 })
	// The others have had time to ask the judge too, which they must not.
	waitfor.Within(300*time.Millisecond, func() bool { return len(f.Calls()) > 1 })
	close(release)
	var hits int64
	for range n {
		v := <-got
		if v.Scores[0].Score != 1.0/16 {
			t.Errorf("verdict %+v; want the first call's (score 1/16) for every request", v.Scores)
		}
		hits += v.Usage.CacheHits
	}
	if calls := len(f.Calls()); calls != 1 || hits != n-1 {
		t.Errorf("%d judge calls and %d cache hits for %d equal requests; want 1 and %d", calls, hits, n, n-1)
	}
	v, err := c.Judge(context.Background(), req)
	if err != nil || v.Scores[0].Score != 1.0/16 || v.Usage.CacheHits != 1 {
		t.Errorf("after the flight: %+v, %v; want the same verdict from the cache", v, err)
	}
}

// A failed call is not shared: a request that waited on it asks the judge
// itself.
func TestInFlightFailureNotShared(t *testing.T) {
	release := make(chan struct{})
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		if n == 0 {
			<-release
			return "", errors.New("judge down")
		}
		return judgetest.Answer(r.IDs, []float64{0.25, 0.75}), nil
	}}
	c := &judgecache.Cache{Dir: t.TempDir(), Next: f}
	req := judge.Request{Model: "m", PromptVersion: "v1", System: "rubric", User: "group", IDs: []string{"1", "2"}}
	first := make(chan error, 1)
	go func() {
		_, err := c.Judge(context.Background(), req)
		first <- err
	}()
	waitfor.Until(t, 5*time.Second, "the first judge call", func() bool { return len(f.Calls()) >= 1 })
	second := make(chan error, 1)
	go func() {
		v, err := c.Judge(context.Background(), req)
		if err == nil && v.Scores[0].Score != 0.25 {
			err = fmt.Errorf("verdict %+v", v.Scores)
		}
		second <- err
	}()
	close(release)
	if err := <-first; err == nil {
		t.Error("the failed call returned no error")
	}
	if err := <-second; err != nil {
		t.Errorf("the request after a failed one: %v; want its own verdict", err)
	}
}

// TestCacheLogText: an entry that does not answer the request (another
// format, key or trajectory ids) is logged with what did not match, not
// with err=<nil>; and a run stopped by its own cancellation (Ctrl-C) logs
// no warning about the entry it could not read or store.
func TestCacheLogText(t *testing.T) {
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.25, 0.75}), nil
	}}
	var logged bytes.Buffer
	c := &judgecache.Cache{Dir: t.TempDir(), Next: f, Log: slog.New(slog.NewTextHandler(&logged, nil))}
	req := judge.Request{Model: "m", PromptVersion: "v1", System: "rubric", User: "group", IDs: []string{"1", "2"}}
	ctx := context.Background()
	if _, err := c.Judge(ctx, req); err != nil {
		t.Fatal(err)
	}
	path := c.Path(judgecache.Key("", req))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, c2 := range map[string]struct {
		edit func(e map[string]any)
		want string
	}{
		"format": {func(e map[string]any) { e["format"] = "hone-judgecache-0" }, `format \"hone-judgecache-0\", want \"hone-judgecache-2\"`},
		"key":    {func(e map[string]any) { e["key"] = "0123" }, `key \"0123\", want`},
		"count":  {func(e map[string]any) { e["scores"] = e["scores"].([]any)[:1] }, "1 scores for 2 trajectory ids"},
		"ids": {func(e map[string]any) { e["scores"].([]any)[1].(map[string]any)["trajectory_id"] = "7" },
			`score 2 is for trajectory_id \"7\", want \"2\"`},
	} {
		var e map[string]any
		if err := json.Unmarshal(good, &e); err != nil {
			t.Fatal(err)
		}
		c2.edit(e)
		b, _ := json.Marshal(e)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		logged.Reset()
		if _, err := c.Judge(ctx, req); err != nil {
			t.Fatal(err)
		}
		if s := logged.String(); !strings.Contains(s, c2.want) || strings.Contains(s, "<nil>") {
			t.Errorf("%s mismatch logged:\n%s\nwant it to say %q", name, s, c2.want)
		}
	}
	// Ctrl-C: the run's context ends before an entry is read, or while
	// the judge answers, over an object store, whose calls end with the
	// context. The store has no entry (404) and counts the stores that
	// reach it: the verdict answered as the run stopped was paid for, so
	// it is stored (it was lost with the run's context), and nothing is
	// logged either way.
	var reached atomic.Int64
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			reached.Add(1)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(store.Close)
	aws := t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "fake", "AWS_SECRET_ACCESS_KEY": "fake", "AWS_REGION": "us-east-1",
		"AWS_CONFIG_FILE": filepath.Join(aws, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(aws, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	c.Dir = "s3://hone/judge-cache?endpoint=" + store.URL + "&use_path_style=true&disable_https=true&region=us-east-1"
	stopped, stop := context.WithCancel(ctx)
	stop()
	logged.Reset()
	other := req
	other.User = "another group"
	c.Judge(stopped, other)
	callStop, stopCall := context.WithCancel(ctx)
	c.Next = judge.Func(func(ctx context.Context, r judge.Request) (judge.Verdict, error) {
		v, err := f.Judge(ctx, r)
		stopCall()
		return v, err
	})
	other.User = "a third group"
	c.Judge(callStop, other)
	if logged.Len() != 0 {
		t.Errorf("the run's own cancellation was logged:\n%s", logged.String())
	}
	if reached.Load() != 1 {
		t.Errorf("%d stores reached the store, want 1: the verdict answered as the run stopped", reached.Load())
	}
}

// TestCacheLogObjectWithoutQuery: a warning about an entry in an object
// store names the entry (its "path") as the user names the cache
// (--judge-cache s3://…), without the query that opens its bucket
// (endpoint=…&use_path_style=…), which put the store's address in each
// log line. The store answers every read with a corrupt entry and
// refuses every write: both are warned of, and the run goes on.
func TestCacheLogObjectWithoutQuery(t *testing.T) {
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusForbidden) // not retried
			return
		}
		w.Write([]byte("not json"))
	}))
	t.Cleanup(store.Close)
	aws := t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "fake", "AWS_SECRET_ACCESS_KEY": "fake", "AWS_REGION": "us-east-1",
		"AWS_CONFIG_FILE": filepath.Join(aws, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(aws, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.25, 0.75}), nil
	}}
	var logged bytes.Buffer
	c := &judgecache.Cache{Next: f, Log: slog.New(slog.NewJSONHandler(&logged, nil)),
		Dir: "s3://hone/judge-cache?endpoint=" + store.URL + "&use_path_style=true&disable_https=true&region=us-east-1"}
	req := judge.Request{Model: "m", PromptVersion: "v1", System: "rubric", User: "group", IDs: []string{"1", "2"}}
	if _, err := c.Judge(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	key := judgecache.Key("", req)
	want := "s3://hone/judge-cache/" + key[:2] + "/" + key + ".json"
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var rec struct{ Msg, Path string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msgs = append(msgs, rec.Msg)
		if rec.Path != want {
			t.Errorf("%q names path %q, want %q (without its query)", rec.Msg, rec.Path, want)
		}
	}
	if len(msgs) != 2 || !strings.Contains(msgs[0], "corrupt entry") || !strings.Contains(msgs[1], "cannot store verdict") {
		t.Errorf("logged %q, want the corrupt entry, then the failed store", msgs)
	}
}
