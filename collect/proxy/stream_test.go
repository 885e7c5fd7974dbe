package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/gobuild"
	"github.com/hone-rl/hone/internal/waitfor"
)

// tap records every response body the proxy reads from upstream, byte
// for byte, as an http.RoundTripper in the proxy's HTTP client: what
// hone-serve sent, to compare with what the agent received.
type tap struct {
	mu     sync.Mutex
	bodies [][]byte
}

// client is the HTTP client the proxy under test uses to reach upstream.
func (t *tap) client() *http.Client { return &http.Client{Transport: t} }

func (t *tap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &tapBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

// tapBody keeps what was read and hands it to the tap once, at EOF or
// Close, whichever comes first.
type tapBody struct {
	io.ReadCloser
	t    *tap
	buf  bytes.Buffer
	once sync.Once
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if err != nil {
		b.keep()
	}
	return n, err
}

func (b *tapBody) Close() error {
	b.keep()
	return b.ReadCloser.Close()
}

func (b *tapBody) keep() {
	b.once.Do(func() {
		b.t.mu.Lock()
		b.t.bodies = append(b.t.bodies, b.buf.Bytes())
		b.t.mu.Unlock()
	})
}

// sent returns the bodies of the first n responses, waiting for handlers
// still returning (the agent may read the last byte first).
func (t *tap) sent(n int) [][]byte {
	waitfor.Within(10*time.Second, func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		return len(t.bodies) >= n
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]byte(nil), t.bodies...)
}

// serveBin is the hone-serve binary TestMain builds: collect may not import
// serve (policy_test.go), so the real server runs as a process, as users
// run it.
var serveBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proxy-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serveBin = filepath.Join(dir, "hone-serve")
	if err := gobuild.Commands(context.Background(), dir, "../../cmd/hone-serve"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServe runs the real hone-serve as a process on the tiny test model
// with Qwen2.5's chat template (Hermes tool calls); the proxy under test
// reaches it through the returned tap's client.
func startServe(t *testing.T) (string, *tap) {
	t.Helper()
	dir := openaitest.TinyQwenModel(t, "../..")
	// Prefix caching off: the tests send one conversation twice and want
	// the two recordings equal to the bit, but the second would start from
	// the first's KV rows, and the CPU GEMM over fewer rows rounds the
	// logprobs differently in their last digits.
	addr := openaitest.StartProcess(t, serveBin, "--model", dir, "--port", "0", "--threads", "1", "--no-enable-prefix-caching")
	return "http://" + addr + "/v1", &tap{}
}

// teeBodies is client middleware that keeps every response body the agent
// reads, byte for byte.
func teeBodies(mu *sync.Mutex, into *[]*bytes.Buffer) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err != nil {
			return resp, err
		}
		b := &bytes.Buffer{}
		mu.Lock()
		*into = append(*into, b)
		mu.Unlock()
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, b), resp.Body}
		return resp, nil
	}
}

// serveAgent is a tool-using agent written with the official Go client:
// the model must call get_weather first (named tool_choice), is given the
// result, then answers. streamed picks NewStreaming with the SDK's
// accumulator over New. It returns the assistant messages it kept and the
// raw response bodies it read.
func serveAgent(t *testing.T, base, tid string, streamed bool) ([]openai.ChatCompletionMessage, [][]byte) {
	t.Helper()
	var mu sync.Mutex
	var bodies []*bytes.Buffer
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("none"), option.WithMaxRetries(0),
		option.WithHeader("X-Hone-Trajectory", tid), option.WithHeader("X-Hone-Group", tid), option.WithMiddleware(teeBodies(&mu, &bodies)))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:       "tiny",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("weather in Oslo?")},
		MaxTokens:   openai.Int(120),
		Seed:        openai.Int(11),
		Temperature: openai.Float(1),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
				"city": map[string]any{"type": "string", "maxLength": 6}, "days": map[string]any{"enum": []int{1, 2, 3}}}},
		})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}},
	}
	if streamed {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	var kept []openai.ChatCompletionMessage
	for turn := 0; turn < 2; turn++ {
		var msg openai.ChatCompletionMessage
		if streamed {
			st := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if acc.Usage.TotalTokens == 0 {
				t.Errorf("turn %d: stream_options.include_usage was dropped: no usage chunk", turn)
			}
			msg = acc.Choices[0].Message
		} else {
			resp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			msg = resp.Choices[0].Message
		}
		kept = append(kept, msg)
		params.Messages = append(params.Messages, msg.ToParam())
		for _, c := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage("rainy, 7°C", c.ID))
		}
		params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	}
	out := make([][]byte, len(bodies))
	for i, b := range bodies {
		out[i] = b.Bytes()
	}
	return kept, out
}

