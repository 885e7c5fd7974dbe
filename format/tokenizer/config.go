package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ConfigFile is the file beside tokenizer.json whose tokenizer_class,
// add_bos_token, add_eos_token, bos_token and eos_token Load follows
// (flagClass).
const ConfigFile = "tokenizer_config.json"

// SpecialTokensMapFile is the file of an old model folder whose bos_token
// and eos_token replace ConfigFile's (Load).
const SpecialTokensMapFile = "special_tokens_map.json"

// flagDefaults is what one transformers fast tokenizer class takes for the
// keys tokenizer_config.json leaves out.
type flagDefaults struct {
	class          string // the fast class, for messages
	bos, eos       string // bos_token, eos_token; "" when Hone does not take it
	addBOS, addEOS bool   // add_bos_token, add_eos_token
}

// flagClass returns the defaults of the tokenizer class a
// tokenizer_config.json names when that class rebuilds tokenizer.json's
// post-processor from add_bos_token and add_eos_token as it loads. In
// transformers 4.x these are the fast classes whose __init__ ends in
// update_post_processor(), which sets a TemplateProcessing of single
// "bos:0 $A:0 eos:0" (bos only with add_bos_token, eos only with
// add_eos_token) whatever tokenizer.json's post_processor was:
//
//	src/transformers/models/llama/tokenization_llama_fast.py (commit 01ae98ae2414210efd0d9ac1ffe78ff21588f1f7)
//	src/transformers/models/code_llama/tokenization_code_llama_fast.py (40a1b18444b478b92bca67d9487d67f1f2083d94)
//	src/transformers/models/gemma/tokenization_gemma_fast.py (15ea02a2add1672acbeee158a9448720d6093de1)
//	src/transformers/models/cohere/tokenization_cohere_fast.py (49800f79297e4689b0dfea05640ecd164ac4dafb)
//	src/transformers/models/gpt_neox/tokenization_gpt_neox_fast.py (cab70064aefa2bf2717a624f791b40917dd0dd4a)
//
// AutoTokenizer loads the fast class for a name without "Fast"
// ("LlamaTokenizer", as Llama 2 and Mistral folders write it), so both
// spellings count. Every other class (Qwen2Tokenizer,
// PreTrainedTokenizerFast for Llama 3) keeps tokenizer.json's
// post-processor and ignores the flags in transformers 4.x. (Transformers
// 5's TokenizersBackend instead rebuilds for any class whose
// tokenizer_config.json sets a flag, taking the other as false; the two
// agree where a class named here has both flags set, and elsewhere Hone
// follows 4.x.)
func flagClass(name string) (flagDefaults, bool) {
	fast := name
	if !strings.HasSuffix(fast, "Fast") {
		fast += "Fast"
	}
	switch fast {
	case "LlamaTokenizerFast", "CodeLlamaTokenizerFast":
		return flagDefaults{fast, "<s>", "</s>", true, false}, true
	case "GemmaTokenizerFast":
		return flagDefaults{fast, "<bos>", "<eos>", true, false}, true
	case "CohereTokenizerFast":
		return flagDefaults{fast, "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", true, false}, true
	case "GPTNeoXTokenizerFast":
		// Its default tokens are left unknown (""): GPT-NeoX folders name
		// them, and its default is a token the stop-token contract keeps
		// out of code (contracts_modelfolder_test.go).
		return flagDefaults{fast, "", "", false, false}, true
	}
	return flagDefaults{}, false
}

// applyConfig makes the ids Encode adds with addSpecial the ones
// transformers adds for the tokenizer_config.json document data: for the
// classes flagClass names, bos_token before the text when add_bos_token
// and eos_token after it when add_eos_token, replacing what tokenizer.json's
// post_processor said; for other classes, nothing changes. What
// transformers refuses (a flag on with its token null) is an error, and so
// is a token tokenizer.json lacks, which transformers would add as a new
// token past the model's embeddings. It runs once, inside Load.
func (t *Tokenizer) applyConfig(data []byte) error {
	// A map reads keys by their exact names, as transformers' dict does.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("decode json: %w", plainJSONError(err))
	}
	var class string
	if raw, ok := fields["tokenizer_class"]; ok {
		// null or another type: no class, as transformers reads it.
		_ = json.Unmarshal(raw, &class)
	}
	d, ok := flagClass(class)
	if !ok {
		return nil
	}
	addBOS, err := configFlag(fields, "add_bos_token", d.addBOS)
	if err != nil {
		return err
	}
	addEOS, err := configFlag(fields, "add_eos_token", d.addEOS)
	if err != nil {
		return err
	}
	var prefix, suffix []int
	if addBOS {
		id, err := t.configToken(fields, "bos_token", d.bos, "add_bos_token", d.class)
		if err != nil {
			return err
		}
		prefix = []int{id}
	}
	if addEOS {
		id, err := t.configToken(fields, "eos_token", d.eos, "add_eos_token", d.class)
		if err != nil {
			return err
		}
		suffix = []int{id}
	}
	t.prefix, t.suffix = prefix, suffix
	return nil
}

// configFlag reads add_bos_token or add_eos_token: def when absent, false
// for null (Python's None, passed to the class as given).
func configFlag(fields map[string]json.RawMessage, key string, def bool) (bool, error) {
	raw, ok := fields[key]
	if !ok {
		return def, nil
	}
	var b *bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("%s: want true, false or null, got %s", key, raw)
	}
	return b != nil && *b, nil
}

// configToken returns the id of bos_token or eos_token (a string or an
// AddedToken object with content; def when absent), which flag turns on.
func (t *Tokenizer) configToken(fields map[string]json.RawMessage, key, def, flag, class string) (int, error) {
	how := "is true"
	if _, given := fields[flag]; !given {
		how = "is not set, and " + class + " takes it as true"
	}
	raw, given := fields[key]
	if !given && def == "" {
		return 0, fmt.Errorf("%s %s but %s is not set; Hone has no table of %s's default for it: write the token in %s",
			flag, how, key, class, ConfigFile)
	}
	tok := def
	if given {
		var s *string
		if err := json.Unmarshal(raw, &s); err != nil {
			var obj struct {
				Content *string `json:"content"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
				return 0, fmt.Errorf("%s: neither a string nor an object with content: %s", key, raw)
			}
			s = obj.Content
		}
		if s == nil {
			return 0, fmt.Errorf("%s %s but %s is null: transformers refuses to load this tokenizer (%s = True but %s = None); set %s to false or name the token",
				flag, how, key, flag, key, flag)
		}
		tok = *s
	}
	id, ok := t.TokenID(tok)
	if !ok {
		return 0, fmt.Errorf("%s %s but %s %q is not a token of %s: transformers would add it as a new token, which the model has no embedding for",
			flag, how, key, tok, FileName)
	}
	return id, nil
}
