package judge_test

import (
	"testing"
	"time"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

func TestSuiteFake(t *testing.T) {
	judgetest.Suite(t, func(t *testing.T, answer func(judge.Request) (string, error)) judge.Judge {
		return &judge.Fake{Answer: func(_ int, r judge.Request) (string, error) { return answer(r) }}
	})
}

func TestSuiteOpenAI(t *testing.T) {
	judgetest.Suite(t, func(t *testing.T, answer func(judge.Request) (string, error)) judge.Judge {
		return judge.NewOpenAI(judge.OpenAIOptions{BaseURL: judgetest.ServerFor(t, answer).BaseURL(), Timeout: 10 * time.Second})
	})
}

func TestSuiteRetryMeter(t *testing.T) {
	judgetest.Suite(t, func(t *testing.T, answer func(judge.Request) (string, error)) judge.Judge {
		srv := judgetest.ServerFor(t, answer)
		return &judge.Meter{Next: judge.Retry{Next: judge.NewOpenAI(judge.OpenAIOptions{BaseURL: srv.BaseURL()}), Attempts: 2}}
	})
}
