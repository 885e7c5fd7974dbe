package judgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is a chat message as the server received it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is a chat-completions request as the server received it.
type Request struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Temperature    *float64        `json:"temperature"`
	Auth           string          `json:"-"` // the Authorization header
	Raw            []byte          `json:"-"`
}

// System returns the system message text.
func (r Request) System() string { return r.text("system") }

// User returns the user message text.
func (r Request) User() string { return r.text("user") }

func (r Request) text(role string) string {
	for _, m := range r.Messages {
		if m.Role == role {
			return m.Content
		}
	}
	return ""
}

// Reply is what the script answers. Status 0 means 200. With Status 200
// the body is a chat completion whose message content is Content; with
// another status, an error object saying "scripted failure". Body, when
// set, is sent as is instead, with either. Delay holds the answer back, or
// until the client gives up. Header, when set, is added to the answer's
// headers (Retry-After on a 429 or 503).
type Reply struct {
	Status           int
	Header           map[string]string
	Content          string
	Body             string
	Delay            time.Duration
	PromptTokens     int64
	CompletionTokens int64
}

// Server is a scripted judge server.
type Server struct {
	*httptest.Server
	script func(n int, req Request) Reply

	mu   sync.Mutex
	reqs []Request
}

// NewServer starts a server that answers request number n (0-based) with
// script(n, req). It is closed when the test ends.
func NewServer(t testing.TB, script func(n int, req Request) Reply) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the OpenAI base URL to give a client.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Hits returns how many chat-completions requests arrived.
func (s *Server) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req.Raw, req.Auth = body, r.Header.Get("Authorization")
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	rep := s.script(n, req)
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.WriteHeader(rep.Status)
		if rep.Body == "" {
			rep.Body = fmt.Sprintf(`{"error":{"message":"scripted failure %d","type":"server_error"}}`, rep.Status)
		}
	}
	if rep.Body != "" {
		io.WriteString(w, rep.Body)
		return
	}
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": rep.Content}}},
		"usage": map[string]any{"prompt_tokens": rep.PromptTokens, "completion_tokens": rep.CompletionTokens,
			"total_tokens": rep.PromptTokens + rep.CompletionTokens},
	}
	json.NewEncoder(w).Encode(resp)
}

var blockRE = regexp.MustCompile(`(?s)<trajectory id="([^"]+)">\n(.*?)\n</trajectory>`)

// Blocks returns the trajectory blocks of a RULER user message, id → text,
// and the ids in order.
func Blocks(user string) (ids []string, text map[string]string) {
	text = map[string]string{}
	for _, m := range blockRE.FindAllStringSubmatch(user, -1) {
		ids = append(ids, m[1])
		text[m[1]] = m[2]
	}
	return ids, text
}

// Answer renders a judge answer giving ids[i] the score scores[i].
func Answer(ids []string, scores []float64) string {
	type score struct {
		ID          string  `json:"trajectory_id"`
		Explanation string  `json:"explanation"`
		Score       float64 `json:"score"`
	}
	a := struct {
		Scores []score `json:"scores"`
	}{}
	for i, id := range ids {
		a.Scores = append(a.Scores, score{ID: id, Explanation: fmt.Sprintf("trajectory %s scored %g", id, scores[i]), Score: scores[i]})
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// KeywordJudge is a script that answers every request correctly: a
// trajectory block containing keyword scores 1, any other 0.25. Tokens:
// one prompt token per 4 bytes of the messages, 10 per score answered.
func KeywordJudge(keyword string) func(int, Request) Reply {
	return func(_ int, req Request) Reply {
		ids, text := Blocks(req.User())
		scores := make([]float64, len(ids))
		for i, id := range ids {
			scores[i] = 0.25
			if strings.Contains(text[id], keyword) {
				scores[i] = 1
			}
		}
		return Reply{Content: Answer(ids, scores), PromptTokens: int64(len(req.System())+len(req.User())) / 4, CompletionTokens: int64(10 * len(ids))}
	}
}

// IDsFromSchema returns the trajectory ids the request's json_schema
// asks to be scored (the required keys of "scores"), nil without one.
func (r Request) IDsFromSchema() []string {
	var rf struct {
		JSONSchema struct {
			Schema struct {
				Properties struct {
					Scores struct {
						Required []string `json:"required"`
					} `json:"scores"`
				} `json:"properties"`
			} `json:"schema"`
		} `json:"json_schema"`
	}
	json.Unmarshal(r.ResponseFormat, &rf)
	return rf.JSONSchema.Schema.Properties.Scores.Required
}
