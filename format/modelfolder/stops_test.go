package modelfolder_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/modelfolder"
	mt "github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
)

// TestStopTokens: the ids that end a turn are generation_config.json's eos
// ids (else config.json's) and then the tokenizer's eos_token, each once;
// the same whether or not the folder's config is opened.
func TestStopTokens(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, dir string)
		want []int
	}{
		// Llama 3.2 Instruct: <|end_of_text|> ends a turn though no
		// template writes it and no other file names it.
		{"llama 3.2 as shipped", nil, []int{mt.EndOfText, mt.EOM, mt.EOT}},
		{"one id, not a list", func(t *testing.T, dir string) {
			mt.WriteJSON(t, filepath.Join(dir, modelfolder.GenerationConfigFile), map[string]any{"eos_token_id": mt.EndOfText})
		}, []int{mt.EndOfText, mt.EOT}},
		{"generation config without eos falls back to config.json", func(t *testing.T, dir string) {
			mt.WriteJSON(t, filepath.Join(dir, modelfolder.GenerationConfigFile), map[string]any{"temperature": 0.6})
			setConfigEOS(t, dir, mt.EOM)
		}, []int{mt.EOM, mt.EOT}},
		{"no generation config: config.json's eos", func(t *testing.T, dir string) {
			remove(t, dir, modelfolder.GenerationConfigFile)
			setConfigEOS(t, dir, mt.EndOfText)
		}, []int{mt.EndOfText, mt.EOT}},
		{"no eos in either: the tokenizer's eos_token alone", func(t *testing.T, dir string) {
			remove(t, dir, modelfolder.GenerationConfigFile)
			setConfigEOS(t, dir, nil)
		}, []int{mt.EOT}},
		// A folder saved before transformers 4.34 (no added_tokens_decoder)
		// names its tokens in special_tokens_map.json, which wins over
		// tokenizer_config.json there.
		{"old folder: special_tokens_map.json's eos_token", func(t *testing.T, dir string) {
			remove(t, dir, modelfolder.GenerationConfigFile)
			setConfigEOS(t, dir, nil)
			cfgPath := filepath.Join(dir, modelfolder.TokenizerConfigFile)
			var cfg map[string]any
			b, err := os.ReadFile(cfgPath)
			if err != nil || json.Unmarshal(b, &cfg) != nil {
				t.Fatalf("read %s: %v", cfgPath, err)
			}
			delete(cfg, "added_tokens_decoder")
			cfg["eos_token"] = ""
			mt.WriteJSON(t, cfgPath, cfg)
			mt.WriteJSON(t, filepath.Join(dir, modelfolder.SpecialTokensMapFile), map[string]any{"eos_token": "<|eom_id|>"})
		}, []int{mt.EOM}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := mt.Llama32(t)
			if c.edit != nil {
				c.edit(t, dir)
			}
			for _, parts := range []modelfolder.Part{modelfolder.All, modelfolder.Tokenizer | modelfolder.Template} {
				f, err := modelfolder.Open(dir, parts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(f.StopTokens, c.want) {
					t.Errorf("parts %b: stop tokens %v, want %v", parts, f.StopTokens, c.want)
				}
				f.Close()
			}
		})
	}
}

// TestStopTokensWithoutConfig: a folder of tokenizer files alone (what
// hone-inspect renders) stops on its eos_token; one whose config.json is of
// a family Hone cannot run still gives its eos ids when only its text side
// is opened.
func TestStopTokensWithoutConfig(t *testing.T) {
	dir := mt.Llama32(t)
	remove(t, dir, modelfolder.GenerationConfigFile)
	remove(t, dir, modelfolder.ConfigFile)
	remove(t, dir, "model.safetensors")
	f, err := modelfolder.Open(dir, modelfolder.Tokenizer|modelfolder.Template)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.StopTokens, []int{mt.EOT}) {
		t.Errorf("tokenizer files alone: stop tokens %v, want [%d]", f.StopTokens, mt.EOT)
	}
	mt.WriteJSON(t, filepath.Join(dir, modelfolder.ConfigFile), map[string]any{"model_type": "mistral", "eos_token_id": mt.EndOfText})
	if f, err = modelfolder.Open(dir, modelfolder.Tokenizer|modelfolder.Template); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.StopTokens, []int{mt.EndOfText, mt.EOT}) {
		t.Errorf("mistral config: stop tokens %v, want [%d %d]", f.StopTokens, mt.EndOfText, mt.EOT)
	}
	if f, err = modelfolder.Open(dir, modelfolder.Tokenizer); err != nil || f.StopTokens != nil || f.Template != nil || f.Config != nil {
		t.Errorf("tokenizer alone: %+v, %v; want only the tokenizer", f, err)
	}
}

// TestOpenErrorsNameTheFile: whichever file is at fault, the error names it
// and the folder; a missing config or tokenizer is fs.ErrNotExist.
func TestOpenErrorsNameTheFile(t *testing.T) {
	cases := []struct {
		file    string
		content string // "" removes the file
		parts   modelfolder.Part
		missing bool // fs.ErrNotExist, which hone-inspect reports as bad input
	}{
		{modelfolder.ConfigFile, "", modelfolder.All, true},
		{modelfolder.ConfigFile, `{"model_type": "llama"`, modelfolder.Config, false},
		{modelfolder.GenerationConfigFile, `{"eos_token_id": "<|eot_id|>"}`, modelfolder.All, false},
		{modelfolder.GenerationConfigFile, `{"eos_token_id": "<|eot_id|>"}`, modelfolder.Tokenizer | modelfolder.Template, false},
		{modelfolder.GenerationConfigFile, `{"eos_token_id": [9999]}`, modelfolder.Config, false},
		{modelfolder.TokenizerFile, "", modelfolder.Tokenizer, true},
		{modelfolder.TokenizerFile, `{"model": 1}`, modelfolder.All, false},
		{modelfolder.TokenizerConfigFile, `{"chat_template": "{% if %}"}`, modelfolder.Template, false},
		{"model.safetensors", "", modelfolder.Weights, false},
	}
	for _, c := range cases {
		dir := mt.Llama32(t)
		if c.content == "" {
			remove(t, dir, c.file)
		} else if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := modelfolder.Open(dir, c.parts)
		if err == nil {
			f.Close()
			t.Errorf("%s %q: opened", c.file, c.content)
			continue
		}
		msg := err.Error()
		t.Logf("%s: %s", c.file, msg)
		if !strings.Contains(msg, dir) || !strings.Contains(msg, c.file) {
			t.Errorf("%s %q: error %q should name the folder and %s", c.file, c.content, msg, c.file)
		}
		if c.missing && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s missing: error is not fs.ErrNotExist: %v", c.file, err)
		}
		if strings.Contains(msg, "[]interface") || strings.Contains(msg, "map[string]") {
			t.Errorf("%s: error shows a Go type: %q", c.file, msg)
		}
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// setConfigEOS rewrites config.json's eos_token_id (nil removes it).
func setConfigEOS(t *testing.T, dir string, eos any) {
	t.Helper()
	path := filepath.Join(dir, modelfolder.ConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if eos == nil {
		delete(cfg, "eos_token_id")
	} else {
		cfg["eos_token_id"] = eos
	}
	mt.WriteJSON(t, path, cfg)
}
