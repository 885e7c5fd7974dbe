package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/hone-rl/hone/format/trajectory"
)

// CheckCall decides whether a tool call is well formed against the offered
// tools: a known name, arguments that are a JSON object, required
// properties present, and top-level property types that match the
// schema's "type". It returns the decoded arguments, or an error whose text
// is fed back to the model as the tool result.
func CheckCall(c trajectory.ToolCall, tools []trajectory.Tool) (map[string]any, error) {
	var tool *trajectory.Tool
	for i := range tools {
		if tools[i].Name == c.Name {
			tool = &tools[i]
			break
		}
	}
	if tool == nil {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		return nil, fmt.Errorf("unknown tool %q (tools: %v)", c.Name, names)
	}
	args := map[string]any{}
	raw := bytes.TrimSpace([]byte(c.Arguments))
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("arguments of %s are not a JSON object: %v", c.Name, err)
		}
		if args == nil {
			args = map[string]any{}
		}
	}
	if tool.Parameters == "" {
		return args, nil
	}
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal([]byte(tool.Parameters), &schema); err != nil {
		return args, nil // a schema we cannot read constrains nothing
	}
	for _, r := range schema.Required {
		if _, ok := args[r]; !ok {
			return nil, fmt.Errorf("%s: missing required argument %q", c.Name, r)
		}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := schema.Properties[k]
		if !ok {
			if schema.AdditionalProperties != nil && !*schema.AdditionalProperties {
				return nil, fmt.Errorf("%s: unexpected argument %q", c.Name, k)
			}
			continue
		}
		if !typeFits(p.Type, args[k]) {
			return nil, fmt.Errorf("%s: argument %q should be %v", c.Name, k, p.Type)
		}
	}
	return args, nil
}

// typeFits checks a JSON value against a schema "type" (a name or a list).
func typeFits(typ any, v any) bool {
	switch t := typ.(type) {
	case nil:
		return true
	case []any:
		for _, x := range t {
			if typeFits(x, v) {
				return true
			}
		}
		return false
	case string:
		switch t {
		case "string":
			_, ok := v.(string)
			return ok
		case "number":
			_, ok := v.(float64)
			return ok
		case "integer":
			// A number without a fraction, of any size: int64(f)
			// overflows past 2^63, and an id that long is an integer.
			f, ok := v.(float64)
			return ok && f == math.Trunc(f)
		case "boolean":
			_, ok := v.(bool)
			return ok
		case "object":
			_, ok := v.(map[string]any)
			return ok
		case "array":
			_, ok := v.([]any)
			return ok
		case "null":
			return v == nil
		}
	}
	return true
}
