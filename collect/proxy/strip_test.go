package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// answerValues parses a chat completion, or a stream of server-sent
// events, into its JSON values (an event's data that is not JSON, such as
// [DONE], as its string), one per event.
func answerValues(t *testing.T, body []byte) []any {
	t.Helper()
	var datas [][]byte
	if bytes.HasPrefix(body, []byte("data:")) {
		for _, ev := range bytes.Split(body, []byte("\n\n")) {
			var lines [][]byte
			for _, l := range bytes.Split(ev, []byte("\n")) {
				if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
					lines = append(lines, bytes.TrimPrefix(v, []byte(" ")))
				}
			}
			if len(lines) > 0 {
				datas = append(datas, bytes.Join(lines, []byte("\n")))
			}
		}
	} else {
		datas = [][]byte{body}
	}
	var out []any
	for _, d := range datas {
		var v any
		if err := json.Unmarshal(d, &v); err != nil {
			v = string(d)
		}
		out = append(out, v)
	}
	return out
}

// withoutAdded is what an agent that asked for neither logprobs (unless
// logprobs) nor token ids (unless tokenIDs) should read of an answer
// upstream sent with both: the choices' logprobs null, token_ids and
// prompt_token_ids gone, and a streamed chunk that carried nothing else
// not sent at all.
func withoutAdded(t *testing.T, body []byte, logprobs, tokenIDs bool) []any {
	t.Helper()
	var out []any
	for _, v := range answerValues(t, body) {
		m, ok := v.(map[string]any)
		if !ok {
			out = append(out, v)
			continue
		}
		if !tokenIDs {
			delete(m, "prompt_token_ids")
		}
		chs, _ := m["choices"].([]any)
		stripped, empty := false, len(chs) > 0 && m["usage"] == nil
		for _, ch := range chs {
			c := ch.(map[string]any)
			if !logprobs && c["logprobs"] != nil {
				c["logprobs"], stripped = nil, true
			}
			if _, ok := c["token_ids"]; ok && !tokenIDs {
				delete(c, "token_ids")
				stripped = true
			}
			for k, x := range c {
				d, isDelta := x.(map[string]any)
				switch {
				case k == "index":
				case isDelta && k == "delta":
					for _, dx := range d {
						empty = empty && dx == nil
					}
				default:
					empty = empty && x == nil
				}
			}
		}
		if stripped && empty {
			continue
		}
		out = append(out, m)
	}
	return out
}

// withoutIDs is vals without each object's id and created, which differ
// between two answers to one request.
func withoutIDs(vals []any) []any {
	for _, v := range vals {
		if m, ok := v.(map[string]any); ok {
			delete(m, "id")
			delete(m, "created")
		}
	}
	return vals
}

// The proxy asks the real hone-serve for logprobs and token ids to record
// them; an agent that did not ask for them reads what hone-serve would
// have answered it directly, streamed or not, while the recorded turns
// keep them. An agent that asks for logprobs itself gets them.
func TestProxyAnswersWithoutWhatItAdded(t *testing.T) {
	base, _ := startServe(t)
	out := t.TempDir()
	p := proxyTo(t, strings.TrimSuffix(base, "/v1"), out)
	const msgs = `"model":"tiny","max_tokens":8,"seed":5,"temperature":1,"messages":[{"role":"user","content":"weather in Oslo?"}]`
	for _, tc := range []struct{ name, extra string }{
		{"plain", ``},
		{"stream", `,"stream":true`},
		{"plain-logprobs", `,"logprobs":true`},
		{"stream-logprobs", `,"stream":true,"logprobs":true,"return_token_ids":false`},
	} {
		body := `{` + msgs + tc.extra + `}`
		status, direct := do(t, mustRequest(t, http.MethodPost, base+"/chat/completions", body))
		if status != http.StatusOK {
			t.Fatalf("%s: hone-serve: %d %s", tc.name, status, direct)
		}
		status, proxied := chat(t, p, body, tc.name, tc.name)
		if status != http.StatusOK {
			t.Fatalf("%s: proxy: %d %s", tc.name, status, proxied)
		}
		if strings.Contains(proxied, "token_ids") {
			t.Errorf("%s: the agent got token ids it did not ask for: %s", tc.name, proxied)
		}
		want, got := withoutIDs(answerValues(t, []byte(direct))), withoutIDs(answerValues(t, []byte(proxied)))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: through the proxy the agent read\n%s\nhone-serve answers it directly\n%s", tc.name, proxied, direct)
		}
		if strings.Contains(tc.extra, "logprobs") && !strings.Contains(proxied, `"logprob":`) {
			t.Errorf("%s: the agent asked for logprobs and got none: %s", tc.name, proxied)
		}
		if status, msg := closeGroup(t, p, tc.name); status != http.StatusNoContent {
			t.Fatalf("%s: close: %d %s", tc.name, status, msg)
		}
	}
	gs := readOut(t, out)
	if len(gs) != 4 {
		t.Fatalf("%d groups written, want 4", len(gs))
	}
	for _, g := range gs {
		tr := g.Trajectories[0]
		last := tr.Messages[len(tr.Messages)-1]
		if last.Role != "assistant" || !last.Trainable || len(last.TokenIDs) == 0 || len(last.Logprobs) != len(last.TokenIDs) {
			t.Errorf("%s: the recorded turn lost its tokens: %+v", g.ID, last)
		}
	}
}

// TestProxyTopLogprobsWithoutLogprobs: top_logprobs without logprobs is a
// 400 naming it through the proxy too, as hone-serve (and OpenAI, vLLM)
// answer it; the proxy's own logprobs let it through, answered with the
// logprobs taken out again.
func TestProxyTopLogprobsWithoutLogprobs(t *testing.T) {
	base, _ := startServe(t)
	p := proxyTo(t, strings.TrimSuffix(base, "/v1"), t.TempDir())
	body := `{"model":"tiny","max_tokens":2,"top_logprobs":2,"messages":[{"role":"user","content":"hi"}]}`
	if status, direct := do(t, mustRequest(t, http.MethodPost, base+"/chat/completions", body)); status != http.StatusBadRequest {
		t.Fatalf("hone-serve: %d %s; the test expects its 400", status, direct)
	}
	status, proxied := chat(t, p, body, "t", "g")
	if status != http.StatusBadRequest || !strings.Contains(proxied, `"param":"top_logprobs"`) {
		t.Errorf("proxy: %d %s; want the 400 naming top_logprobs", status, proxied)
	}
	with := `{"model":"tiny","max_tokens":2,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"hi"}]}`
	if status, body := chat(t, p, with, "t2", "g2"); status != http.StatusOK || !strings.Contains(body, `"top_logprobs":[{`) {
		t.Errorf("with logprobs: %d %s", status, body)
	}
}
