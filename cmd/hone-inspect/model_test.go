package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	tokenizersDir = "../../testdata/tokenizers"
	templatesDir  = "../../testdata/templates"
	goldenHint    = "golden values from testdata/tokenizers/js/golden.mjs (see testdata/tokenizers/golden/README.md)"
)

type tokCase struct {
	Name               string `json:"name"`
	Text               string `json:"text"`
	IDs                []int  `json:"ids"`
	IDsNoSpecial       []int  `json:"ids_no_special"`
	Decoded            string `json:"decoded"`
	DecodedSkipSpecial string `json:"decoded_skip_special"`
}

func goldenTokens(t *testing.T, name string) map[string]tokCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tokenizersDir, "golden", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct{ Cases []tokCase }
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	out := map[string]tokCase{}
	for _, c := range g.Cases {
		out[c.Name] = c
	}
	return out
}

func idsJSON(ids []int) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// TestTokenizeGolden: the binary's ids for text on stdin and its decode of
// ids equal Hugging Face's, for Qwen3 (special tokens inside the text) and
// Llama 3 (where --special adds <|begin_of_text|>).
func TestTokenizeGolden(t *testing.T) {
	qwen := filepath.Join(tokenizersDir, "qwen3")
	qg := goldenTokens(t, "qwen3")
	for _, name := range []string{"hello", "emoji", "special_chatml"} {
		c, ok := qg[name]
		if !ok {
			t.Fatalf("golden case %s missing", name)
		}
		r := mustRun(t, []byte(c.Text), "tokenize", "--model", qwen)
		if got, want := strings.TrimSuffix(r.stdout, "\n"), idsJSON(c.IDs); got != want {
			t.Errorf("%s: ids %s\nwant %s (%s)", name, got, want, goldenHint)
		}
		// Decode round trip, keeping and skipping special tokens.
		r = mustRun(t, []byte(idsJSON(c.IDs)), "tokenize", "--model", qwen, "--decode")
		if r.stdout != c.Decoded {
			t.Errorf("%s: decode %q, want %q", name, r.stdout, c.Decoded)
		}
		if r.stdout != c.Text {
			t.Errorf("%s: round trip %q, want the input %q", name, r.stdout, c.Text)
		}
		if c.Decoded != c.DecodedSkipSpecial {
			r = mustRun(t, []byte(idsJSON(c.IDs)), "tokenize", "--model", qwen, "--decode", "--no-special")
			if r.stdout != c.DecodedSkipSpecial {
				t.Errorf("%s: decode --no-special %q, want %q", name, r.stdout, c.DecodedSkipSpecial)
			}
		}
	}

	llama := filepath.Join(tokenizersDir, "llama3")
	c := goldenTokens(t, "llama3")["hello"]
	if idsJSON(c.IDs) == idsJSON(c.IDsNoSpecial) {
		t.Fatal("llama3 golden case hello: expected ids with and without special tokens to differ")
	}
	r := mustRun(t, nil, "tokenize", "--model", llama, "--text", c.Text)
	if got := strings.TrimSpace(r.stdout); got != idsJSON(c.IDs) {
		t.Errorf("llama3 --special: %s, want %s (%s)", got, idsJSON(c.IDs), goldenHint)
	}
	r = mustRun(t, nil, "tokenize", "--model", llama, "--no-special", "--text", c.Text)
	if got := strings.TrimSpace(r.stdout); got != idsJSON(c.IDsNoSpecial) {
		t.Errorf("llama3 --no-special: %s, want %s (%s)", got, idsJSON(c.IDsNoSpecial), goldenHint)
	}
}

