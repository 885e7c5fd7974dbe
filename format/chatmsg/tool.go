package chatmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Tool is one tool offered to the model, in OpenAI's function-tool shape:
// {"type": "function", "function": {"name", "description", "parameters"}}.
type Tool struct {
	Type        string // "function"; written as "function" when empty
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments as text ("" when
	// none). Its key order is kept: a template prints the schema as it is
	// given, and the model was trained on that text.
	Parameters string
}

type toolWire struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// MarshalJSON writes the tool, leaving out an empty description and empty
// parameters. Parameters that are not valid JSON are an error.
func (t Tool) MarshalJSON() ([]byte, error) {
	var w toolWire
	w.Type, w.Function.Name, w.Function.Description = t.Type, t.Name, t.Description
	if w.Type == "" {
		w.Type = "function"
	}
	if p := bytes.TrimSpace([]byte(t.Parameters)); len(p) > 0 {
		if !json.Valid(p) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		w.Function.Parameters = p
	}
	return encode(w)
}

// UnmarshalJSON reads a tool. Parameters are stored compacted (null reads
// as none), and a tool without a type is a function tool.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var w toolWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*t = Tool{Type: w.Type, Name: w.Function.Name, Description: w.Function.Description}
	if t.Type == "" {
		t.Type = "function"
	}
	if p := bytes.TrimSpace(w.Function.Parameters); len(p) > 0 && string(p) != "null" {
		var b bytes.Buffer
		if err := json.Compact(&b, p); err != nil {
			return fmt.Errorf("function.parameters: %w", err)
		}
		t.Parameters = b.String()
	}
	return nil
}
