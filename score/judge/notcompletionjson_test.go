package judge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeJSONAnswerNotCompletionNotRetried: a 200 labelled JSON whose
// body does not parse, or parses as something other than a chat
// completion (an array, a string, an object with neither choices nor an
// error, such as another endpoint's answer), was taken for a transport
// failure or a malformed answer and asked again --judge-retries times,
// though a server that answers so answers every call the same. It fails
// at once, naming --judge-base-url and what came back. A gateway's 200
// with an error object (an upstream failure, which may pass) is still
// retried.
func TestJudgeJSONAnswerNotCompletionNotRetried(t *testing.T) {
	for _, body := range []string{`not json at all`, `{"choices": [`, `[1,2,3]`, `"hello"`, `{"object":"list","data":[{"id":"m"}]}`, `{"choices":"x"}`} {
		t.Run(body, func(t *testing.T) {
			s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Body: body, Header: map[string]string{"Content-Type": "application/json"}}
			})
			j := judge.Retry{Next: judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second}), Attempts: 3}
			_, err := j.Judge(context.Background(), req3)
			var je *judge.Error
			if !errors.As(err, &je) || je.Retryable || !judge.NotCompletion(err) {
				t.Fatalf("answer %s: %v (%+v); want a final error, not a completion", body, err, je)
			}
			if s.Hits() != 1 {
				t.Errorf("answer %s asked %d times, want once", body, s.Hits())
			}
			if msg := err.Error(); !strings.Contains(msg, "--judge-base-url "+s.BaseURL()) || !strings.Contains(msg, strings.Trim(body[:min(len(body), 8)], `"[{`)) {
				t.Errorf("the error names neither --judge-base-url nor what came back: %v", err)
			}
		})
	}
	t.Run("gateway error", func(t *testing.T) {
		s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
			return judgetest.Reply{Body: `{"error":{"message":"upstream busy","code":502}}`, Header: map[string]string{"Content-Type": "application/json"}}
		})
		j := judge.Retry{Next: judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second}), Attempts: 3}
		if _, err := j.Judge(context.Background(), req3); err == nil || s.Hits() != 3 || judge.NotCompletion(err) {
			t.Errorf("a gateway's error object: %v after %d calls; want retried 3 times", err, s.Hits())
		}
	})
}
