package chattemplate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/hone-rl/hone/format/chatmsg"
)

// hostile are templates that, before rendering had limits, killed the
// process (stack overflow, out of memory, a panic) or kept a core busy
// for good. limit is the Limit of the *LimitError each must stop with;
// "engine" means an ErrEngine error instead.
var hostile = []struct {
	name, src, limit string
}{
	{"recursive macro", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, "macro depth"},
	{"mutual recursion in a call block", `{% macro a() %}{% call b() %}{{ a() }}{% endcall %}{% endmacro %}{% macro b() %}{{ caller() }}{% endmacro %}{{ a() }}`, "macro depth"},
	{"range 10**12", `{% for x in range(10**12) %}{{ x }}{% endfor %}`, "steps"},
	{"nested loops", `{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`, "steps"},
	{"string doubling", `{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}`, "value bytes"},
	{"list doubling", `{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}`, "value bytes"},
	{"doubling through a macro", `{% macro d(s) %}{{ s }}{{ s }}{% endmacro %}{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = d(ns.s) %}{% endfor %}`, "value bytes"},
	{"doubling through a block set", `{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set t %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = t %}{% endfor %}`, "value bytes"},
	{"printing a large value again and again", `{% set s = "x" * 1000000 %}{% for i in range(100000) %}{{ s }}{% endfor %}`, "output bytes"},
	{"literal text in a long loop", `{% for i in range(600000) %}` + strings.Repeat("0123456789", 100) + `{% endfor %}`, "output bytes"},
	{"namespace inside itself", `{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me ~ "" }}`, "value depth"},
	{"tojson with a huge indent", `{{ [[[[[1]]]]]|tojson(indent=1000000000) }}`, "value bytes"},
	{"string repeated by a computed count", `{% set n = 10 ** 11 %}{{ ("x" * n)|length }}`, "value bytes"},
	{"list repeated by a computed count", `{% set n = 10 ** 10 %}{{ ([0] * n)|length }}`, "value bytes"},
	// Characters the engine skips (jinja2 reads U+001F and U+00A0 as
	// spaces) left the whole expression to the engine's own *.
	{"string repeated past a character the engine skips", "{% set n = 10 ** 11 %}{{ (\"x\" *\x1fn)|length }}", "value bytes"},
	{"string repeated past a no-break space", "{% set n = 10 ** 11 %}{{ (\"x\"\u00a0* n)|length }}", "value bytes"},
	// The engine's indent filter panics for a negative width (Python's
	// " " * -1 is "").
	{"negative indent width", `{{ "x"|indent(-1) }}`, "engine"},
	// The engine evaluates a macro's default values before its body, so
	// a default that calls a macro recursed past the body's depth count.
	{"a macro's default calling the macro", `{% macro m(s="x" ~ m()) %}{{ s }}{% endmacro %}{{ m() }}`, "macro depth"},
	{"macro defaults calling each other", `{% macro a(s=b()) %}{{ s }}{% endmacro %}{% macro b(t=a()) %}{{ t }}{% endmacro %}{{ a() }}`, "macro depth"},
	{"a macro's default calling it through a namespace", `{% set f = namespace(g=none) %}{% macro m(s=f.g()) %}{{ s }}{% endmacro %}{% set f.g = m %}{{ m() }}`, "macro depth"},
	// A {% call %} body passed to itself runs without entering a macro.
	{"a caller calling itself", `{% macro m() %}{{ caller(caller) }}{% endmacro %}{% call(c) m() %}{{ c(c) }}{% endcall %}`, "macro depth"},
	{"worst case of the static limits", worstCase(), "macro depth"},
}

// worstCase recurses through as deep an expression and as many nested
// blocks as a template may have; it runs with a Go stack limit of 64 MiB
// (a sixteenth of the default) to show the margin.
func worstCase() string {
	var b strings.Builder
	b.WriteString("{% macro m() %}")
	b.WriteString(strings.Repeat("{% if true %}", maxNesting-1))
	b.WriteString("{{ " + strings.Repeat("not ", maxTagTokens-4) + "m() }}")
	b.WriteString(strings.Repeat("{% endif %}", maxNesting-1))
	b.WriteString("{% endmacro %}{{ m() }}")
	return b.String()
}

const hostileEnv = "HONE_CHATTEMPLATE_HOSTILE"

// TestHostileTemplates renders each hostile template in a child process
// (so that a fatal error or running out of memory shows up as a failure
// instead of killing the tests) and demands a clear error, quickly, with
// the child's peak memory bounded.
func TestHostileTemplates(t *testing.T) {
	if name := os.Getenv(hostileEnv); name != "" {
		renderHostile(t, name)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^TestHostileTemplates$", "-test.v")
			cmd.Env = append(os.Environ(), hostileEnv+"="+h.name)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("child: %v after %v\n%s", err, took, tail(out))
			}
			want := "stopped at its " + h.limit + " limit"
			if h.limit == "engine" {
				want = ErrEngine.Error()
			}
			if !strings.Contains(string(out), "RESULT: "+h.limit+": ") || !strings.Contains(string(out), want) {
				t.Fatalf("want a %q error, child said:\n%s", h.limit, tail(out))
			}
			if took > 30*time.Second {
				t.Errorf("took %v", took)
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && runtime.GOOS == "linux" {
				t.Logf("peak memory %d MiB, %v", ru.Maxrss>>10, took)
				if rss := ru.Maxrss << 10; rss > 768<<20 {
					t.Errorf("child's peak memory %d MiB", rss>>20)
				}
			}
		})
	}
}

