package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/hone-rl/hone/format/chatmsg"
)

// renderPlain renders the named template without the limits: compiled
// from the source with only tojson, trim and str methods renamed, with the engine's own range.
// This is how templates rendered before the limits.
func renderPlain(t *Template, name string, in Input) (string, error) {
	ins, err := instrument(lexerSource(t.sources[name]), false)
	if err != nil {
		return "", err
	}
	c, err := jinja.Compile(ins.source)
	if err != nil {
		return "", err
	}
	data, err := t.variables(in, t.compiled[name].parts, argsDict)
	if err != nil {
		return "", err
	}
	data[hookOut] = jinja.NewCallable(hookOut, printFloat)
	data[tojsonName] = jinja.NewCallable("tojson", tojsonFilter)
	data[trimName] = jinja.NewCallable("trim", trimFilter)
	data[stringName] = jinja.NewCallable("string", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return jinja.NewString(pythonStr(args[0])), nil
	})
	data[mulName] = jinja.NewCallable("*", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return pyMul(args, func(what string, seq jinja.Value, count int64) error {
			unit, _ := repeatUnit(seq, DefaultValueBytes)
			if repeatFits(DefaultValueBytes, unit, count) {
				return nil
			}
			return fmt.Errorf("a %s of %d bytes repeated %d times", what, unit, count)
		})
	})
	plainRepr := func(v jinja.Value) (string, error) { return pythonStr(v), nil }
	data[addName] = jinja.NewCallable("+", pyAddSub(false, plainRepr))
	data[subName] = jinja.NewCallable("-", pyAddSub(true, plainRepr))
	for k, v := range strMethodCallables() {
		data[k] = v
	}
	for k, v := range strBoundCallables() {
		data[k] = v
	}
	// The mutators refuse as transformers' sandbox does.
	for k, v := range mutatorCallables() {
		data[k] = v
	}
	for k, v := range pyCallables() {
		data[k] = v
	}
	return c.RenderValues(data)
}

// printFloat is the output hook without the limits: the value as {{ }}
// prints it (printed: a float, None, a list or a dict as Python's str()).
func printFloat(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return empty, nil
	}
	return printed(args[0]), nil
}

// modelFolders are the folders in testdata with a chat template.
var modelFolders = []string{
	"../../testdata/templates/qwen3", "../../testdata/templates/qwen2.5", "../../testdata/templates/llama3.1",
	"../../testdata/templates/chatml", "../../testdata/tokenizers/qwen3", "../../testdata/tokenizers/llama3",
	"../../serve/testdata/tiny",
}

// TestInstrumentedRendersTheSame renders every conversation of the golden
// cases with every template in testdata, with and without the limits'
// hooks, and demands the same bytes (or the same error).
func TestInstrumentedRendersTheSame(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(templatesDir, "cases", "*.json"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	n := 0
	for _, dir := range modelFolders {
		tmpl, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range cases {
			in := readCase(t, cp)
			for _, agp := range []bool{false, true} {
				in.AddGenerationPrompt = agp
				name, err := tmpl.pick(in)
				if err != nil {
					t.Fatal(err)
				}
				got, gerr := tmpl.Render(t.Context(), in)
				want, werr := renderPlain(tmpl, name, in)
				if got != want || (gerr == nil) != (werr == nil) {
					t.Fatalf("%s, %s, agp %v: with limits %v, without %v\n%s", dir, filepath.Base(cp), agp, gerr, werr, firstDiff(got, want))
				}
				n++
			}
		}
	}
	t.Logf("%d renderings compared", n)
}

// TestInstrumentWhitespaceControl renders random templates made of every
// kind of tag, with and without "-" markers, around text of spaces, tabs,
// newlines and letters, with and without the hooks, and demands the same
// output: the inserted tags must not change trim_blocks, lstrip_blocks or
// the markers' trimming.
func TestInstrumentWhitespaceControl(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		src := randomTemplate(r)
		same, err := sameWithAndWithoutHooks(t.Context(), src)
		if err != nil {
			t.Fatalf("template %d %q: %v", i, src, err)
		}
		if !same {
			t.Fatalf("template %d renders differently with the hooks:\n%q", i, src)
		}
	}
}

