// Package chattemplate renders a model's own Jinja chat template the way
// Hugging Face transformers does, so that the text Hone trains on is the
// text the model saw when it was served.
//
// It owns: finding the template in a model folder (tokenizer_config.json's
// chat_template, as a string or as a list of named templates, or a
// chat_template.jinja file beside it; failing both, the chat_template.json of
// a multimodal checkpoint's processor), the special tokens the template may
// reference (bos_token, eos_token, ...), turning OpenAI-style messages and
// tools into the template's variables with their key order preserved, and
// the helpers transformers adds to the Jinja environment: raise_exception,
// strftime_now (with an injectable clock) and a tojson that is Python's
// json.dumps(ensure_ascii=False) with the key order of the input. The
// engine's trim filter is replaced too, by one that strips what Python's
// str.strip() strips (U+001C..U+001F as well), and so are the str methods
// templates cut messages with (split, rsplit, strip, lstrip, rstrip,
// startswith, endswith: strmethods.go; find, rfind, index, rindex, count,
// title, capitalize: strsearch.go; format, with names, .attr and [key]
// and format specs, fields inside specs too: strformat.go), by Python's versions, as are join,
// splitlines, removeprefix, removesuffix, zfill, ljust, rjust, center
// and the isdigit, isalpha, isspace, isalnum, isupper and islower tests,
// which the engine has not (strextra.go), and the title
// filter by jinja2's; the center filter and the escaped, filter and test
// tests, which the engine has not, are ours (rarenames.go), as are the
// slice and attr filters (slicefilter.go). {{ }} and the
// string filter print a value as Python's str() does (pystr.go: floats,
// None, lists and dicts). The list, round, int and format filters are
// jinja2's too (pyfilters.go, pyformat.go: a dict's list is its keys;
// round halves to even; int takes a base; map(attribute=...) reads a
// dotted path such as function.name part by part, mapfilter.go; sort
// compares strings without case and takes attribute=, sortfilter.go;
// selectattr, rejectattr and join read their attribute's dotted path too,
// and join prints items as str() does, attrfilters.go; first and last
// take a string's characters and a dict's keys, and unique compares
// without case and takes attribute=, as min and max do; sum takes
// attribute= and start= and adds as Python's + does, seqfilters.go), and so are the operators +, -, *, **, //, % and / and
// chained comparisons such as 0 < x < 5, unary - and + (an error on what
// is no number), and the odd and even tests (on floats too) (pyops.go,
// pyarith.go): + and - on what Python does not add (1 + 'a', None + 1)
// raise jinja2's TypeError (a string and a dict are still joined, for the
// arguments-as-text re-render), and an undefined operand of +, -, <, >, <= or
// >= its UndefinedError, where the engine gave a guess, 0 or "", as does
// an attribute or item of an undefined name (x.y: "'x' is undefined") or
// of a missing member (y.z.w with y = {}: "'dict object' has no attribute
// 'z'", memberchain.go); a for loop over None, a bool or a number raises
// jinja2's TypeError ("'NoneType' object is not iterable", forfilter.go),
// where the engine ran it zero times. A
// {% call %} block passes its body to the macro as a caller macro, bound
// as jinja2 binds it: defaults, keywords, no outer variable read for a
// parameter left out, and jinja2's TypeError for an argument it has no
// parameter for, unless its body reads varargs or kwargs (callblock.go).
// A name a {% for %} body assigns has its value from outside the loop
// again at the start of each iteration, as jinja2 clears it, where the
// engine kept the last iteration's (looplocals.go).
//
// Templates are compiled with github.com/ardanlabs/jinja, which applies
// transformers' trim_blocks/lstrip_blocks settings (to the text that
// touches the tag only, as jinja2 does: instrument.go's tagSeparator keeps
// the engine from reaching past a tag to the text beyond it; a {% raw %}
// block is given to it as a string, whose text the engine would trim
// around the tags inside; jinja2's "+" markers, which the engine lacks,
// keep the text on their side of a tag by the same empty text). Values are passed to it
// as its insertion-ordered dict type: a plain Go map would reach the template
// with sorted keys, and tool schemas and tool-call arguments rendered through
// tojson would then differ from what the model was trained on.
//
// Rendering is bounded, because the template comes with the model folder
// and runs on every request: the engine has no hooks for limits, so the
// template text is rewritten before it is compiled to call per-render
// counters (instrument.go, limits.go) that stop a rendering with a
// *LimitError when it runs too many steps (loop bodies, macro bodies,
// range items), writes too much text, builds too large a value with
// {% set %} or {{ }}, or nests macro calls too deeply (a {% call %} body
// and the evaluation of a macro's default value count as levels, so that
// a caller passed to itself or a default that calls its macro stops with
// a *LimitError, as jinja2 stops with a RecursionError), and with the
// context's error once the context is done. range is replaced by one that
// refuses huge ranges before building them, tojson by one with the same
// limits, and a panic inside the engine becomes an error (ErrEngine).
// The * operator is ours too (pyops.go): a string or list repeated past
// the value bytes limit stops the rendering before it is built, in a
// macro's default values too (deferDefaults); only where pyOps cannot read
// the code is * left to the engine, where a literal count above 1 MiB is
// refused when the template is compiled and a computed one is not seen.
// Check renders a small conversation once, at load time. Before that, a
// filter or test that jinja2 has not refuses the template as jinja2's
// compiler does, except in an {% if %} or an inline if-expression (that
// span of a tag alone), where jinja2 waits for the rendering (names.go),
// and so do two operands with no comma
// between them inside brackets, f(1 2), which the engine reads as f(1, 2)
// (commas.go), a for tag that names loop among its targets (jinja2's
// "Can't assign to special loop variable"), a test named by what is no name (x is 3) or chained (x is
// odd is true) or an inline if as the condition of an {% if %} or
// {% elif %} ({% if A if A else 0 %}, which jinja2's parser refuses);
// string literals side by side are one string, and a string
// literal's escapes are Python's (strescape.go: \r, \u00e9, \x41, ...,
// which the engine kept as written), as in jinja2.
// A call of one of the template's macros by name with a keyword argument
// the macro has no parameter for, or too many positional ones, fails when
// it runs with jinja2's TypeError (macrocall.go); the engine dropped them.
// A macro whose body reads varargs or kwargs takes those arguments into
// them, as jinja2's does (starmacro.go; varargs is a list, and kwargs
// holds the keywords sorted, where jinja2 keeps the call's order).
// list.append, list.insert, dict.update and the pop of both fail with
// the SecurityError of transformers' ImmutableSandboxedEnvironment
// (mutate.go), where the engine's changed the value in place.
//
// What the limits cannot see, because the engine evaluates it in one call
// with no hook inside: a single expression whose result is far larger than
// its operands — .replace()/.format() with large arguments, a filter such as
// indent(width) on many lines — allocates before anything can measure
// it; and a long string operation is not interrupted by the context,
// which is only checked between steps. Static limits
// (nesting of blocks and brackets, tokens per tag) keep the engine's
// recursive parser and evaluator far below Go's stack limit.
//
// The reference for correctness is @huggingface/jinja (the renderer of
// transformers.js): testdata/templates/golden holds its renderings of the
// conversations in testdata/templates/cases for Qwen2.5, Qwen3, Llama 3.1
// and a ChatML template, and the tests demand byte equality.
package chattemplate
