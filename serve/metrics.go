package serve

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"
)

// metrics are the server's counters, exposed in the Prometheus text format
// by a small hand-written writer (a few counters, gauges and one histogram
// do not need client_golang).
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]int64 // {endpoint, status} → count
	ttftB    []float64           // histogram bucket upper bounds, seconds
	ttftC    []int64             // cumulative counts per bucket (+Inf last)
	ttftSum  float64
	ttftN    int64
	// noCand counts requests ended by a sequence with no token to choose,
	// by error code (Server.noCandidate): streamed ones too, whose status
	// was 200 before they failed.
	noCand map[string]int64
}

func newMetrics() *metrics {
	b := []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	return &metrics{requests: map[[2]string]int64{}, ttftB: b, ttftC: make([]int64, len(b)+1),
		noCand: map[string]int64{codeLogitsNotFinite: 0, codeConstraintNoToken: 0}}
}

func (m *metrics) request(endpoint string, status int) {
	if status == 0 {
		status = http.StatusOK
	}
	m.mu.Lock()
	m.requests[[2]string{endpoint, strconv.Itoa(status)}]++
	m.mu.Unlock()
}

func (m *metrics) noCandidate(code string) {
	m.mu.Lock()
	m.noCand[code]++
	m.mu.Unlock()
}

func (m *metrics) ttft(d time.Duration) {
	v := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, b := range m.ttftB {
		if v <= b {
			m.ttftC[i]++
		}
	}
	m.ttftC[len(m.ttftB)]++
	m.ttftSum += v
	m.ttftN++
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.writeMetrics(w)
}

func (s *Server) writeMetrics(w io.Writer) {
	st := s.eng.Stats()
	m := s.met
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# HELP hone_serve_requests_total HTTP API requests by endpoint and status.")
	fmt.Fprintln(w, "# TYPE hone_serve_requests_total counter")
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		fmt.Fprintf(w, "hone_serve_requests_total{endpoint=%q,status=%q} %d\n", k[0], k[1], m.requests[k])
	}
	fmt.Fprintln(w, "# HELP hone_serve_no_token_errors_total Requests failed because a sequence had no token to choose, by code: logits_not_finite (the model's logits were NaN or -Inf everywhere, as from a diverged adapter), constraint_no_token (the output constraint left none).")
	fmt.Fprintln(w, "# TYPE hone_serve_no_token_errors_total counter")
	for _, code := range slices.Sorted(maps.Keys(m.noCand)) {
		fmt.Fprintf(w, "hone_serve_no_token_errors_total{code=%q} %d\n", code, m.noCand[code])
	}
	gauge := func(name, help string, v any, typ string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %v\n", name, help, name, typ, name, v)
	}
	gauge("hone_serve_prompt_tokens_total", "Prompt tokens of requests started (prefix cache hits included).", st.PromptTokens, "counter")
	gauge("hone_serve_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", st.PrefixQueried, "counter")
	gauge("hone_serve_prefix_cache_hits_total", "Prompt tokens whose KV rows came from the prefix cache instead of a prefill.", st.PrefixHit, "counter")
	gauge("hone_serve_prefix_cache_kept_bytes", "KV cache bytes held by finished requests for prefix caching.", st.PrefixKeptBytes, "gauge")
	gauge("hone_serve_generation_tokens_total", "Tokens generated.", st.GenTokens, "counter")
	gauge("hone_serve_engine_steps_total", "Model steps run by the scheduler.", st.Steps, "counter")
	gauge("hone_serve_engine_step_seconds_total", "Time spent in scheduler steps.", st.StepSeconds, "counter")
	gauge("hone_serve_requests_cancelled_total", "Requests cancelled by the client or their deadline.", st.Cancelled, "counter")
	gauge("hone_serve_sequences_running", "Sequences in the running batch.", st.Running, "gauge")
	gauge("hone_serve_requests_waiting", "Requests waiting in the queue.", st.Queued, "gauge")
	gauge("hone_serve_sequences_waiting", "Sequences (each waiting request's n) in the queue, which --max-queue bounds.", st.QueuedSequences, "gauge")
	gauge("hone_serve_kv_cache_used_bytes", "KV cache bytes reserved.", st.KVUsedBytes, "gauge")
	gauge("hone_serve_kv_cache_budget_bytes", "KV cache budget in bytes (0: unlimited).", st.KVBudget, "gauge")
	if s.reg != nil {
		gauge("hone_serve_adapter_names", "Served adapter names (runs and run@step).", len(s.reg.Names()), "gauge")
	}
	fmt.Fprintln(w, "# HELP hone_serve_time_to_first_token_seconds Time from submission to the first generated token.")
	fmt.Fprintln(w, "# TYPE hone_serve_time_to_first_token_seconds histogram")
	for i, b := range m.ttftB {
		fmt.Fprintf(w, "hone_serve_time_to_first_token_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(b, 'g', -1, 64), m.ttftC[i])
	}
	fmt.Fprintf(w, "hone_serve_time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\n", m.ttftC[len(m.ttftB)])
	fmt.Fprintf(w, "hone_serve_time_to_first_token_seconds_sum %g\n", m.ttftSum)
	fmt.Fprintf(w, "hone_serve_time_to_first_token_seconds_count %d\n", m.ttftN)
}
