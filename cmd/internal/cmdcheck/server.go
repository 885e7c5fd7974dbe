package cmdcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"syscall"
	"time"
)

// listening matches the line hone-serve logs once bound, e.g.
// `level=INFO msg="hone-serve listening" addr=127.0.0.1:41234`.
var listening = regexp.MustCompile(`listening.*addr=(\S+)`)

// Server is a hone-serve process started by Start.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // its exit, once done is closed
}

// Start runs hone-serve (bin) with args (which should hold --port 0) as a
// process, with env added to this process's environment, its stderr
// copied to logPath, and returns once it logs the
// address it listens on. A process that exits or logs no address within
// timeout is an error (the process is killed).
func Start(ctx context.Context, bin, logPath string, timeout time.Duration, env []string, args ...string) (*Server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(log, stderr) // a line over the scanner's limit: the rest as it is
	}()
	go func() {
		<-copied
		s.err = cmd.Wait()
		log.Close()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.Addr = a
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s %v exited before listening: %v (log in %s)", bin, args, s.err, logPath)
	case <-time.After(timeout):
	case <-ctx.Done():
	}
	cmd.Process.Kill()
	<-s.done
	return nil, fmt.Errorf("%s %v logged no listening address within %v (log in %s)", bin, args, timeout, logPath)
}

// Stop sends SIGTERM and waits up to timeout for the process to exit; it
// must exit 0 (hone-serve drains and exits 0 after SIGTERM). After the
// timeout the process is killed and that is an error.
func (s *Server) Stop(timeout time.Duration) error {
	select {
	case <-s.done:
		return fmt.Errorf("hone-serve had already exited: %v", s.err)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.done:
		if s.err != nil {
			return fmt.Errorf("hone-serve after SIGTERM: %w, want exit status 0", s.err)
		}
		return nil
	case <-time.After(timeout):
		s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("hone-serve did not exit within %v of SIGTERM; killed", timeout)
	}
}

// Answer is one greedy chat completion: the model the server says
// answered, the text, the completion's token ids and their logprobs.
type Answer struct {
	Model        string
	Content      string
	FinishReason string
	TokenIDs     []int32
	Logprobs     []float64
}

// Chat asks the server for one greedy chat completion of prompt by model
// (temperature 0, maxTokens tokens at most, ignoring the end of turn so
// that every answer has maxTokens tokens), with the token ids and
// logprobs.
func (s *Server) Chat(ctx context.Context, model, prompt string, maxTokens int) (Answer, error) {
	body, err := json.Marshal(map[string]any{
		"model":      model,
		"messages":   []map[string]string{{"role": "user", "content": prompt}},
		"max_tokens": maxTokens, "temperature": 0, "logprobs": true, "return_token_ids": true, "ignore_eos": true,
	})
	if err != nil {
		return Answer{}, err
	}
	var resp struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string  `json:"finish_reason"`
			TokenIDs     []int32 `json:"token_ids"`
			Logprobs     struct {
				Content []struct {
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := s.do(ctx, http.MethodPost, "/v1/chat/completions", body, &resp); err != nil {
		return Answer{}, err
	}
	if len(resp.Choices) != 1 {
		return Answer{}, fmt.Errorf("%d choices, want 1", len(resp.Choices))
	}
	c := resp.Choices[0]
	a := Answer{Model: resp.Model, Content: c.Message.Content, FinishReason: c.FinishReason, TokenIDs: c.TokenIDs}
	for _, lp := range c.Logprobs.Content {
		a.Logprobs = append(a.Logprobs, lp.Logprob)
	}
	if len(a.TokenIDs) == 0 || len(a.Logprobs) != len(a.TokenIDs) {
		return a, fmt.Errorf("answer of %s has %d token ids and %d logprobs", model, len(a.TokenIDs), len(a.Logprobs))
	}
	return a, nil
}

// Models lists the model names the server serves.
func (s *Server) Models(ctx context.Context) ([]string, error) {
	var resp struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := s.do(ctx, http.MethodGet, "/v1/models", nil, &resp); err != nil {
		return nil, err
	}
	var ids []string
	for _, d := range resp.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

// WaitModel polls the model list every 50 ms until it holds name, or
// timeout passes.
func (s *Server) WaitModel(ctx context.Context, name string, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for {
		ids, err := s.Models(ctx)
		if err == nil && slices.Contains(ids, name) {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("the server at %s did not list %q within %v (models %v, %v)", s.Addr, name, timeout, ids, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return fmt.Errorf("hone-serve exited: %v", s.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.Addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w: %s", method, path, err, b)
	}
	return nil
}

// SameAnswer checks that got has want's tokens, text and finish reason,
// and logprobs within tol of want's (absolute). It returns the largest
// logprob difference.
func SameAnswer(want, got Answer, tol float64) (float64, error) {
	if !slices.Equal(got.TokenIDs, want.TokenIDs) || got.Content != want.Content || got.FinishReason != want.FinishReason {
		return 0, fmt.Errorf("answered tokens %v (%q, %s), want %v (%q, %s)", got.TokenIDs, got.Content, got.FinishReason,
			want.TokenIDs, want.Content, want.FinishReason)
	}
	worst := 0.0
	for i := range want.Logprobs {
		d := abs(got.Logprobs[i] - want.Logprobs[i])
		if d > tol || d != d {
			return d, fmt.Errorf("token %d: logprob %v, want %v within %g", i, got.Logprobs[i], want.Logprobs[i], tol)
		}
		worst = max(worst, d)
	}
	return worst, nil
}

// LogprobShift is the largest difference between two answers' logprobs of
// the same tokens: how much an adapter moved the model. Answers of
// different tokens are an error.
func LogprobShift(a, b Answer) (float64, error) {
	if !slices.Equal(a.TokenIDs, b.TokenIDs) {
		return 0, errors.New("the answers have different tokens")
	}
	shift := 0.0
	for i := range a.Logprobs {
		shift = max(shift, abs(a.Logprobs[i]-b.Logprobs[i]))
	}
	return shift, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
