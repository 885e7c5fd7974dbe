package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/trajectory"
)

// maxHeldEvent bounds the bytes of one event the proxy holds back until
// the event is complete; a longer one is passed on as it comes.
const maxHeldEvent = 1 << 20

// streamChat sends a streamed chat completion request upstream and relays
// the response to the agent, each server-sent event written and flushed as
// soon as it is complete, as upstream wrote it but for what add says the
// proxy added (taken out of each event), while it assembles choice 0's
// chunks into the assistant turn. It calls done exactly once with the turn
// — when the event carrying the finish reason, upstream's error event or
// [DONE] has arrived, before that event goes to the agent, so that an
// agent which reads the whole stream (or gives up at the error) and then
// posts its reward always finds the turn recorded — or, when the stream
// ends without one, with what arrived and why (the agent went away,
// upstream broke off, sent an error or an event that is not JSON, or more
// event data than MaxResponseBytes). When upstream does not answer 200 the
// agent gets upstream's answer as is and done is not called: nothing was
// generated, as with a refused non-streamed request.
func (p *Proxy) streamChat(w http.ResponseWriter, r *http.Request, body []byte, add added, done func(trajectory.Message, error)) {
	resp, ok := p.send(w, r, body)
	if !ok {
		return
	}
	defer resp.Body.Close()
	copyHeader(w, resp)
	w.WriteHeader(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		io.Copy(w, resp.Body)
		return
	}
	s := &sseRelay{w: w, rc: http.NewResponseController(w), limit: p.o.MaxResponseBytes, add: add, done: done}
	s.rc.Flush()
	readErr := s.run(resp.Body)
	switch {
	case s.acc.err != nil:
		s.record(s.acc.err)
	case s.writeErr != nil || r.Context().Err() != nil:
		cause := s.writeErr
		if cause == nil {
			cause = r.Context().Err()
		}
		s.record(fmt.Errorf("agent disconnected mid-stream: %w", cause))
	case readErr != nil:
		s.record(fmt.Errorf("upstream stream broken: %w", readErr))
	default:
		s.record(errors.New("upstream closed the stream before the turn finished"))
	}
}

// sseRelay passes upstream's server-sent events to the agent as each one
// completes, and hands their data to the accumulator. What it holds is
// bounded whatever upstream sends: one read, at most maxHeldEvent raw bytes
// of the event in progress, and limit bytes of event data over the stream.
type sseRelay struct {
	w     io.Writer
	rc    *http.ResponseController
	acc   accumulator
	limit int64
	add   added // what the agent gets without
	done  func(trajectory.Message, error)

	held     []byte // the raw bytes of the event in progress
	data     []byte // its data lines
	kept     int64  // data bytes handed to acc so far
	over     bool   // past limit: no more data is kept
	recorded bool   // done was called
	cut      bool   // part of the event in progress went out as it came
	writeErr error  // the agent is gone
}

