package judgecache_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
	"github.com/hone-rl/hone/score/judgecache"
)

// keyReq is the request the server-key tests key; the keys pinned below
// are its keys as hone-judgecache-2 derived them before the server's
// credentials were left out of the key.
var keyReq = judge.Request{Model: "m", PromptVersion: "v1", System: "rubric", User: "group", IDs: []string{"1", "2"}}

// TestKeyServerCredentials: the judge's key names its server by the
// base URL with the userinfo's secret masked (urlmask.Shown), so that a
// rotated password or token keeps the cache, and the secret is no input
// of a key that is a file's name in a shared folder. The user of a
// user:password pair stays in the key (it says who asked: a gateway may
// serve two accounts differently), and a different host, port, path or
// scheme is a different server.
func TestKeyServerCredentials(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"http://alice:pw1@judge:8000/v1", "http://alice:pw2@judge:8000/v1"},
		{"http://alice:pw1@judge:8000/v1", "http://alice:xxxxx@judge:8000/v1"},
		{"http://alice:p%40ss@judge:8000/v1/", "http://alice:other@judge:8000/v1"},
		{"http://sk-one@judge:8000/v1", "http://sk-two@judge:8000/v1"},
		{"https://sk%2Fone@judge/v1", "https://sk-two@judge/v1"},
	} {
		if judgecache.Key(c.a, keyReq) != judgecache.Key(c.b, keyReq) {
			t.Errorf("%s and %s, one server with other credentials, have different keys", c.a, c.b)
		}
	}
	for _, c := range []struct{ a, b string }{
		{"http://alice:pw@judge-a:8000/v1", "http://alice:pw@judge-b:8000/v1"},
		{"http://alice:pw@judge:8000/v1", "http://alice:pw@judge:8001/v1"},
		{"http://alice:pw@judge:8000/v1", "http://alice:pw@judge:8000/v2"},
		{"http://alice:pw@judge:8000/v1", "https://alice:pw@judge:8000/v1"},
		{"http://sk-one@judge-a/v1", "http://sk-one@judge-b/v1"},
		{"http://alice:pw@judge:8000/v1", "http://bob:pw@judge:8000/v1"},
	} {
		if judgecache.Key(c.a, keyReq) == judgecache.Key(c.b, keyReq) {
			t.Errorf("%s and %s, two servers, have one key", c.a, c.b)
		}
	}
}

// TestKeyWithoutUserinfoKept: a base URL with no userinfo (the usual
// one) keys as it did, so the entries a cache holds for it are still
// hits after the credentials were left out of the key.
func TestKeyWithoutUserinfoKept(t *testing.T) {
	for server, want := range map[string]string{
		"http://judge.example:8000/v1": "a462c6c3c329270b86ab15c3ba1c161185c330a9ab98a3ef19fc15ea1fa98fb9",
		"":                             "c10b272c740cb9f9527abf04ba5bbca07376eed6385dac36d8215ad87f8242ff",
	} {
		if got := judgecache.Key(server, keyReq); got != want {
			t.Errorf("Key(%q) = %s, want %s as before", server, got, want)
		}
	}
}

// oldCredentialEntry is the entry a cache stored for keyReq asked of
// http://alice:pw@judge.example:8000/v1 while the key hashed the
// password, under oldCredentialKey.
const (
	oldCredentialKey   = "926aadd5cb8537638976706dfec38dd46c3f3f4e7929d5cdea3dceac22cd2a70"
	oldCredentialEntry = `{
  "format": "hone-judgecache-2",
  "key": "926aadd5cb8537638976706dfec38dd46c3f3f4e7929d5cdea3dceac22cd2a70",
  "model": "m",
  "server": "http://alice:xxxxx@judge.example:8000/v1",
  "answered_by": "m",
  "prompt_version": "v1",
  "scores": [
    {"trajectory_id": "1", "explanation": "trajectory 1 scored 0.25", "score": 0.25},
    {"trajectory_id": "2", "explanation": "trajectory 2 scored 0.75", "score": 0.75}
  ],
  "usage": {"Calls": 1, "CacheHits": 0, "Retries": 0, "PromptTokens": 0, "CompletionTokens": 0}
}
`
)

// TestCacheOldCredentialKeyMissed: an entry stored under a key that
// hashed the server's password is missed cleanly (no warning, the judge
// asked, the verdict stored under the new key, the old file untouched);
// the new entry then answers the server with its password rotated.
func TestCacheOldCredentialKeyMissed(t *testing.T) {
	dir := t.TempDir()
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		return judgetest.Answer(r.IDs, []float64{0.5, 1}), nil
	}}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := &judgecache.Cache{Dir: dir, Next: f, Log: log, Server: "http://alice:pw@judge.example:8000/v1"}
	old := c.Path(oldCredentialKey)
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte(oldCredentialEntry), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := c.Judge(ctx, keyReq)
	if err != nil || len(f.Calls()) != 1 || v.Scores[0].Score != 0.5 {
		t.Fatalf("old-key entry: calls %d, scores %+v, err %v; want a miss, the judge asked", len(f.Calls()), v.Scores, err)
	}
	if logged.Len() != 0 {
		t.Errorf("the miss logged:\n%s", logged.String())
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != oldCredentialEntry {
		t.Errorf("the old entry was changed: %v\n%s", err, b)
	}
	rotated := &judgecache.Cache{Dir: dir, Next: f, Log: log, Server: "http://alice:rotated@judge.example:8000/v1"}
	v, err = rotated.Judge(ctx, keyReq)
	if err != nil || len(f.Calls()) != 1 || v.Usage.CacheHits != 1 || v.Scores[0].Score != 0.5 {
		t.Fatalf("rotated password: calls %d, usage %+v, scores %+v, err %v; want the new entry's hit", len(f.Calls()), v.Usage, v.Scores, err)
	}
}
