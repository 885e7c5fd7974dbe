package proxy_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/collect/proxy"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// upstream is the fake model: it asks for the weather tool once, then
// answers with what the tool said. It keeps every body it sent.
func upstream(t *testing.T) (*httptest.Server, *openaitest.Server, func() [][]byte) {
	fake := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		if strings.Contains(string(r.Messages[len(r.Messages)-1]), `"tool"`) {
			return openaitest.Reply{Content: "It is " + r.LastContent() + " in Oslo.", Model: "agent@3"}
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_w", Name: "weather", Arguments: `{"city":"Oslo"}`}}, Model: "agent@3"}
	})
	t.Cleanup(fake.Close)
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		fake.Config.Handler.ServeHTTP(rec, r)
		mu.Lock()
		bodies = append(bodies, rec.Body.Bytes())
		mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv, fake, func() [][]byte { mu.Lock(); defer mu.Unlock(); return bodies }
}

// runAgent is a user's agent written with the official client: a
// two-step tool-using conversation. It returns the raw bodies it received.
func runAgent(t *testing.T, base, tid, gid string) ([]string, []openai.ChatCompletionMessageParamUnion) {
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-agent"),
		option.WithHeader("X-Hone-Trajectory", tid), option.WithHeader("X-Hone-Group", gid), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are helpful."), openai.UserMessage("Weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "weather", Description: openai.String("current weather"),
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
	}
	var raws []string
	for range 3 {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, resp.RawJSON())
		msg := resp.Choices[0].Message
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			break
		}
		for _, c := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage("rainy, 7°C", c.ID))
		}
	}
	return raws, params.Messages
}

func TestProxyRecordsAgent(t *testing.T) {
	up, fake, sent := upstream(t)
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, GroupSize: 2, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	raws1, _ := runAgent(t, srv.URL+"/v1", "t1", "g1")
	raws2, _ := runAgent(t, srv.URL+"/v1", "t2", "g1")
	// The agent got the upstream's answers, without the logprobs and
	// token ids it did not ask for.
	got := append(raws1, raws2...)
	want := sent()
	if len(got) != 4 || len(want) != 4 {
		t.Fatalf("%d responses, upstream sent %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(answerValues(t, []byte(got[i])), withoutAdded(t, want[i], false, false)) {
			t.Errorf("response %d differs:\nagent    %s\nupstream %s", i, got[i], want[i])
		}
	}
	for _, r := range fake.Requests() {
		if !r.Logprobs || !r.ReturnTokenIDs {
			t.Errorf("upstream request lacks logprobs/return_token_ids: %s", r.Raw)
		}
	}
	for i, tid := range []string{"t1", "t2"} {
		resp, err := http.Post(srv.URL+"/hone/trajectories/"+tid+"/reward", "application/json", strings.NewReader(fmt.Sprintf(`{"reward":%d,"metrics":{"steps":2}}`, i)))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reward %s: %v %v", tid, err, resp.Status)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].ID != "g1" || len(gs[0].Trajectories) != 2 {
		t.Fatalf("groups %+v", gs)
	}
	tr := gs[0].Trajectories[1]
	if tr.ID != "t2" || *tr.Reward != 1 || tr.Metrics["steps"] != 2 || len(tr.Tools) != 1 || tr.Tools[0].Name != "weather" || tr.Adapter != "agent@3" || tr.Step != 3 {
		t.Errorf("trajectory %+v", tr)
	}
	roles := []string{}
	for _, m := range tr.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant" {
		t.Fatalf("roles %v", roles)
	}
	call, final := tr.Messages[2], tr.Messages[4]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].Arguments != `{"city":"Oslo"}` || call.ToolCalls[0].ID != "call_w" ||
		final.Content != "It is rainy, 7°C in Oslo." || tr.Messages[3].Content != "rainy, 7°C" || tr.Messages[3].ToolCallID != "call_w" {
		t.Errorf("messages %+v", tr.Messages)
	}
	for _, m := range []trajectory.Message{call, final} {
		text := m.Content
		for _, c := range m.ToolCalls {
			text += c.Name + c.Arguments
		}
		ids, _ := openaitest.Tokens(text)
		if !m.Trainable || len(m.TokenIDs) != len(ids) || len(m.Logprobs) != len(ids) || m.AnswerModel != "agent@3" {
			t.Errorf("assistant turn %q: trainable %v, %d ids, %d logprobs", text, m.Trainable, len(m.TokenIDs), len(m.Logprobs))
		}
	}
	// A flushed group takes no more requests; unknown ids are 404.
	resp, _ := http.Post(srv.URL+"/hone/trajectories/nope/reward", "application/json", strings.NewReader(`{"reward":1}`))
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown trajectory: %s", resp.Status)
	}
}

func TestProxyCloseAndPassThrough(t *testing.T) {
	up, _, _ := upstream(t)
	out := t.TempDir()
	p, _ := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out})
	srv := httptest.NewServer(p)
	defer srv.Close()
	runAgent(t, srv.URL+"/v1", "a", "g")
	runAgent(t, srv.URL+"/v1", "b", "g")
	http.Post(srv.URL+"/hone/trajectories/a/reward", "application/json", strings.NewReader(`{"reward":0.5}`))
	if files, _ := filepath.Glob(filepath.Join(out, "*.parquet")); len(files) != 0 {
		t.Fatalf("flushed before close: %v", files)
	}
	// A close body that is not the group's fields is refused, and the
	// group stays open.
	for _, bad := range []string{`{"metric":{"x":1}}`, `{"metadata":{"k":{"deep":1}}}`, `{"metrics":{"x":"1"}}`, `[1]`} {
		resp, err := http.Post(srv.URL+"/hone/groups/g/close", "application/json", strings.NewReader(bad))
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("close with %s: %v %v, want 400", bad, err, resp.Status)
		}
		resp.Body.Close()
	}
	// The close body carries the group's metadata and metrics (ART's
	// TrajectoryGroup.metadata and .metrics).
	resp, err := http.Post(srv.URL+"/hone/groups/g/close", "application/json",
		strings.NewReader(`{"metadata":{"scenario":"s1","level":3,"hard":true,"none":null},"metrics":{"difficulty":2.5}}`))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close: %v %v", err, resp.Status)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.parquet"))
	gs, err := trajectory.ReadAll(context.Background(), fileset.Files(files...))
	if err != nil || len(gs) != 1 || gs[0].Trajectories[1].Error != "not closed" || *gs[0].Trajectories[0].Reward != 0.5 {
		t.Fatalf("close: %v %+v", err, gs)
	}
	if want := map[string]string{"scenario": "s1", "level": "3", "hard": "true"}; !maps.Equal(gs[0].Metadata, want) || !maps.Equal(gs[0].Metrics, map[string]float64{"difficulty": 2.5}) {
		t.Errorf("group fields %v %v, want %v and difficulty 2.5", gs[0].Metadata, gs[0].Metrics, want)
	}
	// Without the header the proxy forwards and records nothing.
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"))
	if _, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("unrecorded request left files: %v", entries)
	}
}