// readGroups closes the groups and reads every flushed file.
func readGroups(t *testing.T, srvURL, out string, gids ...string) map[string]trajectory.Trajectory {
	t.Helper()
	for _, g := range gids {
		resp, err := http.Post(srvURL+"/hone/groups/"+g+"/close", "application/json", nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("close %s: %v %v", g, err, resp)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]trajectory.Trajectory{}
	for _, g := range gs {
		for _, tr := range g.Trajectories {
			byID[tr.ID] = tr
		}
	}
	return byID
}

// TestProxyStreamMatchesPlain runs one seeded tool-using conversation
// against the real hone-serve twice through the proxy, once with
// stream=false and once streamed, and checks that the agent read exactly
// the bytes hone-serve sent and that both recorded trajectories are equal
// but for ids, timestamps and latency.
func TestProxyStreamMatchesPlain(t *testing.T) {
	base, tp := startServe(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: base, OutDir: out, Run: "px", HTTPClient: tp.client()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	plainMsgs, _ := serveAgent(t, srv.URL+"/v1", "plain", false)
	streamMsgs, seen := serveAgent(t, srv.URL+"/v1", "streamed", true)
	sent := tp.sent(4)[2:]
	if len(seen) != 2 || len(sent) != 2 {
		t.Fatalf("agent read %d streamed bodies, hone-serve sent %d", len(seen), len(sent))
	}
	for i := range seen {
		if !bytes.HasPrefix(sent[i], []byte("data: ")) || !bytes.HasSuffix(sent[i], []byte("data: [DONE]\n\n")) {
			t.Fatalf("response %d is not a complete event stream: %.200q", i, sent[i])
		}
		// The agent did not ask for logprobs or token ids: it reads
		// hone-serve's events without them.
		if got, want := answerValues(t, seen[i]), withoutAdded(t, sent[i], false, false); !reflect.DeepEqual(got, want) {
			t.Errorf("streamed response %d differs:\nagent    %q\nupstream %q", i, seen[i], sent[i])
		}
	}
	for i := range plainMsgs {
		if plainMsgs[i].Content != streamMsgs[i].Content || len(plainMsgs[i].ToolCalls) != len(streamMsgs[i].ToolCalls) {
			t.Fatalf("turn %d: the seeded conversation differs between plain %+v and streamed %+v", i, plainMsgs[i], streamMsgs[i])
		}
	}
	if len(plainMsgs[0].ToolCalls) != 1 || plainMsgs[0].ToolCalls[0].Function.Name != "get_weather" || plainMsgs[1].Content == "" {
		t.Fatalf("conversation %+v: want a get_weather call, then text", plainMsgs)
	}

	for _, tid := range []string{"plain", "streamed"} {
		resp, err := http.Post(srv.URL+"/hone/trajectories/"+tid+"/reward", "application/json", strings.NewReader(`{"reward":0.5}`))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reward %s: %v %v", tid, err, resp)
		}
	}
	trs := readGroups(t, srv.URL, out, "plain", "streamed")
	plain, streamed := trs["plain"], trs["streamed"]
	if len(streamed.Messages) != 5 || streamed.Error != "" || streamed.Adapter != "tiny" {
		t.Fatalf("streamed trajectory: %d messages, error %q, adapter %q", len(streamed.Messages), streamed.Error, streamed.Adapter)
	}
	for _, k := range []int{2, 4} {
		m := streamed.Messages[k]
		if !m.Trainable || len(m.TokenIDs) == 0 || len(m.Logprobs) != len(m.TokenIDs) || m.FinishReason == "" || m.AnswerModel != "tiny" || m.Latency <= 0 {
			t.Errorf("streamed turn %d: %+v", k, m)
		}
	}
	if c := streamed.Messages[2].ToolCalls; len(c) != 1 || c[0].ID == "" || c[0].Type != "function" || !json.Valid([]byte(c[0].Arguments)) {
		t.Errorf("streamed tool call %+v", c)
	}
	// The call ids are drawn per response: the agent kept each run's own.
	if plain.Messages[2].ToolCalls[0].ID == streamed.Messages[2].ToolCalls[0].ID {
		t.Fatal("both runs share a call id; the comparison below would not notice a swap")
	}
	if a, b := norm(plain), norm(streamed); !reflect.DeepEqual(a, b) {
		t.Errorf("recorded trajectories differ:\nplain    %+v\nstreamed %+v", a, b)
	}
	if plain.Messages[3].ToolCallID != plain.Messages[2].ToolCalls[0].ID || streamed.Messages[3].ToolCallID != streamed.Messages[2].ToolCalls[0].ID {
		t.Error("tool results do not answer their calls")
	}
}

// norm clears what differs between two recordings of one seeded
// conversation: ids, call ids, timestamps and latencies.
func norm(tr trajectory.Trajectory) trajectory.Trajectory {
	tr.ID, tr.GroupID, tr.CreatedAt, tr.StartedAt, tr.FinishedAt = "", "", time.Time{}, time.Time{}, time.Time{}
	tr.Messages = append([]trajectory.Message(nil), tr.Messages...)
	for i := range tr.Messages {
		tr.Messages[i].Latency = 0
		tr.Messages[i].ToolCallID = ""
		calls := append([]trajectory.ToolCall(nil), tr.Messages[i].ToolCalls...)
		for j := range calls {
			calls[j].ID = ""
		}
		tr.Messages[i].ToolCalls = calls
	}
	return tr
}

// TestProxyNodeAgent: an agent written with the official openai Node
// client, once with create() and once with stream() (stream: true),
// through the proxy to the real hone-serve. The agent reads hone-serve's
// bytes unchanged, the recorded conversation is the one the agent kept,
// and the streamed recording equals the non-streamed one.
func TestProxyNodeAgent(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		needTool(t, "node is not installed")
	}
	if _, err := os.Stat("testdata/node/node_modules/openai/package.json"); err != nil {
		needTool(t, "run `npm ci` in collect/proxy/testdata/node")
	}
	base, tp := startServe(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: base, OutDir: out, Run: "px", HTTPClient: tp.client()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	n := 0
	for _, mode := range []string{"plain", "stream"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, node, "agent.mjs", srv.URL+"/v1", mode, mode)
		cmd.Dir = "testdata/node"
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("%s agent: %v\n%s", mode, err, stderr.String())
		}
		var seen struct {
			Messages []chatmsg.Message
			Bodies   [][]byte // base64 in JSON
		}
		if err := json.Unmarshal(stdout, &seen); err != nil {
			t.Fatalf("%s agent output: %v", mode, err)
		}
		n += len(seen.Bodies)
		sent := tp.sent(n)[n-len(seen.Bodies):]
		for i := range seen.Bodies {
			if got, want := answerValues(t, seen.Bodies[i]), withoutAdded(t, sent[i], false, false); !reflect.DeepEqual(got, want) {
				t.Errorf("%s response %d differs:\nagent    %q\nupstream %q", mode, i, seen.Bodies[i], sent[i])
			}
		}
		if mode == "stream" && (len(sent) != 2 || !bytes.HasSuffix(sent[1], []byte("data: [DONE]\n\n"))) {
			t.Fatalf("not streamed: %d responses", len(sent))
		}
		if resp, err := http.Post(srv.URL+"/hone/trajectories/"+mode+"/reward", "application/json", strings.NewReader(`{"reward":1}`)); err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reward %s: %v %v", mode, err, resp)
		}
		tr := readGroups(t, srv.URL, out, mode)[mode]
		if len(tr.Messages) != len(seen.Messages) || len(tr.Messages) != 5 {
			t.Fatalf("%s: recorded %d messages, the agent kept %d", mode, len(tr.Messages), len(seen.Messages))
		}
		for i, w := range seen.Messages {
			want, err := trajectory.FromChat(w)
			if err != nil {
				t.Fatal(err)
			}
			got := tr.Messages[i]
			if got.Role != want.Role || got.Content != want.Content || got.ToolCallID != want.ToolCallID || !reflect.DeepEqual(got.ToolCalls, want.ToolCalls) {
				t.Errorf("%s message %d: recorded %+v, agent kept %+v", mode, i, got, want)
			}
			if got.Role == "assistant" && (!got.Trainable || len(got.TokenIDs) == 0 || len(got.Logprobs) != len(got.TokenIDs)) {
				t.Errorf("%s message %d: no tokens recorded: %+v", mode, i, got)
			}
		}
		if len(tr.Messages[2].ToolCalls) != 1 {
			t.Errorf("%s: no tool call: %+v", mode, tr.Messages[2])
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil || len(gs) != 2 {
		t.Fatalf("%d groups: %v", len(gs), err)
	}
	if a, b := norm(gs[0].Trajectories[0]), norm(gs[1].Trajectories[0]); !reflect.DeepEqual(a, b) {
		t.Errorf("Node agent: streamed recording differs from plain:\n%+v\n%+v", a, b)
	}
}

