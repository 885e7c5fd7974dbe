package judgecache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/score/judge"
)

// formatVersion is bumped when the entry layout or the key derivation
// changes, so older entries become misses rather than misreads.
// Version 2 keys the judge's server (Cache.Server): a version-1 entry,
// keyed without it, is never looked up again, so an old cache's entries
// are misses and are judged and stored anew.
const formatVersion = "hone-judgecache-2"

// Cache is a judge.Judge decorator backed by a directory.
type Cache struct {
	Dir  string
	Next judge.Judge
	// Server is the judge's base URL ("" for api.openai.com). It is part
	// of the key: two servers may serve different models, or the same
	// weights differently, under one model name.
	Server string
	Log    *slog.Logger // nil: no logging
	// Files reads and writes the entries, sharing one bucket among them
	// when Dir is an object-store folder (nil: fileset.ReadFile and
	// WriteFile, a bucket each).
	Files *fileset.Pool

	// inflight holds the keys being judged now. A request equal to one in
	// flight (two groups whose prompts are the same text) waits for its
	// verdict rather than asking the judge again: otherwise each got an
	// answer of its own, the cache kept whichever was written last, and a
	// re-run wrote that one for both, not the rows the first run wrote.
	mu       sync.Mutex
	inflight map[string]*flight

	// A cache that cannot be read or written fails alike for every
	// group: each kind of failure is warned of once a run, and logged at
	// debug level after that, so that thousands of groups do not bury the
	// log in the same line.
	readWarned, storeWarned atomic.Bool
}

// flight is one key's judge call in progress; done is closed when it ends,
// with ok set when v is a verdict to share.
type flight struct {
	done chan struct{}
	v    judge.Verdict
	ok   bool
}

// entry is one cache file.
type entry struct {
	Format        string        `json:"format"`
	Key           string        `json:"key"`
	Model         string        `json:"model"`          // judge model requested
	Server        string        `json:"server"`         // judge base URL as keyed (ServerKey: normalised, its userinfo's secret masked): the key tells servers apart
	AnsweredBy    string        `json:"answered_by"`    // model the server reported
	PromptVersion string        `json:"prompt_version"` // for people reading the cache
	Scores        []judge.Score `json:"scores"`
	// Usage is what the original call cost; a hit costs nothing.
	Usage judge.Usage `json:"usage"`
}

// Key returns the cache key of a request to the judge at server (a base
// URL): the hex sha256 over a JSON encoding of everything that determines
// the answer. The server is normalised by ServerKey.
func Key(server string, req judge.Request) string {
	b, _ := json.Marshal(struct {
		Format, Server, Model, PromptVersion, System, User string
		IDs                                                []string
		Temperature                                        *float64 `json:",omitempty"`
	}{formatVersion, ServerKey(server), req.Model, req.PromptVersion, req.System, req.User, req.IDs, req.Temperature})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ServerKey normalises a judge base URL for the key: trailing slashes are
// trimmed (http://h/v1/ and http://h/v1 are one server), "" is
// api.openai.com's, where an empty base URL sends its calls, and the
// userinfo's password or token is masked (urlmask.Shown). The secret says
// nothing of the answer: hashing it lost the cache at each rotation of a
// password, and made a key that names a file in a shared folder depend on
// it. A URL without userinfo keys as it did before the mask, so its
// entries stay hits; one with a secret keys anew, and the entries stored
// under its old key are misses (no file at the new key's path), not
// misreads, so formatVersion stays.
func ServerKey(base string) string {
	if base == "" {
		base = judge.OpenAIBaseURL
	}
	return urlmask.Shown(strings.TrimRight(base, "/"))
}

// Path returns where the entry for key lives: a path, or a URL when Dir
// names an object-store folder (s3://bucket/judge-cache).
func (c *Cache) Path(key string) string {
	return fileset.Join(c.Dir, key[:2], key+".json")
}

// Judge answers from the cache when it can, and otherwise asks Next and
// stores a successful verdict.
func (c *Cache) Judge(ctx context.Context, req judge.Request) (judge.Verdict, error) {
	key := Key(c.Server, req)
	for {
		f, leader := c.join(key)
		if leader {
			v, err := c.judge(ctx, key, req)
			c.finish(key, f, v, err == nil)
			return v, err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return judge.Verdict{}, ctx.Err()
		}
		if f.ok {
			return judge.Verdict{Model: f.v.Model, Scores: f.v.Scores, Usage: judge.Usage{CacheHits: 1}}, nil
		}
		// The call failed, and failures are not shared: this request
		// asks again, as it would have without the other.
	}
}

// join returns key's flight, and whether the caller leads it (made it and
// must finish it) or waits for it.
func (c *Cache) join(key string) (*flight, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.inflight[key]; ok {
		return f, false
	}
	if c.inflight == nil {
		c.inflight = map[string]*flight{}
	}
	f := &flight{done: make(chan struct{})}
	c.inflight[key] = f
	return f, true
}

// finish ends key's flight, after the verdict was stored, so that a
// request arriving later finds it in flight or on disk.
func (c *Cache) finish(key string, f *flight, v judge.Verdict, ok bool) {
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	f.v, f.ok = v, ok
	close(f.done)
}

// storeAfterStop bounds the store of a verdict answered as the run
// stopped: an object-store PUT, which a stalled store could hold.
const storeAfterStop = 10 * time.Second

// judge answers req from the cache when it can, and otherwise asks Next
// and stores a successful verdict.
func (c *Cache) judge(ctx context.Context, key string, req judge.Request) (judge.Verdict, error) {
	path := c.Path(key)
	if v, ok := c.load(ctx, path, key, req); ok {
		return v, nil
	}
	v, err := c.Next.Judge(ctx, req)
	if err != nil {
		return v, err
	}
	e := entry{Format: formatVersion, Key: key, Model: req.Model, Server: ServerKey(c.Server), AnsweredBy: v.Model,
		PromptVersion: req.PromptVersion, Scores: v.Scores, Usage: v.Usage}
	// The verdict was paid for: a run stopped while the judge answered
	// (Ctrl-C) still stores it, so the next run does not ask again, under
	// a bound of its own so that a stalled store does not hold the exit.
	store, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeAfterStop)
	defer cancel()
	if err := c.writeAtomic(store, path, e); err != nil {
		// The verdict is good; a cache that cannot be written only costs a
		// judge call next time, so the run goes on.
		c.warnOnce(&c.storeWarned, "judge cache: cannot store verdict", "path", fileset.DisplayName(path), "err", err)
	}
	return v, nil
}

