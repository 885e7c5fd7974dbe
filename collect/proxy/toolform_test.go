package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/layout"
)

// TestProxyServesToolsAsRecorded: an agent's tools in a form of its own (a
// "strict" key, as the OpenAI SDKs' pydantic_function_tool writes it;
// description after parameters; type after function) reach the upstream
// as the trajectory records them, so the prompt hone-serve renders from the
// request (the raw tools through the chat template) is the prompt training
// lays the recorded trajectory out with. Forwarded as the agent wrote them,
// the model was shown a "strict": true the file does not hold.
func TestProxyServesToolsAsRecorded(t *testing.T) {
	up, fake, _ := upstream(t)
	out := t.TempDir()
	base := proxyTo(t, up.URL, out)
	tools := `[{"function":{"name":"weather","strict":true,"parameters":{"type":"object","properties":{"city":{"type":"string"}},` +
		`"required":["city"],"additionalProperties":false},"description":"Weather in a city."},"type":"function"}]`
	status, msg := chat(t, base, `{"model":"agent","messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":`+tools+`}`, "a", "g")
	if status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, msg)
	}
	tr := closeOne(t, base, out, "g")
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	tmpl, err := chattemplate.Load("../../testdata/templates/qwen2.5")
	if err != nil {
		t.Fatal(err)
	}
	var user chatmsg.Message
	if err := json.Unmarshal(reqs[0].Messages[0], &user); err != nil {
		t.Fatal(err)
	}
	served, err := tmpl.Render(context.Background(), chattemplate.Input{Messages: []chatmsg.Message{user}, Tools: reqs[0].Tools, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	trained, err := layout.Render(context.Background(), tmpl, tr.Messages[:1], tr.Tools, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if served != trained {
		t.Errorf("the upstream was asked with tools %s;\nserved prompt:\n%s\ntrained prompt:\n%s", reqs[0].Tools, served, trained)
	}
}
