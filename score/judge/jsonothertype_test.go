package judge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestJudgeJSONUnderOtherContentType: a proxy in front of the judge that
// labels its JSON text/plain, or gives no content type at all (a Go
// handler that writes JSON without one is sniffed as text/plain), had
// every answer refused as "not an OpenAI chat completion … not a web
// page", and the run stopped at its first group; the body is the judge's
// chat completion all the same, which the OpenAI Python client reads. A
// body that is JSON is now read as one whatever its label, and a page
// that is not is still refused, naming its content type.
func TestJudgeJSONUnderOtherContentType(t *testing.T) {
	for _, ct := range []string{"text/plain; charset=utf-8", "", "application/octet-stream"} {
		t.Run(ct, func(t *testing.T) {
			s := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Content: judgetest.Answer(r.IDsFromSchema(), []float64{0.1, 0.9, 0.5}),
					Header: map[string]string{"Content-Type": ct}, PromptTokens: 100, CompletionTokens: 20}
			})
			j := judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second})
			v, err := j.Judge(context.Background(), req3)
			if err != nil {
				t.Fatalf("a chat completion labelled %q: %v", ct, err)
			}
			if len(v.Scores) != 3 || v.Scores[1].Score != 0.9 || v.Usage.PromptTokens != 100 {
				t.Fatalf("verdict = %+v", v)
			}
		})
	}
	t.Run("page", func(t *testing.T) {
		s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
			return judgetest.Reply{Body: " \n{ not json: a page that begins like an object", Header: map[string]string{"Content-Type": "text/plain"}}
		})
		_, err := judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second}).Judge(context.Background(), req3)
		if !judge.NotCompletion(err) || !strings.Contains(err.Error(), `"text/plain"`) || !strings.Contains(err.Error(), `{ not json`) {
			t.Fatalf("a text/plain page that is not JSON: %v", err)
		}
	})
}