// load returns the verdict stored at path for req, when there is one
// that answers it. A miss is logged with its reason, unless the run's own
// context ended: a stopped run's failed reads are no news.
func (c *Cache) load(ctx context.Context, path, key string, req judge.Request) (judge.Verdict, bool) {
	b, err := c.readFile(ctx, path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
			c.warnOnce(&c.readWarned, "judge cache: unreadable entry, calling the judge", "path", fileset.DisplayName(path), "err", err)
		}
		return judge.Verdict{}, false
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		c.warn("judge cache: corrupt entry, calling the judge", "path", fileset.DisplayName(path), "err", err)
		return judge.Verdict{}, false
	}
	if why := mismatch(e, key, req); why != "" {
		c.warn("judge cache: entry does not answer the request, calling the judge", "path", fileset.DisplayName(path), "mismatch", why)
		return judge.Verdict{}, false
	}
	if err := checkScores(b); err != nil {
		// Only validated verdicts are stored, so this entry was edited or
		// written by something else (a shared object-store cache): the
		// judge is asked again rather than a bad score trained on.
		c.warn("judge cache: entry with a bad score, calling the judge", "path", fileset.DisplayName(path), "err", err)
		return judge.Verdict{}, false
	}
	return judge.Verdict{Model: e.AnsweredBy, Scores: e.Scores, Usage: judge.Usage{CacheHits: 1}}, true
}

// mismatch says how a well-formed entry fails to answer req, stored under
// key: another format (an older Hone's), another key (a file moved or
// copied by hand), or scores for other trajectories; "" when it answers.
func mismatch(e entry, key string, req judge.Request) string {
	switch {
	case e.Format != formatVersion:
		return fmt.Sprintf("format %q, want %q", e.Format, formatVersion)
	case e.Key != key:
		return fmt.Sprintf("key %q, want %q", e.Key, key)
	case len(e.Scores) != len(req.IDs):
		return fmt.Sprintf("%d scores for %d trajectory ids", len(e.Scores), len(req.IDs))
	}
	for i, s := range e.Scores {
		if s.ID != req.IDs[i] {
			return fmt.Sprintf("score %d is for trajectory_id %q, want %q", i+1, s.ID, req.IDs[i])
		}
	}
	return ""
}

// warn logs a warning when the cache has a logger. Its callers name the
// entry by fileset.DisplayName: an object-store cache's query
// (endpoint=…&use_path_style=…) names no entry.
func (c *Cache) warn(msg string, args ...any) {
	if c.Log != nil {
		c.Log.Warn(msg, args...)
	}
}

// warnOnce logs a warning the first time flag is set, and the same line
// at debug level after that; the warning says so.
func (c *Cache) warnOnce(flag *atomic.Bool, msg string, args ...any) {
	if c.Log == nil {
		return
	}
	if flag.CompareAndSwap(false, true) {
		c.Log.Warn(msg+" (further ones this run are logged at debug level)", args...)
		return
	}
	c.Log.Debug(msg, args...)
}

// checkScores holds a stored entry to what judge.Parse accepts of an
// answer: every score present and a number in [0,1] (a missing one would
// decode as 0).
func checkScores(entryJSON []byte) error {
	var e struct {
		Scores []struct {
			ID    string   `json:"trajectory_id"`
			Score *float64 `json:"score"`
		} `json:"scores"`
	}
	if err := json.Unmarshal(entryJSON, &e); err != nil {
		return err
	}
	for _, s := range e.Scores {
		switch {
		case s.Score == nil:
			return fmt.Errorf("trajectory_id %q: no score", s.ID)
		case math.IsNaN(*s.Score) || *s.Score < 0 || *s.Score > 1:
			return fmt.Errorf("trajectory_id %q: score %v is outside [0,1]", s.ID, *s.Score)
		}
	}
	return nil
}

// writeAtomic stores an entry through fileset.Create: a local file is
// written under a temporary name and renamed into place (its folder made
// first, also for a file:// URL), an object is uploaded whole, so
// concurrent runs and crashes leave a whole entry or none.
func (c *Cache) writeAtomic(ctx context.Context, path string, e entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if c.Files != nil {
		return c.Files.WriteFile(ctx, path, append(b, '\n'))
	}
	return fileset.WriteFile(ctx, path, append(b, '\n'))
}

// readFile reads the entry at path through c.Files, when set.
func (c *Cache) readFile(ctx context.Context, path string) ([]byte, error) {
	if c.Files != nil {
		return c.Files.ReadFile(ctx, path)
	}
	return fileset.ReadFile(ctx, path)
}