// run relays body until it ends or the agent goes away, and returns
// upstream's read error, if any.
func (s *sseRelay) run(body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	// A line arrives in pieces when it is longer than br's buffer, so the
	// field name is looked at on a line's first piece only.
	atStart, isData, lineOff := true, false, 0
	for {
		frag, err := br.ReadSlice('\n')
		ended := !errors.Is(err, bufio.ErrBufferFull) // frag ends its line, at a newline or at the end of body
		s.held = append(s.held, frag...)
		if atStart {
			isData = bytes.HasPrefix(frag, []byte("data:"))
			if isData {
				if len(s.data) > 0 {
					s.keep([]byte{'\n'})
				}
				lineOff = len(s.data)
				frag = bytes.TrimPrefix(frag[len("data:"):], []byte(" "))
			}
		}
		switch {
		case atStart && ended && !isData && len(frag) > 0 && len(bytes.TrimRight(frag, "\r\n")) == 0:
			// A blank line ends the event ("data:" alone, whose value is
			// empty, only adds an empty line to its data).
			s.take()
			s.passEvent()
		case isData:
			s.keep(frag)
			if ended && !s.over {
				s.data = s.data[:lineOff+len(bytes.TrimRight(s.data[lineOff:], "\r\n"))]
			}
		}
		atStart = ended
		if len(s.held) > maxHeldEvent {
			s.pass(false)
		}
		if err != nil && ended {
			if len(s.data) > 0 { // the last event lacked its blank line
				s.take()
			}
			s.passEvent()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if s.writeErr != nil {
			return nil // stop reading (closing the body cancels upstream)
		}
	}
}

// passEvent writes the rest of the event in progress to the agent, with
// what the proxy added taken out when the agent gets the event whole (one
// over maxHeldEvent went out as it came).
func (s *sseRelay) passEvent() {
	// Past the limit the stream is only relayed, as a non-streamed answer
	// over it is: what the proxy holds and allocates stays bounded.
	if !s.cut && !s.over {
		s.held = s.add.stripEvent(s.held)
	}
	s.cut = false
	s.pass(true)
}

// pass writes the held bytes to the agent.
func (s *sseRelay) pass(flush bool) {
	if !flush && len(s.held) > 0 {
		s.cut = true
	}
	if s.writeErr == nil && len(s.held) > 0 {
		_, s.writeErr = s.w.Write(s.held)
	}
	if s.writeErr == nil && flush {
		s.writeErr = s.rc.Flush()
	}
	s.held = s.held[:0]
}

// keep adds b to the event's data, unless that passes the limit: then the
// turn is recorded as far as it arrived, with the error, and the rest of
// the stream is only relayed.
func (s *sseRelay) keep(b []byte) {
	if s.over {
		return
	}
	if s.kept+int64(len(s.data)+len(b)) > s.limit {
		s.over, s.data = true, nil
		s.acc.fail(fmt.Errorf("upstream's streamed answer is larger than %d bytes (hone-collect proxy --max-response-bytes): the agent got it all, the turn is recorded as far as that", s.limit))
		s.record(s.acc.err)
		return
	}
	s.data = append(s.data, b...)
}

// take hands the complete event's data to the accumulator.
func (s *sseRelay) take() {
	if !s.over {
		s.kept += int64(len(s.data))
		s.acc.event(s.data)
	}
	s.data = s.data[:0]
	// The turn is whole once its finish reason arrived: agents may stop
	// reading there, or at [DONE], before upstream's body ends. An error
	// event ends it too: the SDKs raise on it, and the agent may post its
	// reward (with its own error) before upstream closes the stream.
	switch {
	case s.acc.finish != "" || s.acc.errorEvent:
		s.record(s.acc.err)
	case s.acc.done: // [DONE] without a finish reason: the turn ends unfinished
		err := s.acc.err
		if err == nil {
			err = errors.New("upstream sent [DONE] before the turn finished")
		}
		s.record(err)
	}
}

// record calls done with the turn as assembled, once.
func (s *sseRelay) record(err error) {
	if s.recorded {
		return
	}
	s.recorded = true
	turn, terr := s.acc.turn()
	if err == nil {
		err = terr
	}
	s.done(turn, err)
}

// accumulator assembles an assistant turn from chat completion chunks:
// the message from choice 0's deltas (chatmsg.Builder), the last finish
// reason, and the token ids and logprobs every chunk carries.
type accumulator struct {
	model      string
	msg        chatmsg.Builder
	finish     string
	tokenIDs   []int32
	logprobs   []float32
	lpTokens   []string // the logprobs' tokens, for trajectory.SampledIDs
	done       bool     // [DONE] seen
	errorEvent bool     // upstream sent an error event
	err        error    // the first error event or unparseable event
}

// streamChunk is the part of a chat.completion.chunk the proxy records.
// Upstream errors mid-stream come as an event with an error object.
type streamChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int           `json:"index"`
		Delta        chatmsg.Delta `json:"delta"`
		FinishReason *string       `json:"finish_reason"`
		TokenIDs     []int32       `json:"token_ids"`
		Logprobs     *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float32 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (a *accumulator) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// event takes one server-sent event's data.
func (a *accumulator) event(data []byte) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return // a comment or an event without data
	}
	if string(data) == "[DONE]" {
		a.done = true
		return
	}
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		a.fail(fmt.Errorf("upstream sent an event that is not a JSON chunk: %q", clip(data, 80)))
		return
	}
	if c.Error != nil {
		a.errorEvent = true
		a.fail(fmt.Errorf("upstream error mid-stream: %s", c.Error.Message))
		return
	}
	if c.Model != "" {
		a.model = c.Model
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // the proxy records choice 0, as for non-streamed requests
		}
		if err := a.msg.Add(ch.Delta); err != nil {
			a.fail(fmt.Errorf("upstream sent %w", err))
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
		a.tokenIDs = append(a.tokenIDs, ch.TokenIDs...)
		if ch.Logprobs != nil {
			for _, lp := range ch.Logprobs.Content {
				a.logprobs = append(a.logprobs, lp.Logprob)
				a.lpTokens = append(a.lpTokens, lp.Token)
			}
		}
	}
}

// turn is the assembled assistant message, converted the way a
// non-streamed response's message is (parseTurn).
func (a *accumulator) turn() (trajectory.Message, error) {
	c := a.msg.Message()
	c.Role = "assistant"
	m, err := trajectory.FromChat(c)
	if err != nil {
		// A call that never got its name (a garbled or odd stream) cannot
		// be written, and would make the whole group unwritable: the turn
		// keeps the calls that can be, and err says what went wrong.
		m.ToolCalls = slices.DeleteFunc(slices.Clone(m.ToolCalls), func(tc chatmsg.ToolCall) bool { return tc.Name == "" })
	}
	m.Role, m.Trainable, m.TokenIDs, m.Logprobs, m.FinishReason, m.AnswerModel = "assistant", true, trajectory.SampledIDs(a.tokenIDs, a.lpTokens), a.logprobs, a.finish, a.model
	return m, err
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
