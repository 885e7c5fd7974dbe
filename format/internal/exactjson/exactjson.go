// Package exactjson decodes a JSON object into a struct by its keys' exact
// names. The configuration files Hone reads from other tools
// (config.json, generation_config.json, adapter_config.json) are read
// there as Python dicts, where "Rope_Theta" or "USE_RSLORA" is a key of
// its own that nothing reads; encoding/json matches struct fields case-
// insensitively and lets such a key fill the field, or win over the real
// key written before it, so the same file would mean another model here.
package exactjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Unmarshal decodes the JSON object data into the struct v points to,
// reading each exported field only from the key its json tag (or, without
// one, its Go name) spells exactly; other keys are ignored. A key given
// twice keeps its last value, as Python's json module and encoding/json do.
func Unmarshal(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("exactjson: want a pointer to a struct, got %v", t)
	}
	var kv map[string]json.RawMessage
	if err := json.Unmarshal(data, &kv); err != nil {
		return err
	}
	known := names(t.Elem())
	for k := range kv {
		if !known[k] {
			delete(kv, k)
		}
	}
	exact, err := json.Marshal(kv)
	if err != nil {
		return err
	}
	return json.Unmarshal(exact, v)
}

// names returns the JSON keys of struct type t's exported fields.
func names(t reflect.Type) map[string]bool {
	known := map[string]bool{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		known[name] = true
	}
	return known
}
