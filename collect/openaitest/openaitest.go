// Package openaitest is an in-process OpenAI-compatible chat completions
// server for tests: replies come from a function, every reply carries
// vLLM-style token ids and logprobs, and faults (error statuses, hangs,
// connections closed mid-response) can be injected per request.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Request is the part of a chat completion request the server reads.
type Request struct {
	Model          string            `json:"model"`
	Messages       []json.RawMessage `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	Logprobs       bool              `json:"logprobs"`
	ReturnTokenIDs bool              `json:"return_token_ids"`
	Temperature    *float64          `json:"temperature"`
	TopP           *float64          `json:"top_p"`
	MaxTokens      *int              `json:"max_tokens"`
	Seed           *int64            `json:"seed"`
	Raw            []byte            `json:"-"`
}

// LastContent returns the content string of the last message.
func (r Request) LastContent() string {
	if len(r.Messages) == 0 {
		return ""
	}
	var m struct {
		Content string `json:"content"`
		Role    string `json:"role"`
	}
	json.Unmarshal(r.Messages[len(r.Messages)-1], &m)
	return m.Content
}

// Reply is one scripted answer.
type Reply struct {
	Content   string
	ToolCalls []ToolCall
	Model     string // the served model reported back (default: the request's)
	Finish    string // default "stop", or "tool_calls" when there are calls
}

// ToolCall is one tool call in a reply.
type ToolCall struct {
	ID, Name, Arguments string
}

// Fault is what the server does instead of answering.
type Fault int

// Faults.
const (
	None      Fault = iota
	Status500       // answer 500
	Status429       // answer 429
	Hang            // never answer (until the client gives up)
	Drop            // close the connection without a response
	Truncate        // send headers and half a body, then close
)

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	// Reply answers one request; it must be safe for concurrent use.
	Reply func(Request) Reply

	mu sync.Mutex
	// fault, if set, is asked first with the 1-based request number. It
	// is set after the server started (SetFault), while handlers may be
	// reading it, so it is read and written under mu.
	fault    func(n int64) Fault
	requests []Request
	count    atomic.Int64
}

// New starts a server; its base URL is s.URL + "/v1".
func New(reply func(Request) Reply) *Server {
	s := &Server{Reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// SetFault makes the server ask f, with the 1-based request number,
// before it answers each later request; nil answers every one. It is safe
// to call while requests are served.
func (s *Server) SetFault(f func(n int64) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// BaseURL is the URL to give an OpenAI client.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns the requests answered or faulted so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is how many requests arrived.
func (s *Server) Count() int64 { return s.count.Load() }

// Tokens is the fake tokenizer: one id per byte, and the logprob the
// server reports for the i-th token.
func Tokens(s string) ([]int32, []float64) {
	ids := make([]int32, len(s))
	lps := make([]float64, len(s))
	for i := range len(s) {
		ids[i] = int32(s[i])
		lps[i] = -0.01 * float64(i+1)
	}
	return ids, lps
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	n := s.count.Add(1)
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":%q}}`, err.Error())
		return
	}
	req.Raw = body
	s.mu.Lock()
	s.requests = append(s.requests, req)
	fault := s.fault
	s.mu.Unlock()
	f := None
	if fault != nil {
		// Called without the lock: a fault function may block or call
		// back into the server (Count, Requests).
		f = fault(n)
	}
	switch f {
	case Status500, Status429:
		code := 500
		if f == Status429 {
			code = 429
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"injected %d","type":"server_error"}}`, code)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		return
	case Drop, Truncate:
		hj, ok := w.(http.Hijacker)
		if !ok {
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		if f == Truncate {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"x\",\"choices\":[")
			buf.Flush()
		}
		conn.Close()
		return
	}
	rep := s.Reply(req)
	model := rep.Model
	if model == "" {
		model = req.Model
	}
	text := rep.Content
	var calls []map[string]any
	for _, c := range rep.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		text += c.Name + c.Arguments // what the fake "generated"
	}
	ids, lps := Tokens(text)
	lpc := make([]map[string]any, len(ids))
	for i := range ids {
		lpc[i] = map[string]any{"token": string(rune(ids[i])), "logprob": lps[i], "bytes": []int{int(ids[i])}, "top_logprobs": []any{}}
	}
	finish := rep.Finish
	if finish == "" {
		finish = "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
	}
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	if rep.Content == "" && len(calls) > 0 {
		msg["content"] = nil
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": model,
		"prompt_token_ids": []int32{1, 2, 3},
		"choices": []any{map[string]any{
			"index": 0, "message": msg, "finish_reason": finish,
			"logprobs":  map[string]any{"content": lpc},
			"token_ids": ids,
		}},
		"usage": map[string]any{"prompt_tokens": 3, "completion_tokens": len(ids), "total_tokens": 3 + len(ids)},
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}
