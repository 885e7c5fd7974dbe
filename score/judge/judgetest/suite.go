package judgetest

import (
	"context"
	"errors"
	"testing"

	"github.com/hone-rl/hone/score/judge"
)

// NewJudge builds the judge under test; its answers to a request come from
// answer (an error from answer means the judge's backend failed).
type NewJudge func(t *testing.T, answer func(req judge.Request) (string, error)) judge.Judge

// Suite checks the contract every judge.Judge keeps: a valid answer comes
// back as scores in request order, matched by id; malformed answers and
// backend failures are errors wrapping judge.ErrFailed; a cancelled
// context is the context's error, not a judge failure.
func Suite(t *testing.T, newJudge NewJudge) {
	req := judge.Request{Model: "suite-model", PromptVersion: "suite-1", System: "system text", User: "user text", IDs: []string{"1", "2", "3"}}
	t.Run("valid", func(t *testing.T) {
		j := newJudge(t, func(r judge.Request) (string, error) {
			return Answer([]string{"2", "3", "1"}, []float64{0, 0.5, 1}), nil
		})
		v, err := j.Judge(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Scores) != 3 || v.Scores[0].ID != "1" || v.Scores[0].Score != 1 || v.Scores[1].Score != 0 || v.Scores[2].Score != 0.5 {
			t.Fatalf("scores = %+v", v.Scores)
		}
		if v.Usage.Calls+v.Usage.CacheHits < 1 {
			t.Fatalf("usage %+v counts no call", v.Usage)
		}
	})
	for name, answer := range map[string]string{
		"non-json":     "the first one",
		"wrong count":  Answer([]string{"1", "2"}, []float64{1, 0}),
		"out of range": Answer([]string{"1", "2", "3"}, []float64{1, 0, 2}),
		"wrong ids":    Answer([]string{"1", "2", "4"}, []float64{1, 0, 0}),
	} {
		t.Run(name, func(t *testing.T) {
			j := newJudge(t, func(judge.Request) (string, error) { return answer, nil })
			if _, err := j.Judge(context.Background(), req); !errors.Is(err, judge.ErrFailed) {
				t.Fatalf("err = %v, want a judge failure", err)
			}
		})
	}
	t.Run("backend failure", func(t *testing.T) {
		j := newJudge(t, func(judge.Request) (string, error) {
			return "", &judge.Error{Kind: "http", Err: errors.New("backend down")}
		})
		if _, err := j.Judge(context.Background(), req); !errors.Is(err, judge.ErrFailed) {
			t.Fatalf("err = %v, want a judge failure", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		j := newJudge(t, func(r judge.Request) (string, error) { return Answer(r.IDs, []float64{1, 1, 1}), nil })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := j.Judge(ctx, req)
		if !errors.Is(err, context.Canceled) || errors.Is(err, judge.ErrFailed) {
			t.Fatalf("err = %v, want context.Canceled and no judge failure", err)
		}
	})
}

// ServerFor returns a scripted server that answers like answer: its text
// as the message content, or HTTP 500 when answer fails.
func ServerFor(t testing.TB, answer func(req judge.Request) (string, error)) *Server {
	return NewServer(t, func(_ int, r Request) Reply {
		text, err := answer(judge.Request{Model: r.Model, System: r.System(), User: r.User(), IDs: r.IDsFromSchema()})
		if err != nil {
			return Reply{Status: 500}
		}
		return Reply{Content: text, PromptTokens: 10, CompletionTokens: 5}
	})
}
