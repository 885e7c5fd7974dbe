"""Writes golden.json: macros with default values and {% call %} blocks,
each with what jinja2 rendered, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestMacroDefaultsMatchJinja2 renders each with the same
variables and demands the same text: Hone wraps every default value and
every {% call %} body in a count of macro nesting, which must change no
value (falsy defaults included) and must end each level it starts (the
loops run more calls than the nesting limit allows at once).

Usage (from the repository root):
  python3 format/chattemplate/testdata/macrodefault/make_golden.py > format/chattemplate/testdata/macrodefault/golden.json

Left out: defaults that recurse without end (jinja2's RecursionError);
TestHostileTemplates demands a macro depth error for those.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered, write_golden  # noqa: E402

VARS = {"xs": [1, 2], "s": "ab"}

CASES = [
    # falsy and container defaults pass through as they are
    "{% macro m(a='', b=0, c=none, d=false, e=[], f={}) %}[{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ f }}]{% endmacro %}{{ m() }}|{{ m(1, 2, 3, 4, 5, 6) }}",
    "{% macro m(a=1 + 2 * 3, b='x' ~ 'y', c=xs|length, d=(1 if xs else 2)) %}{{ a }},{{ b }},{{ c }},{{ d }}{% endmacro %}{{ m() }}",
    "{% macro m(a='(', b=')', c='=') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m() }}",
    # a default that calls another macro, which has a default of its own
    "{% macro h(t='H') %}{{ t }}{% endmacro %}{% macro g(u=h() ~ '+') %}{{ u }}{% endmacro %}{% macro m(v=g() ~ '!') %}{{ v }}{% endmacro %}{{ m() }}|{{ m('x') }}",
    # more calls than the nesting limit, each level ended
    "{% macro m(s='a') %}{{ s }}{% endmacro %}{% set ns = namespace(n=0) %}{% for i in range(300) %}{% set ns.n = ns.n + m()|length %}{% endfor %}{{ ns.n }}",
    "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% for i in range(150) %}{% call(x) m() %}{{ x }}{% endcall %}{% endfor %}",
    "{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}{% call m() %}in{% endcall %}{% endcall %}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered)