// sameWithAndWithoutHooks reports whether src renders the same with and
// without the hooks. A template the engine refuses, or one that fails
// within the limits, compares as the same when the plain rendering fails
// too; one stopped by a limit is not rendered without them.
func sameWithAndWithoutHooks(ctx context.Context, src string) (bool, error) {
	if _, err := jinja.Compile(src); err != nil {
		return true, nil
	}
	tmpl, err := New(src, map[string]string{"eos_token": "</s>"})
	if err != nil {
		var se *staticError
		if errors.As(err, &se) {
			return true, nil
		}
		return false, err
	}
	tmpl.Clock = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	tmpl.Limits = Limits{Steps: 100000, OutputBytes: 1 << 20, ValueBytes: 1 << 18, MacroDepth: 20}
	in := Input{
		Messages: []chatmsg.Message{{Role: "system", Content: "  sys\n"}, {Role: "user", Content: "hi\n\n"}, {Role: "assistant", Content: "\tyes "}},
		Tools:    []json.RawMessage{checkTool},
		Kwargs:   map[string]any{"flag": true, "n": 3},
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := tmpl.Render(ctx, in)
	if errors.Is(err, ErrLimit) || errors.Is(err, ErrEngine) || ctx.Err() != nil {
		// The plain rendering could run without end or crash.
		return true, nil
	}
	want, werr := renderPlain(tmpl, "default", in)
	if (err == nil) != (werr == nil) {
		return false, fmt.Errorf("with limits: %v, without: %v", err, werr)
	}
	return got == want, nil
}

// randomTemplate strings together random tags and text.
func randomTemplate(r *rand.Rand) string {
	var b strings.Builder
	randomBlock(r, &b, 0)
	return b.String()
}

var texts = []string{"", " ", "  ", "\t", "\n", "\n\n", " \n ", "\n  ", "x", " x ", "\nx\n", "  y\n", "\r\n", "\n\t \n"}

func randomText(r *rand.Rand) string { return texts[r.IntN(len(texts))] + texts[r.IntN(len(texts))] }

func mark(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return "-"
	}
	return ""
}

// stmt writes {% body %} with random markers.
func stmt(r *rand.Rand, b *strings.Builder, body string) {
	b.WriteString("{%" + mark(r) + " " + body + " " + mark(r) + "%}")
}

func randomBlock(r *rand.Rand, b *strings.Builder, depth int) {
	for range 1 + r.IntN(4) {
		b.WriteString(randomText(r))
		k := r.IntN(12)
		if depth > 3 && k < 6 {
			k += 6
		}
		switch k {
		case 0:
			stmt(r, b, "for m in messages")
			randomBlock(r, b, depth+1)
			if r.IntN(3) == 0 {
				stmt(r, b, "else")
				randomBlock(r, b, depth+1)
			}
			stmt(r, b, "endfor")
		case 1:
			stmt(r, b, "if flag")
			randomBlock(r, b, depth+1)
			stmt(r, b, "else")
			randomBlock(r, b, depth+1)
			stmt(r, b, "endif")
		case 2:
			stmt(r, b, "macro mc(a)")
			randomBlock(r, b, depth+1)
			stmt(r, b, "endmacro")
			b.WriteString(randomText(r) + "{{" + mark(r) + " mc(1) " + mark(r) + "}}")
		case 3:
			stmt(r, b, "set blk")
			randomBlock(r, b, depth+1)
			stmt(r, b, "endset")
			b.WriteString("{{ blk }}")
		case 4:
			b.WriteString("{% macro cm() %}[{{ caller() }}]{% endmacro %}")
			stmt(r, b, "call cm()")
			randomBlock(r, b, depth+1)
			stmt(r, b, "endcall")
		case 5:
			stmt(r, b, "for i in range(n)")
			randomBlock(r, b, depth+1)
			stmt(r, b, "endfor")
		case 6:
			b.WriteString("{{" + mark(r) + " m.content if m is defined else eos_token " + mark(r) + "}}")
		case 7:
			stmt(r, b, "set v = tools|tojson")
			b.WriteString("{{ v|length }}")
		case 8:
			b.WriteString("{#" + mark(r) + " c " + mark(r) + "#}")
		case 9:
			stmt(r, b, "raw")
			b.WriteString(randomText(r) + "{{ x -}} {%- for %}" + randomText(r))
			stmt(r, b, "endraw")
		case 10:
			stmt(r, b, "set ns = namespace(k=1)")
			stmt(r, b, "set ns.k = ns.k + 1")
			b.WriteString("{{ ns.k }}")
		default:
			b.WriteString("{{" + mark(r) + " '%}' ~ \"}}\" " + mark(r) + "}}")
		}
	}
	b.WriteString(randomText(r))
}
