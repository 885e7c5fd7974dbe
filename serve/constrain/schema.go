package constrain

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// kind is the JSON type a schema node allows.
type kind uint8

const (
	kAny kind = iota
	kObject
	kArray
	kString
	kNumber
	kInteger
	kBool
	kNull
	kEnum
)

// Schema is the subset of JSON Schema the constraint enforces: type
// (object, array, string, number, integer, boolean, null), properties (all
// emitted, in the schema's order), items, enum and const, and maxLength of
// strings. Other keywords that would change which documents are valid
// (anyOf, oneOf, allOf, $ref, patternProperties, a list of types) are
// refused by Compile rather than silently ignored.
type Schema struct {
	kind      kind
	props     []prop  // object with properties; nil: any keys (when anyKeys)
	anyKeys   bool    // object without properties
	items     *Schema // array items; nil: any value
	enum      []string
	maxLength int // string bytes between the quotes, 0: no limit
}

type prop struct {
	key    string // `"name":` as emitted
	schema *Schema
}

// Object is the schema of response_format json_object: any JSON object.
func Object() *Schema { return &Schema{kind: kObject, anyKeys: true} }

var unsupported = []string{"anyOf", "oneOf", "allOf", "not", "$ref", "patternProperties", "if", "then", "else", "dependentSchemas"}

// Compile reads a JSON Schema document.
func Compile(raw json.RawMessage) (*Schema, error) {
	return compile(raw, "schema", 0)
}

func compile(raw json.RawMessage, path string, depth int) (*Schema, error) {
	if depth > 32 {
		return nil, fmt.Errorf("%s: nested too deeply", path)
	}
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("true")) || len(raw) == 0 {
		return &Schema{kind: kAny}, nil
	}
	_, obj, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, k := range unsupported {
		if _, ok := obj[k]; ok {
			return nil, fmt.Errorf("%s: keyword %q is not supported by constrained decoding", path, k)
		}
	}
	if c, ok := obj["const"]; ok {
		lit, err := compact(c)
		if err != nil {
			return nil, fmt.Errorf("%s.const: %w", path, err)
		}
		return &Schema{kind: kEnum, enum: []string{lit}}, nil
	}
	if e, ok := obj["enum"]; ok {
		var vals []json.RawMessage
		if err := json.Unmarshal(e, &vals); err != nil || len(vals) == 0 {
			return nil, fmt.Errorf("%s.enum: want a non-empty array", path)
		}
		s := &Schema{kind: kEnum}
		for _, v := range vals {
			lit, err := compact(v)
			if err != nil {
				return nil, fmt.Errorf("%s.enum: %w", path, err)
			}
			s.enum = append(s.enum, lit)
		}
		return s, nil
	}
	var typ string
	if t, ok := obj["type"]; ok {
		if err := json.Unmarshal(t, &typ); err != nil {
			return nil, fmt.Errorf("%s.type: want one type name (a list of types is not supported)", path)
		}
	}
	switch typ {
	case "":
		if _, ok := obj["properties"]; ok {
			typ = "object"
		} else {
			return &Schema{kind: kAny}, nil
		}
	}
	switch typ {
	case "object":
		s := &Schema{kind: kObject}
		p, ok := obj["properties"]
		if !ok {
			s.anyKeys = true
			return s, nil
		}
		names, props, err := orderedObject(p)
		if err != nil {
			return nil, fmt.Errorf("%s.properties: %w", path, err)
		}
		for _, n := range names {
			sub, err := compile(props[n], path+".properties."+n, depth+1)
			if err != nil {
				return nil, err
			}
			key, _ := json.Marshal(n)
			s.props = append(s.props, prop{key: string(key) + ":", schema: sub})
		}
		return s, nil
	case "array":
		s := &Schema{kind: kArray}
		if it, ok := obj["items"]; ok {
			sub, err := compile(it, path+".items", depth+1)
			if err != nil {
				return nil, err
			}
			s.items = sub
		}
		return s, nil
	case "string":
		s := &Schema{kind: kString}
		if ml, ok := obj["maxLength"]; ok {
			if err := json.Unmarshal(ml, &s.maxLength); err != nil || s.maxLength < 0 {
				return nil, fmt.Errorf("%s.maxLength: want a non-negative integer", path)
			}
		}
		return s, nil
	case "number":
		return &Schema{kind: kNumber}, nil
	case "integer":
		return &Schema{kind: kInteger}, nil
	case "boolean":
		return &Schema{kind: kBool, enum: []string{"true", "false"}}, nil
	case "null":
		return &Schema{kind: kNull, enum: []string{"null"}}, nil
	}
	return nil, fmt.Errorf("%s.type: %q is not a JSON Schema type", path, typ)
}

func compact(v json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// orderedObject decodes a JSON object keeping its key order.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("want a JSON object")
	}
	var keys []string
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, nil, fmt.Errorf("bad key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", k, err)
		}
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = v
	}
	return keys, m, nil
}
