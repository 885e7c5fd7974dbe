package inbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/inbox"
	"github.com/hone-rl/hone/format/trajectory"
)

func open(t *testing.T) *inbox.Env {
	t.Helper()
	e, err := inbox.Open(context.Background(), 1, filepath.Join(t.TempDir(), "inbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestSuite(t *testing.T) {
	envtest.Suite(t, open(t), envtest.SuiteOptions{Scenarios: 5, MaxTurns: 12})
}

func TestGenerateDeterministic(t *testing.T) {
	a, b, c := inbox.Generate(3), inbox.Generate(3), inbox.Generate(4)
	if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
		t.Fatal("Generate is not a function of its seed")
	}
	if len(a.Questions) < 30 || len(a.Emails) < 100 {
		t.Fatalf("%d questions, %d emails", len(a.Questions), len(a.Emails))
	}
	byID := map[string]inbox.Email{}
	for _, m := range a.Emails {
		byID[m.ID] = m
	}
	for _, q := range a.Questions {
		if !strings.Contains(byID[q.SourceID].Body, q.Answer) {
			t.Errorf("%s: source %s does not hold the answer %q", q.ID, q.SourceID, q.Answer)
		}
	}
}

func TestSearchAndRead(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	q := e.Inbox().Questions[0] // a flight question
	rs, err := e.Search(ctx, []string{"flight", lastWord(q.Question)}, 10)
	if err != nil || len(rs) != 1 || rs[0].ID != q.SourceID {
		t.Fatalf("search for %q: %v %+v", q.Question, err, rs)
	}
	m, err := e.Read(ctx, q.SourceID)
	if err != nil || !strings.Contains(m.Body, q.Answer) {
		t.Fatalf("read: %v %+v", err, m)
	}
	if _, err := e.Read(ctx, "m9999"); err == nil {
		t.Error("read of a missing id did not fail")
	}
	if rs, err := e.Search(ctx, []string{`a"b`, "OR"}, 5); err != nil || len(rs) != 0 {
		t.Errorf("quotes and operators in keywords: %v %v", err, rs)
	}
	// A keyword of punctuation alone is passed over, not an empty phrase
	// that matches nothing; keywords of nothing else are refused.
	rs, err = e.Search(ctx, []string{"flight", "?", lastWord(q.Question), " - "}, 10)
	if err != nil || len(rs) != 1 || rs[0].ID != q.SourceID {
		t.Errorf("search with punctuation keywords: %v %+v, want %s", err, rs, q.SourceID)
	}
	if _, err := e.Search(ctx, []string{"?", " "}, 10); err == nil || !strings.Contains(err.Error(), "no keywords") {
		t.Errorf("search with punctuation alone: %v, want no keywords", err)
	}
}

// The reward separates a good searcher from a random one.
func TestRewardSeparatesPolicies(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	scs, _ := e.Scenarios(ctx, 1, len(e.Inbox().Questions))
	mean := func(name string) float64 {
		sum := 0.0
		for i, sc := range scs {
			ep, _ := e.NewEpisode(ctx, sc, int64(i))
			p, _ := e.Policy(name, int64(i))
			res, err := env.Play(ctx, ep, p, 15)
			if err != nil {
				t.Fatal(err)
			}
			sum += res.Outcome.Reward
		}
		return sum / float64(len(scs))
	}
	s, r := mean("searcher"), mean("random")
	t.Logf("mean reward over %d questions: searcher %.3f, random %.3f", len(scs), s, r)
	if s < 0.9 || r > 0.3 {
		t.Errorf("searcher %.3f (want ≥ 0.9), random %.3f (want ≤ 0.3)", s, r)
	}
}

func TestPartialCredit(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	q := e.Inbox().Questions[3]
	sc, _ := e.Scenarios(ctx, 1, 1)
	_ = sc
	p := []byte(`{"question":"` + q.Question + `","answer":"` + q.Answer + `","source_id":"` + q.SourceID + `"}`)
	ep, _ := e.NewEpisode(ctx, env.Scenario{ID: "x", Payload: p}, 0)
	ep.Reset(ctx)
	fb, _ := ep.Step(ctx, env.Turn{Message: env.Assistant("The answer is " + q.Answer)})
	if o := ep.Outcome(); !fb.Done || o.Reward != 0.7 || o.Metrics["answered"] != 1 {
		t.Errorf("correct text answer without tools: %+v", o)
	}
}

func lastWord(s string) string {
	f := strings.Fields(strings.TrimSuffix(s, "?"))
	return f[len(f)-1]
}

// TestNewEpisodeNeedsItsSource: a scenario without a source_id, or with one
// that is no email of the inbox, is refused, naming it: found, read and
// cited are scored against it, so such a scenario would score them 0 for
// any answer (it was played).
func TestNewEpisodeNeedsItsSource(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	for _, payload := range []string{`{"question":"q?","answer":"a"}`, `{"question":"q?","answer":"a","source_id":"m9999"}`} {
		_, err := e.NewEpisode(ctx, env.Scenario{ID: "s", Env: "inbox", Payload: []byte(payload)}, 1)
		if err == nil || !strings.Contains(err.Error(), "source_id") || !strings.Contains(err.Error(), "scenario s") {
			t.Errorf("payload %s: %v, want an error naming scenario s and source_id", payload, err)
		}
	}
	q := e.Inbox().Questions[0]
	good := `{"question":"q?","answer":"a","source_id":"` + q.SourceID + `"}`
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s", Env: "inbox", Payload: []byte(good)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ep.Close()
}

// TestHedgingScoresNothing: an answer listing every room that could be it
// holds the right one, and is no answer (it scored 0.7 on every room
// question without a tool call); citing every email of the inbox without
// reading them is no citation (it scored the 0.1 for the source). The
// right room alone, and the source cited once read, still score.
func TestHedgingScoresNothing(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	var q inbox.Question
	for _, iq := range e.Inbox().Questions {
		if iq.Kind == "room" {
			q = iq
			break
		}
	}
	var rooms []string
	for d := '1'; d <= '9'; d++ {
		for c := 'A'; c <= 'F'; c++ {
			rooms = append(rooms, string(d)+string(c))
		}
	}
	var all []string
	for _, m := range e.Inbox().Emails {
		all = append(all, m.ID)
	}
	play := func(steps ...env.Turn) env.Outcome {
		t.Helper()
		p, _ := json.Marshal(map[string]string{"question": q.Question, "answer": q.Answer, "source_id": q.SourceID})
		ep, err := e.NewEpisode(ctx, env.Scenario{ID: "x", Payload: p}, 0)
		if err != nil {
			t.Fatal(err)
		}
		ep.Reset(ctx)
		for _, s := range steps {
			if _, err := ep.Step(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		return ep.Outcome()
	}
	final := func(answer string, sources []string) env.Turn {
		args, _ := json.Marshal(map[string]any{"answer": answer, "sources": sources})
		c := trajectory.ToolCall{ID: "c2", Name: "return_final_answer", Arguments: string(args)}
		return env.Turn{Message: trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{c}}, Calls: []trajectory.ToolCall{c}}
	}
	read := func(id string) env.Turn {
		c := trajectory.ToolCall{ID: "c1", Name: "read_email", Arguments: `{"message_id":"` + id + `"}`}
		return env.Turn{Message: trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{c}}, Calls: []trajectory.ToolCall{c}}
	}
	if o := play(final(strings.Join(rooms, " "), all)); o.Metrics["correct"] != 0 || o.Metrics["cited_source"] != 0 || o.Reward != 0 {
		t.Errorf("every room, every email cited unread: %+v, want no credit", o)
	}
	if o := play(read(q.SourceID), final("Room "+q.Answer, []string{q.SourceID})); o.Metrics["correct"] != 1 || o.Metrics["cited_source"] != 1 || o.Reward < 0.8 {
		t.Errorf("the room, its source read and cited: %+v, want correct and cited", o)
	}
	if o := play(read(q.SourceID), final("Room "+q.Answer, all)); o.Metrics["cited_source"] != 0 {
		t.Errorf("the source read, every email cited: %+v, want no citation", o)
	}
}

// TestDBPathKeepsOtherFiles: db=PATH naming a file that is not an inbox
// database Hone built (a typo naming the user's own database or notes) is
// refused, naming the path, and the file is left as it was: it was
// removed and replaced. An inbox database Hone built there is rebuilt
// (the inbox is a function of its seed), and a failed build leaves no
// file behind.
func TestDBPathKeepsOtherFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.db")
	want := []byte("SQLite format 3\x00 the user's own data")
	os.WriteFile(mine, want, 0o644)
	if e, err := inbox.Open(ctx, 1, mine); err == nil || !strings.Contains(err.Error(), mine) {
		if e != nil {
			e.Close()
		}
		t.Errorf("Open on the user's file: %v; want it refused, naming the path", err)
	}
	if got, _ := os.ReadFile(mine); !bytes.Equal(got, want) {
		t.Fatalf("the user's file now holds %d bytes, want it untouched", len(got))
	}

	db := filepath.Join(dir, "inbox.db")
	for seed := int64(1); seed <= 2; seed++ { // built, then rebuilt for another seed
		e, err := inbox.Open(ctx, seed, db)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		hits, err := e.Search(ctx, []string{e.Inbox().Emails[0].Subject}, 1)
		e.Close()
		if err != nil || len(hits) == 0 {
			t.Fatalf("seed %d: search of a subject: %v, %v", seed, hits, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := inbox.Open(cancelled, 1, filepath.Join(dir, "never.db")); err == nil {
		t.Fatal("Open under a cancelled context succeeded")
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 2 {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Errorf("files left %q, want only mine.db and inbox.db", got)
	}
}

// TestDBPathRefusalSaysWhy: db=PATH naming an inbox database an earlier
// Hone built (before the databases carried their mark) is refused and left
// as it is, like any database without the mark, but the error says that an
// old inbox is one of those and may be removed; it said the file was not an
// inbox database Hone built, which it was. A folder is named as one.
func TestDBPathRefusalSaysWhy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	db, err := sql.Open("sqlite", old)
	if err != nil {
		t.Fatal(err)
	}
	// The table the inbox databases were built with, without the mark.
	_, err = db.ExecContext(ctx, `CREATE VIRTUAL TABLE emails USING fts5(
		id UNINDEXED, thread UNINDEXED, sender, recipient, date UNINDEXED, subject, body)`)
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(old)
	_, err = inbox.Open(ctx, 1, old)
	if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "an inbox database of an earlier Hone") {
		t.Errorf("Open on an old inbox database: %v; want it refused, saying an earlier Hone's inbox database lacks the mark", err)
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, want) {
		t.Errorf("the old database was changed")
	}
	_, err = inbox.Open(ctx, 1, dir)
	if err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("Open on a folder: %v; want it refused as a folder", err)
	}
}

// TestRewardIsExactTenths: the reward is 0.7 plus 0.1 per source step, so
// a perfect episode scores 1 exactly. Summed as floats it scored
// 0.9999999999999999, and `hone-train sft --min-reward 1` (its help's
// example) kept none of the searcher's perfect episodes.
func TestRewardIsExactTenths(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	scs, _ := e.Scenarios(ctx, 1, len(e.Inbox().Questions))
	for i, sc := range scs {
		ep, _ := e.NewEpisode(ctx, sc, int64(i))
		p, _ := e.Policy("searcher", int64(i))
		res, err := env.Play(ctx, ep, p, 15)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome.Reward != 1 {
			t.Errorf("scenario %s: searcher's reward %v, want 1 (metrics %v)", sc.ID, res.Outcome.Reward, res.Outcome.Metrics)
		}
	}
	// Correct and found, never read: 0.7 + 0.1.
	q := e.Inbox().Questions[0]
	p, _ := json.Marshal(q)
	ep, _ := e.NewEpisode(ctx, env.Scenario{ID: "x", Payload: p}, 0)
	ep.Reset(ctx)
	search := trajectory.ToolCall{ID: "c1", Type: "function", Name: "search_inbox", Arguments: `{"keywords":["flight"]}`}
	ep.Step(ctx, env.Turn{Message: trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{search}}, Calls: []trajectory.ToolCall{search}})
	ep.Step(ctx, env.Turn{Message: env.Assistant("It is " + q.Answer)})
	if o := ep.Outcome(); o.Reward != 0.8 || o.Metrics["found_source"] != 1 || o.Metrics["correct"] != 1 {
		t.Errorf("correct answer after finding the source: reward %v, want 0.8 (metrics %v)", o.Reward, o.Metrics)
	}
}

