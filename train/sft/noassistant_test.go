package sft

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/spf13/pflag"
)

// TestSkippedConversationsAreNamed: conversations with no assistant turn
// to train are left out with one warning that names them, and a line
// without "messages" (TRL's prompt-completion form, ShareGPT's
// "conversations") says which keys it has instead. They were only
// counted ("skipped=2"), so a file half in another shape trained on the
// other half without a word of which lines were dropped, or why.
func TestSkippedConversationsAreNamed(t *testing.T) {
	dir, md, data := setup(t)
	f, err := os.OpenFile(data, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"no answer"}],"trajectory_id":"unanswered"}
{"prompt":[{"role":"user","content":"q"}],"completion":[{"role":"assistant","content":"a"}],"trajectory_id":"trl-form"}
`)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, dir, "sft", fileset.Files(data)
	o.Steps = 1
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var log bytes.Buffer
	o.Backend, o.Log = be, textLog(&log)
	if err := Run(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var warn string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "no assistant turn") {
			warn = l
		}
	}
	for _, want := range []string{"2 of 8 conversations", filepath.Base(data), "trajectory unanswered", "trajectory trl-form", `no \"messages\"`, "completion, prompt"} {
		if !strings.Contains(warn, want) {
			t.Errorf("warning %q lacks %q\n%s", warn, want, log.String())
		}
	}
}