func TestTokenizeBadInput(t *testing.T) {
	qwen := filepath.Join(tokenizersDir, "qwen3")
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"[1, 99999999]", []string{"--decode"}, "ids[1] = 99999999"},
		{"[-1]", []string{"--decode"}, "ids[0] = -1"},
		{"not json", []string{"--decode"}, "JSON array"},
		{"[1] [2]", []string{"--decode"}, "more after"},
		// encoding/json decodes null into an int as 0: token 0, silently.
		{"[9707, null, 1879]", []string{"--decode"}, "ids[1]: want a token id, got null"},
		{"null", []string{"--decode"}, "got null"},
		{"x", []string{"--special", "--no-special"}, "contradict"},
	} {
		r := run(t, []byte(tc.stdin), append([]string{"tokenize", "--model", qwen}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("tokenize %q < %q: exit %d, stderr %q; want 2 and %q", tc.args, tc.stdin, r.code, r.stderr, tc.want)
		}
	}
	r := run(t, []byte("x"), "tokenize", "--model", filepath.Join(t.TempDir(), "nope"))
	if r.code != 2 || !strings.Contains(r.stderr, "nope") {
		t.Errorf("missing model folder: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, []byte("x"), "tokenize")
	if r.code != 2 || !strings.Contains(r.stderr, "model") {
		t.Errorf("no --model: exit %d, stderr %q", r.code, r.stderr)
	}
}

// qwen3Folder is a model folder as Hugging Face ships it: Qwen3's
// tokenizer and tokenizer_config.json with its chat template.
func qwen3Folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []struct{ src, dst string }{
		{filepath.Join(tokenizersDir, "qwen3", "tokenizer.json.gz"), "tokenizer.json.gz"},
		{filepath.Join(templatesDir, "qwen3", "tokenizer_config.json"), "tokenizer_config.json"},
	} {
		b, err := os.ReadFile(f.src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRenderGolden: the rendering equals transformers' / @huggingface/jinja's
// golden text for template cases, with the generation prompt and kwargs
// taken from flags or from the request object.
func TestRenderGolden(t *testing.T) {
	model := qwen3Folder(t)
	for _, name := range []string{"system_user", "enable_thinking_false", "tool_call_round_trip"} {
		b, err := os.ReadFile(filepath.Join(templatesDir, "cases", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(templatesDir, "golden", "qwen3", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Messages json.RawMessage `json:"messages"`
			Tools    json.RawMessage `json:"tools"`
			AGP      bool            `json:"add_generation_prompt"`
			Kwargs   json.RawMessage `json:"kwargs"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		conv := map[string]json.RawMessage{"messages": c.Messages}
		if c.Tools != nil {
			conv["tools"] = c.Tools
		}
		in, _ := json.MarshalIndent(conv, "", "  ") // multi-line input is fine
		args := []string{"render", "--model", model}
		if c.AGP {
			args = append(args, "--add-generation-prompt")
		}
		if c.Kwargs != nil {
			args = append(args, "--chat-template-kwargs", string(c.Kwargs))
		}
		r := mustRun(t, in, args...)
		if r.stdout != string(want) {
			t.Errorf("%s: rendered\n%q\nwant (testdata/templates/golden/qwen3/%s.txt, see testdata/templates/SOURCES.md)\n%q", name, r.stdout, name, want)
		}
		// The same, with the settings in the request object.
		conv["add_generation_prompt"] = json.RawMessage(strconv.FormatBool(c.AGP))
		if c.Kwargs != nil {
			conv["chat_template_kwargs"] = c.Kwargs
		}
		in, _ = json.Marshal(conv)
		if r := mustRun(t, in, "render", "--model", model); r.stdout != string(want) {
			t.Errorf("%s, settings in the request: rendered\n%q\nwant\n%q", name, r.stdout, want)
		}
	}
}

type tokenLine struct {
	id    int
	train bool
	text  string
}

func parseIDs(t *testing.T, out string) [][]tokenLine {
	t.Helper()
	var seqs [][]tokenLine
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# sequence "):
			seqs = append(seqs, nil)
			continue
		case strings.HasPrefix(line, "pos\t"):
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 || len(seqs) == 0 {
			t.Fatalf("bad --ids line %q in\n%s", line, out)
		}
		id, err := strconv.Atoi(f[1])
		text, err2 := strconv.Unquote(f[4])
		if err != nil || err2 != nil || (f[2] != "T" && f[2] != ".") || f[3] != "-" {
			t.Fatalf("bad --ids line %q", line)
		}
		seqs[len(seqs)-1] = append(seqs[len(seqs)-1], tokenLine{id, f[2] == "T", text})
	}
	return seqs
}

// TestRenderIDsMask: --ids lays out the whole rendering, and the trained
// tokens are exactly the assistant's span: after "<|im_start|>assistant\n"
// up to and including its <|im_end|>, not the "\n" after it.
func TestRenderIDsMask(t *testing.T) {
	model := qwen3Folder(t)
	conv := []byte(`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Capital of Peru?"},{"role":"assistant","content":"Lima.","reasoning_content":"Peru's capital is Lima."}]}`)
	text := mustRun(t, conv, "render", "--model", model).stdout
	start := strings.LastIndex(text, "<|im_start|>assistant\n") + len("<|im_start|>assistant\n")
	end := strings.LastIndex(text, "<|im_end|>") + len("<|im_end|>")
	span := text[start:end]
	if !strings.Contains(span, "<think>\nPeru's capital is Lima.\n</think>\n\nLima.") {
		t.Fatalf("reasoning_content not rendered: %q", text)
	}

	seqs := parseIDs(t, mustRun(t, conv, "render", "--model", model, "--ids").stdout)
	if len(seqs) != 1 {
		t.Fatalf("%d sequences, want 1", len(seqs))
	}
	var all, trained strings.Builder
	first, last := -1, -1
	for i, tl := range seqs[0] {
		all.WriteString(tl.text)
		if tl.train {
			trained.WriteString(tl.text)
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if all.String() != text {
		t.Errorf("tokens spell\n%q\nwant the rendering\n%q", all.String(), text)
	}
	if trained.String() != span {
		t.Errorf("trained tokens spell\n%q\nwant the assistant span\n%q", trained.String(), span)
	}
	for i := first; i <= last; i++ {
		if !seqs[0][i].train {
			t.Errorf("token %d inside the assistant span is not trained", i)
		}
	}

	// --train marked: nothing is marked trainable here, so nothing is trained.
	for _, tl := range parseIDs(t, mustRun(t, conv, "render", "--model", model, "--ids", "--train", "marked").stdout)[0] {
		if tl.train {
			t.Fatalf("--train marked trained %q of an unmarked message", tl.text)
		}
	}
	// With a generation prompt the ids are the prompt's, all context.
	prompt := []byte(`{"messages":[{"role":"user","content":"Hi"}]}`)
	want := mustRun(t, prompt, "render", "--model", model, "--add-generation-prompt").stdout
	seqs = parseIDs(t, mustRun(t, prompt, "render", "--model", model, "--add-generation-prompt", "--ids").stdout)
	all.Reset()
	for _, tl := range seqs[0] {
		all.WriteString(tl.text)
		if tl.train {
			t.Errorf("prompt token %q trained", tl.text)
		}
	}
	if all.String() != want {
		t.Errorf("prompt ids spell %q, want %q", all.String(), want)
	}
}

func TestRenderBadInput(t *testing.T) {
	model := qwen3Folder(t)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"[1,2]", nil, "JSON object"},
		{`{"messages":[{"content":"x"}]}`, nil, "no role"},
		{`{"messages":[]}`, []string{"--chat-template-kwargs", "[1]"}, "JSON object"},
		{`{"messages":[]}`, []string{"--ids", "--train", "all"}, "assistant or marked"},
	} {
		r := run(t, []byte(tc.stdin), append([]string{"render", "--model", model}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("render %q < %q: exit %d, stderr %q; want 2 and %q", tc.args, tc.stdin, r.code, r.stderr, tc.want)
		}
	}
	// A folder with a tokenizer but no chat template.
	bare := t.TempDir()
	tok, err := os.ReadFile(filepath.Join(tokenizersDir, "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bare, "tokenizer.json.gz"), tok, 0o644)
	r := run(t, []byte(`{"messages":[{"role":"user","content":"x"}]}`), "render", "--model", bare)
	if r.code != 2 {
		t.Errorf("render without a chat template: exit %d, stdout %q, stderr %q; want exit 2", r.code, r.stdout, r.stderr)
	}
}

// TestRenderHostileTemplate: a model folder whose chat template recurses
// without end, or doubles a string until memory is gone, is bad input: exit
// 2 with the limit and the template file named, at once, instead of a
// crash of the process (a Go fatal error also exits 2, so the message is
// what tells them apart).
func TestRenderHostileTemplate(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`, "macro depth limit"},
		// A namespace carries the value across iterations: a plain set in
		// a for body lasts one iteration, as in jinja2.
		{`{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}`, "value bytes limit"},
		{`{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}`, "value bytes limit"},
		{`{% for i in range(10**12) %}{% endfor %}`, "steps limit"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "chat_template.jinja")
		if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := run(t, []byte(`{"messages":[{"role":"user","content":"x"}]}`), "render", "--model", dir)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, path) || strings.Contains(r.stderr, "goroutine ") {
			t.Errorf("%s: exit %d, stderr %.2000q; want exit 2 saying %q", tc.src, r.code, r.stderr, tc.want)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s: took %v", tc.src, took)
		}
	}
}

// TestModelHelp: each subcommand's help shows a working example.
func TestModelHelp(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"tokenize", "printf 'Hello, world!' | hone-inspect tokenize --model"},
		{"render", "hone-inspect render --model"},
	} {
		r := mustRun(t, nil, tc.cmd, "--help")
		if !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%s --help lacks an example:\n%s", tc.cmd, r.stdout)
		}
	}
	// The tokenize example, run from the repository root, prints what its
	// help says.
	r := run(t, []byte("Hello, world!"), "tokenize", "--model", filepath.Join(tokenizersDir, "qwen3"))
	if help := mustRun(t, nil, "tokenize", "--help").stdout; !strings.Contains(help, "  "+r.stdout) {
		t.Errorf("tokenize example output %q not in its help", r.stdout)
	}
}
