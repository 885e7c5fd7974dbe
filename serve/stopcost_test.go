package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// TestLongStopStringsCostPerToken: a request's stop strings are matched as
// its text grows, at a cost per token that does not grow with their
// length. Each token used to rebuild every stop string's KMP table and
// search a window of the longest one's length, on the engine goroutine
// that serves every request: four 1 MB stop strings (a 4 MB body, within
// the default cap) cost 32 MB of allocation and some 10 ms per token,
// stalling every other sequence; 100 tokens allocated over 3 GB. Now the
// tables are built once, at Submit, and each token feeds only its bytes.
func TestLongStopStringsCostPerToken(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxTokens: 200}, nil)
	var stops []string
	for i := range 4 {
		stops = append(stops, fmt.Sprintf("%q", strings.Repeat("a", 1<<20)+fmt.Sprint(i)))
	}
	body := `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":100,"ignore_eos":true,"seed":1,"stop":[` + strings.Join(stops, ",") + `]}`
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	status, out := ts.post(t, "/v1/chat/completions", body)
	runtime.ReadMemStats(&after)
	if status != http.StatusOK {
		t.Fatalf("status %d: %.300s", status, out)
	}
	var resp struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Usage.CompletionTokens != 100 || resp.Choices[0].FinishReason != "length" {
		t.Fatalf("want 100 tokens ending \"length\": %.300s", out)
	}
	// The body is read, decoded and its stop tables built a few times over
	// (tens of MB); per-token work on the stop strings' length is GBs.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MB", alloc>>20)
	if alloc > 400<<20 {
		t.Fatalf("a 100-token request with 4 MB of stop strings allocated %d MB: the stop strings cost work per token in their length", alloc>>20)
	}
}
