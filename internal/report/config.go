package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Param is one hyperparameter: a dotted key ("loss.beta") and its value as
// JSON writes it (strings unquoted).
type Param struct {
	Key, Value string
}

// FlattenConfig turns a run's train_config.json into parameters in the
// file's own order: nested objects become dotted keys, arrays stay one
// compact JSON value ("targets": ["q_proj","v_proj"]). name is used in
// errors.
func FlattenConfig(data []byte, name string) ([]Param, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s: not a JSON object", name)
	}
	var out []Param
	if err := flattenObject(dec, "", &out); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the object was cut short
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	}
	return out, nil
}

// flattenObject reads the members of an object whose '{' was read, up to
// and including its '}'.
func flattenObject(dec *json.Decoder, prefix string, out *[]Param) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := prefix + tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		raw = bytes.TrimSpace(raw)
		switch {
		case len(raw) > 0 && raw[0] == '{':
			sub := json.NewDecoder(bytes.NewReader(raw))
			sub.UseNumber()
			if _, err := sub.Token(); err != nil {
				return err
			}
			if err := flattenObject(sub, key+".", out); err != nil {
				return err
			}
		case len(raw) > 0 && raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			*out = append(*out, Param{key, s})
		default:
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				return err
			}
			*out = append(*out, Param{key, b.String()})
		}
	}
	_, err := dec.Token() // the closing '}'
	return err
}