// renderHostile is the child's side: it renders one template and prints
// which limit stopped it.
func renderHostile(t *testing.T, name string) {
	for _, h := range hostile {
		if h.name != name {
			continue
		}
		if h.name == "worst case of the static limits" {
			debug.SetMaxStack(64 << 20)
		}
		tmpl, err := New(h.src, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tmpl.Render(context.Background(), Input{})
		var le *LimitError
		switch {
		case errors.As(err, &le):
			fmt.Printf("RESULT: %s: %v\n", le.Limit, err)
		case errors.Is(err, ErrEngine):
			fmt.Printf("RESULT: engine: %v\n", err)
		default:
			t.Fatalf("want a limit error, got %v", err)
		}
		return
	}
	t.Fatalf("no hostile template %q", name)
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// TestRenderStopsWhenCancelled cancels a rendering that would run for
// hours under generous limits: it returns at once with the context's
// error.
func TestRenderStopsWhenCancelled(t *testing.T) {
	tmpl, err := New(`{% for a in range(500000) %}{{ started() }}{% for b in range(500000) %}{{ b }}{% endfor %}{% endfor %}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Limits = Limits{Steps: 1 << 62, OutputBytes: 1 << 62}
	started := make(chan struct{})
	var once sync.Once
	kwargs := map[string]any{"started": jinja.NewCallable("started", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		once.Do(func() { close(started) })
		return jinja.NewString(""), nil
	})}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tmpl.Render(ctx, Input{Kwargs: kwargs})
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLimit) {
			t.Fatalf("got %v, want the context's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rendering still runs 10 s after its context was cancelled")
	}

	// A context already past its deadline stops a rendering before it
	// starts.
	past, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := tmpl.Render(past, Input{Kwargs: kwargs}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past deadline: got %v", err)
	}
}

// TestStaticLimits: templates refused when compiled, each with an error
// that says why, and the largest ones still accepted.
func TestStaticLimits(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat("{% if true %}", n) + "x" + strings.Repeat("{% endif %}", n)
	}
	refused := []struct{ src, want string }{
		{nested(maxNesting + 1), "blocks nested more than 64 deep"},
		{"{{ " + strings.Repeat("(", maxTagBrackets+1) + "1" + strings.Repeat(")", maxTagBrackets+1) + " }}", "brackets nested more than 64 deep"},
		{"{{ 1" + strings.Repeat(" + 1", maxTagTokens/2) + " }}", "more than 1024 tokens"},
		// A default whose brackets close before its end would leave the
		// depth count that guards defaults before the rest runs.
		{`{% macro m(s=0) or (m()) %}{{ s }}{% endmacro %}{{ m() }}`, "unbalanced brackets in the default value of s"},
		{"{{ x is }}", "ends in `is` with no test name"},
		{"{% set y = x is not %}", "ends in `is` with no test name"},
	}
	for _, r := range refused {
		_, err := New(r.src, nil)
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%.60s: got %v, want an error saying %q", r.src, err, r.want)
		}
	}
	accepted := []string{
		`{{ "-" * 80 }}`,
		`{{ "x" * 1000000000000 if false }}{{ 3 * 2000000 }}`,
		`{% macro m(n=3 * 2000000) %}{{ n }}{% endmacro %}{{ m() }}`,
		nested(maxNesting),
		"{{ " + strings.Repeat("(", maxTagBrackets) + "1" + strings.Repeat(")", maxTagBrackets) + " }}",
		"{{ 1" + strings.Repeat(" + 1", maxTagTokens/2-1) + " }}",
		"{{ x is none }}{{ 'is' }}",
	}
	for _, src := range accepted {
		tmpl, err := New(src, nil)
		if err != nil {
			t.Errorf("%.60s: %v", src, err)
			continue
		}
		if _, err := tmpl.Render(t.Context(), Input{}); err != nil {
			t.Errorf("%.60s: %v", src, err)
		}
	}
}

// TestRepeatStopsAtValueLimit: a string or list repeated by a computed
// count larger than the value bytes limit allows stops the rendering
// before the engine allocates it, with a *LimitError naming the limit;
// only a literal count was caught, when the template was loaded, and
// ('x' * n)|length with a large n allocated it all (jinja2 renders it:
// Python's memory is the only bound there).
func TestRepeatStopsAtValueLimit(t *testing.T) {
	rows := []struct {
		src   string
		limit int64
		want  string // "" for a limit error
	}{
		{`{% set n = 17000000 %}{{ ("x" * n)|length }}`, 0, ""},
		{`{% set n = 1000000 %}{{ (n * [0])|length }}`, 0, ""},
		{`{% set n = 9223372036854775807 %}{{ ("ab" * n)|length }}`, 0, ""},
		{`{% set n = 501 %}{{ ("ab" * n)|length }}`, 1000, ""},
		{`{% set n = 500 %}{{ ("ab" * n)|length }}|{{ ("" * 9223372036854775807)|length }}`, 1000, "1000|0"},
		{`{% set n = 16000000 %}{{ ("x" * n)|length }}`, 0, "16000000"},
		// A list of lists is as large as all it holds: 3000 copies of a
		// list of 3000 were taken for 3000 items, and join built a
		// 27 MB string from them (60000 of 60000: about 11 GB).
		{`{{ ([[0] * 3000] * 3000)|join(",")|length }}`, 0, ""},
		{`{% set inner = ["x" * 1000] %}{{ (inner * 20000)|join|length }}`, 0, ""},
		{`{{ ([[0] * 10] * 10)|join(",")|length }}|{{ ([0] * 400000)|length }}`, 0, "309|400000"},
	}
	for _, r := range rows {
		tmpl, err := New(r.src, nil)
		if err != nil {
			t.Fatalf("%s: %v", r.src, err)
		}
		tmpl.Limits = Limits{ValueBytes: r.limit}
		got, err := tmpl.Render(t.Context(), Input{})
		if r.want != "" {
			if err != nil || got != r.want {
				t.Errorf("%s: got %q (%v), want %q", r.src, got, err, r.want)
			}
			continue
		}
		max := r.limit
		if max == 0 {
			max = DefaultValueBytes
		}
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "value bytes" || le.Max != max || !strings.Contains(err.Error(), fmt.Sprintf("value bytes limit of %d", max)) {
			t.Errorf("%s: got %q (%v), want a value bytes limit error of %d", r.src, got, err, max)
		}
	}
}

// TestEmptyListRepeatReturnsAtOnce: an empty list repeated by any count
// is [], as in Python, at once. Its size is 0 bytes whatever the count,
// so the value bytes limit let it through, and the repetition appended
// nothing count times: [] * 9223372036854775807 kept a core busy for good,
// the context unread, where jinja2 prints [].
func TestEmptyListRepeatReturnsAtOnce(t *testing.T) {
	tmpl, err := New(`{% set n = 9223372036854775807 %}{{ [] * n }}|{{ n * [] }}|{{ ([] * n)|length }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		out, err := tmpl.Render(context.Background(), Input{})
		done <- fmt.Sprintf("%s (%v)", out, err)
	}()
	var got string
	select { // format may not import internal/waitfor; the channel is the condition
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("timed out after 30s waiting for [] * 9223372036854775807 to render")
	}
	if want := "[]|[]|0 (<nil>)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestLimitsDoNotChangeResults: what the replaced range and tojson return
// is what the engine's own give, and a negative tojson indent writes what
// Python's json.dumps does instead of panicking.
func TestLimitsDoNotChangeResults(t *testing.T) {
	rows := []struct{ src, want string }{
		{`{{ range(3) }}|{{ range(1, 4) }}|{{ range(5, 0, -2) }}|{{ range(0) }}|{{ range(2, 2) }}|{{ range(3.9) }}|{{ range("4") }}|{{ range(true) }}`,
			"[0, 1, 2]|[1, 2, 3]|[5, 3, 1]|[]|[]|[0, 1, 2]|[0, 1, 2, 3]|[0]"},
		{`{% for i in range(9223372036854775806, 9223372036854775807, 3) %}{{ i }}{% endfor %}`, "9223372036854775806"},
		{`{{ [1, [2]]|tojson(indent=-1) }}`, "[\n1,\n[\n2\n]\n]"},
	}
	for _, r := range rows {
		tmpl, err := New(r.src, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(t.Context(), Input{})
		if err != nil || got != r.want {
			t.Errorf("%s: got %q (%v), want %q", r.src, got, err, r.want)
		}
	}
	for _, src := range []string{`{{ range() }}`, `{{ range(1, 2, 0) }}`} {
		tmpl, _ := New(src, nil)
		_, err := tmpl.Render(t.Context(), Input{})
		plain, _ := jinja.Compile(src)
		_, want := plain.Render(nil)
		if err == nil || want == nil || !strings.HasSuffix(err.Error(), want.Error()) {
			t.Errorf("%s: got %v, the engine's range says %v", src, err, want)
		}
	}
}

// TestLimitErrorNamesTheTemplate: the error says which file and which
// limit, and matches ErrLimit.
func TestLimitErrorNamesTheTemplate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/chat_template.jinja", []byte(`{% for m in messages %}{% for i in range(100) %}{{ m.content }}{% endfor %}{% endfor %}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Limits = Limits{Steps: 1000}
	_, err = tmpl.Render(t.Context(), Input{Messages: []chatmsg.Message{{Role: "user", Content: "hi"}, {Role: "user", Content: "again"}}})
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrLimit) || le.Limit != "steps" || le.Max != 1000 {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{dir + "/chat_template.jinja", "steps limit of 1000", "chat template is at fault"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	// The same conversation fits the default limits.
	tmpl.Limits = Limits{}
	if _, err := tmpl.Render(t.Context(), Input{Messages: []chatmsg.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
}