// needTool skips a test outside CI and fails it under CI=true.
func needTool(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s", msg)
	}
	t.Skip(msg)
}

// event writes one server-sent event and flushes it.
func event(w http.ResponseWriter, data string) {
	io.WriteString(w, "data: "+data+"\n\n")
	http.NewResponseController(w).Flush()
}

// chunk is a vLLM-style chat.completion.chunk for choice 0 with one token.
func chunk(content string, id int32, finish string) string {
	ch := map[string]any{
		"index": 0, "delta": map[string]any{"content": content}, "finish_reason": nil, "token_ids": []int32{id},
		"logprobs": map[string]any{"content": []any{map[string]any{"token": content, "logprob": -0.5, "top_logprobs": []any{}}}},
	}
	if finish != "" {
		ch["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "agent@7", "choices": []any{ch}})
	return string(b)
}

// toolDeltas stream two tool calls the way OpenAI and vLLM do: id and
// name first, arguments in pieces, calls told apart by index.
var toolDeltas = []string{
	`{"model":"agent@7","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}],"prompt_token_ids":[1,2,3]}`,
	`{"model":"agent@7","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"weather","arguments":""}}]},"token_ids":[7],"logprobs":{"content":[{"token":"x","logprob":-1}]},"finish_reason":null}]}`,
	`{"model":"agent@7","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"token_ids":[8],"logprobs":{"content":[{"token":"x","logprob":-2}]},"finish_reason":null}]}`,
	`{"model":"agent@7","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"time","arguments":"{}"}}]},"token_ids":[9],"logprobs":{"content":[{"token":"x","logprob":-3}]},"finish_reason":null}]}`,
	`{"model":"agent@7","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]},"token_ids":[10],"logprobs":{"content":[{"token":"x","logprob":-4}]},"finish_reason":"tool_calls"}]}`,
	`{"model":"agent@7","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	`[DONE]`,
}

// TestProxyStreamFaults: a stream cut by upstream, garbage or an error
// event from upstream, a stream that just stops, and an agent that goes
// away mid-stream each leave a recorded trajectory with its error and the
// partial turn; the agent still reads upstream's bytes unchanged; the
// proxy keeps serving; streamed n > 1 is refused in OpenAI's error shape.
func TestProxyStreamFaults(t *testing.T) {
	firstSent := make(chan struct{})
	upstreamGone := make(chan struct{})
	var mu sync.Mutex
	var asked []map[string]any
	// The scenario travels in the query string, which the proxy forwards.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		asked = append(asked, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if r.URL.Query().Get("mode") == "tools" {
			for _, e := range toolDeltas {
				event(w, e)
			}
			return
		}
		event(w, chunk("Hel", 5, ""))
		switch r.URL.Query().Get("mode") {
		case "cut":
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		case "garbage":
			event(w, `{"choices": [ oops`)
			event(w, chunk("lo", 6, "stop"))
			event(w, "[DONE]")
		case "error":
			event(w, `{"error":{"message":"engine failed","type":"server_error"}}`)
			event(w, "[DONE]")
		case "stop": // a clean end, without finish_reason or [DONE]
		case "hang":
			close(firstSent)
			<-r.Context().Done()
			close(upstreamGone)
		default:
			io.WriteString(w, ": a comment line\r\n\r\n") // passes through, records nothing
			event(w, chunk("lo", 6, "stop"))
			event(w, "[DONE]")
		}
	}))
	defer up.Close()
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	post := func(ctx context.Context, tid, mode, extra string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions?mode="+mode,
			// Asking for what the proxy adds, the agent reads upstream's
			// events as they are.
			strings.NewReader(`{"model":"agent","stream":true,"logprobs":true,"return_token_ids":true`+extra+`,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hone-Trajectory", tid)
		return http.DefaultClient.Do(req)
	}
	read := func(tid, mode string) string {
		resp, err := post(context.Background(), tid, mode, "")
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // a cut stream ends in an error here
		return string(b)
	}
	first := "data: " + chunk("Hel", 5, "") + "\n\n"
	if got := read("cut", "cut"); got != first {
		t.Errorf("cut: agent read %q", got)
	}
	if got, want := read("garbage", "garbage"), first+"data: {\"choices\": [ oops\n\n"+"data: "+chunk("lo", 6, "stop")+"\n\n"+"data: [DONE]\n\n"; got != want {
		t.Errorf("garbage: agent read %q, upstream sent %q", got, want)
	}
	read("error", "error")
	read("stop", "stop")
	if got, want := read("ok", "ok"), first+": a comment line\r\n\r\n"+"data: "+chunk("lo", 6, "stop")+"\n\n"+"data: [DONE]\n\n"; got != want {
		t.Errorf("ok: agent read %q, upstream sent %q", got, want)
	}

	// The agent reads the first event while upstream still holds the
	// stream open (so the proxy flushed it), then goes away.
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(ctx, "gone", "hang", `,"stream_options":{"include_usage":true}`)
	if err != nil {
		t.Fatal(err)
	}
	<-firstSent
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if line != "data: "+chunk("Hel", 5, "")+"\n" {
			t.Fatalf("first event: %q", line)
		}
	case <-time.After(10 * time.Second):
		cancel() // lets upstream's handler return, so the servers can close
		t.Fatal("the proxy held back the first event while upstream kept the stream open")
	}
	cancel()
	resp.Body.Close()
	select {
	case <-upstreamGone:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not cancel the upstream request when the agent left")
	}
	// The turn is recorded once the handler returns: wait until the
	// trajectory exists.
	waitfor.Until(t, 10*time.Second, "the abandoned stream's trajectory to be recorded", func() bool {
		resp, err := http.Post(srv.URL+"/hone/trajectories/gone/reward", "application/json", strings.NewReader(`{"reward":0}`))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusNoContent
	})

	// Streamed n > 1 is refused before anything goes upstream.
	mu.Lock()
	before := len(asked)
	mu.Unlock()
	resp, err = post(context.Background(), "n2", "ok", `,"n":2`)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error struct {
			Message, Type string
			Param         *string
		}
	}
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "n" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "n > 1") {
		t.Errorf("streamed n=2: %s %+v", resp.Status, e)
	}
	mu.Lock()
	if len(asked) != before {
		t.Error("streamed n=2 was forwarded")
	}
	for _, a := range asked {
		if a["logprobs"] != true || a["return_token_ids"] != true || a["stream"] != true {
			t.Errorf("upstream request %v lacks logprobs, return_token_ids or stream", a)
		}
	}
	if so, _ := asked[len(asked)-1]["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options not kept: %v", asked[len(asked)-1])
	}
	mu.Unlock()

	trs := readGroups(t, srv.URL, out, "cut", "garbage", "error", "stop", "ok", "gone")
	for tid, want := range map[string]string{
		"cut":     "turn 1: upstream stream broken",
		"garbage": "turn 1: upstream sent an event that is not a JSON chunk",
		"error":   "turn 1: upstream error mid-stream: engine failed",
		"stop":    "turn 1: upstream closed the stream before the turn finished",
		"gone":    "turn 1: agent disconnected mid-stream",
		"ok":      "",
	} {
		tr := trs[tid]
		if want == "" && tr.Error != "not closed" || want != "" && !strings.HasPrefix(tr.Error, want) {
			t.Errorf("%s: error %q, want %q", tid, tr.Error, want)
		}
		if len(tr.Messages) != 2 {
			t.Fatalf("%s: %d messages", tid, len(tr.Messages))
		}
		m := tr.Messages[1]
		wantText, wantIDs, wantFinish := "Hel", []int32{5}, ""
		if tid == "ok" || tid == "garbage" {
			wantText, wantIDs, wantFinish = "Hello", []int32{5, 6}, "stop"
		}
		if m.Role != "assistant" || m.Content != wantText || !reflect.DeepEqual(m.TokenIDs, wantIDs) || len(m.Logprobs) != len(wantIDs) || m.Logprobs[0] != -0.5 || m.FinishReason != wantFinish || m.AnswerModel != "agent@7" {
			t.Errorf("%s: partial turn %+v", tid, m)
		}
	}
	// Tool calls are assembled by index from their deltas.
	read("tools", "tools")
	tr := readGroups(t, srv.URL, out, "tools")["tools"]
	want := []trajectory.ToolCall{{ID: "call_a", Type: "function", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_b", Type: "function", Name: "time", Arguments: "{}"}}
	if m := tr.Messages[1]; !reflect.DeepEqual(m.ToolCalls, want) || m.Content != "" || m.FinishReason != "tool_calls" ||
		!reflect.DeepEqual(m.TokenIDs, []int32{7, 8, 9, 10}) || !reflect.DeepEqual(m.Logprobs, []float32{-1, -2, -3, -4}) || tr.Adapter != "agent@7" || tr.Step != 7 {
		t.Errorf("tool calls: %+v", m)
	}

	// An agent that carries on after a broken stream gets its next turn
	// recorded, and the trajectory keeps the error.
	read("retry", "cut")
	read("retry", "ok")
	tr = readGroups(t, srv.URL, out, "retry")["retry"]
	if !strings.HasPrefix(tr.Error, "turn 1: upstream stream broken") || len(tr.Messages) != 2 || tr.Messages[1].Content != "Hello" || tr.Messages[1].FinishReason != "stop" {
		t.Errorf("retry: error %q, messages %+v", tr.Error, tr.Messages)
	}
}
