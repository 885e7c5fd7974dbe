// Package tokconfig reads a model folder's tokenizer_config.json with its
// special_tokens_map.json applied, the way transformers 4.x loads the pair
// (tokenization_utils_base.py, PreTrainedTokenizerBase._from_pretrained):
// a folder saved before transformers 4.34 has no added_tokens_decoder in
// its tokenizer_config.json, and there every key of special_tokens_map.json
// replaces the config's (additional_special_tokens are the config's list
// followed by the map's tokens it lacks); in a newer folder the map is not
// read. Such old folders exist on the Hub: huggyllama/llama-7b writes
// bos_token "" in tokenizer_config.json and "<s>" in the map, so reading
// the config alone gives an empty BOS and no stop token.
package tokconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/hone-rl/hone/format/internal/exactjson"
	"slices"
	"strings"
)

// Read returns the tokenizer_config.json at cfgPath as a JSON object with
// the special_tokens_map.json at mapPath applied (see the package
// comment), nil when neither file exists. Without a map, or with
// added_tokens_decoder in the config, it is the config's bytes unchanged,
// so that their errors are the reader's own; a map that is not an object
// of tokens is an error naming it. (The callers own the file names, as
// the model-folder contract wants.)
func Read(cfgPath, mapPath string) ([]byte, error) {
	cfg, err := exactjson.ReadFile(cfgPath)
	if errors.Is(err, os.ErrNotExist) {
		cfg = nil
	} else if err != nil {
		return nil, err
	}
	smap, err := exactjson.ReadFile(mapPath)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	} else if err != nil {
		return nil, err
	}
	// A map reads keys by their exact names, as Python's dict does.
	fields := map[string]json.RawMessage{}
	if cfg != nil {
		if err := json.Unmarshal(cfg, &fields); err != nil {
			// The reader reports the config's own error.
			return cfg, nil
		}
		if _, ok := fields["added_tokens_decoder"]; ok {
			return cfg, nil
		}
	}
	var over map[string]json.RawMessage
	if err := json.Unmarshal(smap, &over); err != nil {
		return nil, fmt.Errorf("%s: want a JSON object: %w", mapPath, err)
	}
	for key, raw := range over {
		if key == "additional_special_tokens" {
			merged, err := mergeList(fields[key], raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", mapPath, key, err)
			}
			fields[key] = merged
			continue
		}
		if strings.HasSuffix(key, "_token") {
			if _, _, err := Content(raw); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", mapPath, key, err)
			}
		}
		fields[key] = raw
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("%s with %s: %w", cfgPath, mapPath, err)
	}
	return out, nil
}

// mergeList is transformers' legacy merge of additional_special_tokens:
// the config's list (none when it is absent or null), then each token of
// the map's list that the config's does not already hold.
func mergeList(cfgRaw, mapRaw json.RawMessage) (json.RawMessage, error) {
	var add []json.RawMessage
	if err := json.Unmarshal(mapRaw, &add); err != nil || add == nil {
		// Not a list: transformers sets the value as given.
		return mapRaw, nil
	}
	var list []json.RawMessage
	if cfgRaw != nil {
		// The config's own reader refuses a list that is not one.
		_ = json.Unmarshal(cfgRaw, &list)
	}
	var have []string
	for _, r := range list {
		if s, ok, err := Content(r); err == nil && ok {
			have = append(have, s)
		}
	}
	for i, r := range add {
		s, ok, err := Content(r)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		if ok && !slices.Contains(have, s) {
			list = append(list, r)
			have = append(have, s)
		}
	}
	return json.Marshal(list)
}

// Content reads a special token given as a string, an AddedToken object
// with a string content ({"content": ...}), or null (ok false).
func Content(raw json.RawMessage) (string, bool, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == nil {
			return "", false, nil
		}
		return *s, true, nil
	}
	var tok struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || tok.Content == nil {
		return "", false, fmt.Errorf("neither a string, null nor an object with content: %s", raw)
	}
	return *tok.Content, true, nil
}
