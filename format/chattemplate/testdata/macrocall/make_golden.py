"""Writes golden.json: calls of a template's macros with arguments the
macro has no parameter for (a keyword it does not name, more positional
arguments than it has), and the calls it takes, each with what jinja2
rendered or the error it raised, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestMacroCallsMatchJinja2 renders each with the same
variables; where jinja2 raised, the rendering must fail with its message.

Usage (from the repository root):
  python3 format/chattemplate/testdata/macrocall/make_golden.py > format/chattemplate/testdata/macrocall/golden.json

Left out, as Hone's engine differs there: macros that read varargs or
kwargs (the engine has neither), {% call %} blocks, and macros called
through another name or with *args.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"xs": [1, 2], "t": True, "f": False, "s": "ab"}

M0 = "{% macro m() %}[m]{% endmacro %}"
M2 = "{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}"

CASES = [
    # the calls a macro takes
    M0 + "{{ m() }}",
    M2 + "{{ m(1) }}|{{ m(1, 2) }}|{{ m(a=1) }}|{{ m(b=2, a=1) }}|{{ m(1, b=2) }}|{{ m() }}",
    M2 + "{% set y = m(s) %}{{ y }}|{% if m(1) %}y{% endif %}|{% for c in m(1) %}{{ c }}{% endfor %}|{{ m(m(1)) }}",
    M2 + "{{ m('a=1', b='(k=2)') }}|{{ m(x == 1) }}|{{ m(1)|upper }}|{{ m(1) ~ m(2) }}",
    "{% macro render(msg, tools=none) %}{{ msg.role }}{% if tools %}+{% endif %}{% endmacro %}{{ render({'role': 'u'}, tools=xs) }}",
    # a keyword argument the macro has no parameter for
    M0 + "{{ m(k=1) }}",
    M2 + "{{ m(1, k=1) }}",
    M2 + "{{ m(1, c=3, d=4) }}",
    M2 + "{{ m(1, a=2) }}",
    M2 + "{% set y = m(1, k=2) %}{{ y }}",
    M2 + "{% if m(1, k=2) %}y{% endif %}",
    M2 + "{{ m(m(1, k=2)) }}",
    M2 + "{{ 'x' ~ m(1, k=2)|upper }}",
    "{% macro render(msg, tools=none) %}{{ msg }}{% endmacro %}{% for x in xs %}{{ render(x, add_generation_prompt=true) }}{% endfor %}",
    # more positional arguments than it has
    M0 + "{{ m(1) }}",
    M2 + "{{ m(1, 2, 3) }}",
    M2 + "{{ m(1, 2, k=3) }}",
    # only a call that runs fails
    M2 + "{% if f %}{{ m(1, k=2) }}{% endif %}ok",
    M2 + "{{ m(1, k=2) if f else 'ok' }}",
    # a macro that calls itself, and one defined after the call's text
    "{% macro m(n) %}{% if n > 0 %}{{ n }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(3) }}",
    "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1, k=1) }}{% endif %}{% endmacro %}{{ m(1) }}",
    "{% macro g() %}{{ m(1, k=2) }}{% endmacro %}{% macro m(a) %}{{ a }}{% endmacro %}{{ g() }}",
    # the same name as a method or attribute is no call of the macro
    M0 + "{{ s.m is defined }}|{{ {'m': 1}.m }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
