package hone

import (
	"fmt"
	"go/ast"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The OpenAI chat message shape (role, content as text, null or parts,
// name, tool_calls, tool_call_id, reasoning_content, and a streamed
// delta of it) has one codec: format/chatmsg. A struct that spells out
// "tool_calls" or "tool_call_id" as a JSON key elsewhere is a copy of that
// shape, and copies drift (one dropped reasoning_content, one sorted the
// keys of tool schemas, one joined the text of every part type).
var messageHome = []string{"format/chatmsg"}

// messageTagsOutside lists, as "file:line: Type.Field `tag`", every struct
// field outside home whose JSON key is tool_calls or tool_call_id.
func messageTagsOutside(srcs []sourceFile, home []string) []string {
	var out []string
	for _, sf := range srcs {
		if inAny(sf.rel, home) {
			continue
		}
		typeName := ""
		ast.Inspect(sf.file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				typeName = ts.Name.Name
			}
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, f := range st.Fields.List {
				if f.Tag == nil {
					continue
				}
				tag, err := strconv.Unquote(f.Tag.Value)
				if err != nil {
					continue
				}
				key, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
				if key != "tool_calls" && key != "tool_call_id" {
					continue
				}
				name := "(embedded)"
				if len(f.Names) > 0 {
					name = f.Names[0].Name
				}
				out = append(out, fmt.Sprintf("%s: %s.%s `%s`", sf.fset.Position(f.Pos()), typeName, name, tag))
			}
			return true
		})
	}
	return out
}

func TestContractMessages(t *testing.T) {
	srcs := moduleSources(t)
	pin(t, messageTagsOutside(srcs, messageHome), messageHome,
		"a struct with the OpenAI message's tool_calls/tool_call_id keys is a copy of the message shape; convert through format/chatmsg")
	// The scanner sees the home's own fields, so a passing pin is not a
	// pin that cannot fail.
	if len(messageTagsOutside(srcs, nil)) == 0 {
		t.Error("messageTagsOutside finds no tool_calls field, not even in format/chatmsg")
	}
}