// TestNewEpisodeRefusesAnotherInbox: email ids are m0001… in every inbox,
// so a question generated for another inbox-seed passed the source check
// and was played against emails that do not hold its answer, scoring 0
// for any answer without a word. It is refused, naming inbox-seed; the
// inbox's own questions are played.
func TestNewEpisodeRefusesAnotherInbox(t *testing.T) {
	e := open(t) // inbox-seed 1
	ctx := context.Background()
	other := inbox.Generate(2)
	refused := 0
	for _, q := range other.Questions {
		p, _ := json.Marshal(q)
		ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s", Env: "inbox", Payload: p}, 1)
		if err == nil {
			ep.Close()
			continue
		}
		refused++
		if !strings.Contains(err.Error(), "inbox-seed") || !strings.Contains(err.Error(), "scenario s") {
			t.Errorf("question %s of inbox 2: %v, want an error naming scenario s and inbox-seed", q.ID, err)
		}
	}
	if refused != len(other.Questions) {
		t.Errorf("%d of inbox 2's %d questions refused by inbox 1, want all", refused, len(other.Questions))
	}
	scs, _ := e.Scenarios(ctx, 1, len(e.Inbox().Questions))
	for _, sc := range scs {
		ep, err := e.NewEpisode(ctx, sc, 1)
		if err != nil {
			t.Fatalf("own scenario %s: %v", sc.ID, err)
		}
		ep.Close()
	}
}
