package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tokenizerFolder makes a folder holding the tokenizer.json of src (a
// testdata folder with tokenizer.json.gz; edit, when not nil, changes the
// document first) and cfg as its tokenizer_config.json.
func tokenizerFolder(t *testing.T, src string, edit func(map[string]any), cfg string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(src, FileName+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if doc, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConfigFlagsRebuildPostProcessor checks that a folder's
// tokenizer_config.json decides the special tokens Encode adds for the
// classes that rebuild their post-processor from add_bos_token and
// add_eos_token, and only for them. The expected ids follow the rule as
// transformers states it (tokenization_llama_fast.py at commit
// 01ae98ae2414210efd0d9ac1ffe78ff21588f1f7, LlamaTokenizerFast.__init__
// with add_bos_token=True, add_eos_token=False by default, then
// update_post_processor: single = "bos:0 $A:0 eos:0", each only with its
// flag; gpt_neox's at cab70064aefa2bf2717a624f791b40917dd0dd4a defaults
// both to False), over the text's ids without special tokens. The
// JavaScript reference does not read tokenizer_config.json.
func TestConfigFlagsRebuildPostProcessor(t *testing.T) {
	const text = "Hello world, this is Hone."
	llama2, llama3, qwen3 := testTokenizer(t, "llama2"), testTokenizer(t, "llama3"), testTokenizer(t, "qwen3")
	const bos, eos = 1, 2 // Llama 2's <s> and </s>
	plain := llama2.Encode(text, false)
	noPostProcessor := func(m map[string]any) { m["post_processor"] = nil }
	cases := []struct {
		name string
		src  string
		edit func(map[string]any)
		cfg  string
		base *Tokenizer
		want []int
	}{
		{"llama eos on", "llama2", nil,
			`{"tokenizer_class": "LlamaTokenizer", "add_bos_token": true, "add_eos_token": true, "bos_token": "<s>", "eos_token": "</s>"}`,
			llama2, slices.Concat([]int{bos}, plain, []int{eos})},
		{"llama bos off", "llama2", nil,
			`{"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false}`,
			llama2, plain},
		{"llama flags null", "llama2", nil,
			`{"tokenizer_class": "LlamaTokenizer", "add_bos_token": null, "add_eos_token": null}`,
			llama2, plain},
		// tokenizer.json without a post-processor: the class's default
		// add_bos_token=True and bos_token "<s>" still put <s> first.
		{"llama defaults over a file without post-processor", "llama2", noPostProcessor,
			`{"tokenizer_class": "LlamaTokenizer"}`,
			llama2, slices.Concat([]int{bos}, plain)},
		{"code llama eos as an AddedToken object", "llama2", nil,
			`{"tokenizer_class": "CodeLlamaTokenizer", "add_eos_token": true, "eos_token": {"__type": "AddedToken", "content": "</s>", "special": true}}`,
			llama2, slices.Concat([]int{bos}, plain, []int{eos})},
		{"gpt-neox defaults drop the file's bos", "llama2", nil,
			`{"tokenizer_class": "GPTNeoXTokenizerFast"}`,
			llama2, plain},
		// Classes that keep tokenizer.json's post-processor in
		// transformers 4.x, whatever the flags say.
		{"qwen2 ignores the flags", "qwen3", nil,
			`{"tokenizer_class": "Qwen2Tokenizer", "add_bos_token": true, "add_eos_token": true, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}`,
			qwen3, qwen3.Encode(text, false)},
		{"PreTrainedTokenizerFast ignores the flags", "llama3", nil,
			`{"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": false, "add_eos_token": true, "eos_token": "<|eot_id|>"}`,
			llama3, slices.Concat([]int{128000}, llama3.Encode(text, false))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tokenizerFolder(t, filepath.Join(testdataDir, c.src), c.edit, c.cfg)
			tk, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := tk.Encode(text, true); !slices.Equal(got, c.want) {
				t.Errorf("Encode(addSpecial) = %v, want %v", got, c.want)
			}
			ids, spans := tk.EncodeWithOffsets(text, true)
			if !slices.Equal(ids, c.want) || len(spans) != len(ids) {
				t.Errorf("EncodeWithOffsets = %v (%d spans), want %v", ids, len(spans), c.want)
			}
			lim, err := tk.Limited().Encode(text, true, 1000)
			if err != nil || !slices.Equal(lim, c.want) {
				t.Errorf("Limited().Encode = %v, %v; want %v", lim, err, c.want)
			}
			if got := tk.Encode(text, false); !slices.Equal(got, c.base.Encode(text, false)) {
				t.Errorf("Encode without special tokens changed: %v", got)
			}
		})
	}
}

// TestConfigFlagsGemma3 runs the rule on the real Gemma 3 folder's files,
// its tokenizer_config.json with add_eos_token set: its eos_token is
// <end_of_turn> (106), not GemmaTokenizerFast's default <eos>
// (tokenization_gemma_fast.py at 15ea02a2add1672acbeee158a9448720d6093de1).
func TestConfigFlagsGemma3(t *testing.T) {
	gemma, _ := gemmaTokenizer(t)
	cfg, err := os.ReadFile(filepath.Join(gemmaDir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		t.Fatal(err)
	}
	m["add_eos_token"] = true
	if cfg, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(gemmaDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A link, not a copy: the file is 33 MB.
	if err := os.Symlink(filepath.Join(abs, FileName), filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const text = "Hello world"
	want := slices.Concat([]int{2}, gemma.Encode(text, false), []int{106})
	if got := tk.Encode(text, true); !slices.Equal(got, want) {
		t.Errorf("Encode(addSpecial) = %v, want %v", got, want)
	}
	// The folder as shipped (add_bos_token true, add_eos_token false)
	// adds what its tokenizer.json says.
	real, err := Load(gemmaDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := real.Encode(text, true), gemma.Encode(text, true); !slices.Equal(got, want) {
		t.Errorf("shipped folder: Encode = %v, tokenizer.json alone %v", got, want)
	}
}

// TestConfigFlagsRefused checks what transformers refuses, or cannot be
// followed, is an error naming the file and the key.
func TestConfigFlagsRefused(t *testing.T) {
	cases := []struct {
		name, cfg string
		want      []string
	}{
		{"bos null under the default", `{"tokenizer_class": "LlamaTokenizer", "bos_token": null}`,
			[]string{ConfigFile, "add_bos_token is not set, and LlamaTokenizerFast takes it as true", "bos_token is null"}},
		{"eos null", `{"tokenizer_class": "GemmaTokenizer", "add_bos_token": false, "add_eos_token": true, "eos_token": null}`,
			[]string{"add_eos_token is true but eos_token is null"}},
		{"flag not a bool", `{"tokenizer_class": "LlamaTokenizer", "add_eos_token": "yes"}`,
			[]string{"add_eos_token: want true, false or null"}},
		{"token not in the vocabulary", `{"tokenizer_class": "LlamaTokenizer", "add_eos_token": true, "eos_token": "<|nope|>"}`,
			[]string{`eos_token "<|nope|>" is not a token of tokenizer.json`}},
		{"token of another type", `{"tokenizer_class": "LlamaTokenizer", "bos_token": 1}`,
			[]string{"bos_token: neither a string nor an object with content"}},
		{"gpt-neox bos on without its token", `{"tokenizer_class": "GPTNeoXTokenizerFast", "add_bos_token": true}`,
			[]string{"add_bos_token is true but bos_token is not set", "write the token in " + ConfigFile}},
		{"not JSON", `{"tokenizer_class": "LlamaTokenizer",`, []string{ConfigFile, "decode json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tokenizerFolder(t, filepath.Join(testdataDir, "llama2"), nil, c.cfg)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestConfigOnlyBesideAFolder: Load of a tokenizer.json path reads that
// file alone, as tokenizers.Tokenizer.from_file does.
func TestConfigOnlyBesideAFolder(t *testing.T) {
	dir := tokenizerFolder(t, filepath.Join(testdataDir, "llama2"), nil, `{"tokenizer_class": "LlamaTokenizer", "add_bos_token": false}`)
	tk, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("hi", true); len(got) == 0 || got[0] != 1 {
		t.Errorf("Encode = %v, want <s> (1) first, as tokenizer.json says", got)
	}
}

// TestConfigSpecialTokensMap checks special_tokens_map.json as transformers
// 4.x reads it beside tokenizer_config.json (tokenization_utils_base.py,
// _from_pretrained, the "begin legacy" branch): in a folder whose
// tokenizer_config.json has no added_tokens_decoder (saved before
// transformers 4.34), every key of the map replaces the config's; in a
// newer folder the map is not read. The first case is huggyllama/llama-7b's
// pair of files: bos_token "" in the config, "<s>" in the map.
func TestConfigSpecialTokensMap(t *testing.T) {
	const text = "Hello world, this is Hone."
	llama2 := testTokenizer(t, "llama2")
	const bos, eos = 1, 2 // Llama 2's <s> and </s>
	plain := llama2.Encode(text, false)
	cases := []struct {
		name, cfg, smap string
		want            []int
	}{
		{"legacy folder: the map's tokens",
			`{"bos_token": "", "eos_token": "", "tokenizer_class": "LlamaTokenizer", "unk_token": "", "add_eos_token": true}`,
			`{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}`,
			slices.Concat([]int{bos}, plain, []int{eos})},
		{"legacy folder: the map wins over the config",
			`{"bos_token": "<s>", "tokenizer_class": "LlamaTokenizer"}`,
			`{"bos_token": {"content": "</s>", "lstrip": false}}`,
			slices.Concat([]int{eos}, plain)},
		{"legacy folder: a key the map lacks stays the config's",
			`{"bos_token": "</s>", "tokenizer_class": "LlamaTokenizer"}`,
			`{"eos_token": "<unk>"}`,
			slices.Concat([]int{eos}, plain)},
		{"added_tokens_decoder: the map is not read",
			`{"bos_token": "<s>", "tokenizer_class": "LlamaTokenizer", "added_tokens_decoder": {}}`,
			`{"bos_token": "</s>"}`,
			slices.Concat([]int{bos}, plain)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tokenizerFolder(t, filepath.Join(testdataDir, "llama2"), nil, c.cfg)
			if err := os.WriteFile(filepath.Join(dir, "special_tokens_map.json"), []byte(c.smap), 0o644); err != nil {
				t.Fatal(err)
			}
			tk, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := tk.Encode(text, true); !slices.Equal(got, c.want) {
				t.Errorf("Encode(addSpecial) = %v, want %v", got, c.want)
			}
		})
	}
}
