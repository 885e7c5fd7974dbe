"""Writes golden.json: corners of jinja2's loop scoping (the engine has no recursive loops, with
blocks, nor a for-else scope) that the engine's
loop locals (looplocals.go) must keep, with what jinja2 rendered, set up
as testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestLoopScopeCorners checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/loopscope/make_golden.py > format/chattemplate/testdata/loopscope/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"xs": [1, 2, 3]}

CASES = [
    # a loop inside a macro: the macro's own name is read, then set
    "{% macro m(xs) %}{% set f = true %}{% for i in xs %}{% if not f %},{% endif %}{{ i }}{% set f = false %}{% endfor %}{% endmacro %}{{ m(xs) }}|{{ m(xs) }}",
    "{% macro m() %}{% for i in xs %}{{ k }}{% set k = i %}{% endfor %}{% endmacro %}{% set k = 'g' %}{{ m() }}",
    # namespace attributes persist across iterations
    "{% set ns = namespace(f=true) %}{% for i in xs %}{% if not ns.f %},{% endif %}{{ i }}{% set ns.f = false %}{% endfor %}",
    "{% set ns = namespace(c=0) %}{% for i in xs %}{% set ns = namespace(c=ns.c + i) %}{{ ns.c }}{% endfor %}|{{ ns.c }}",
    "{% for i in xs %}{% set ns = namespace(c=i) %}{% set ns.c = ns.c + 1 %}{{ ns.c }}{% endfor %}",
    # set inside if inside for
    "{% set x = 'o' %}{% for i in xs %}{% if i > 1 %}{% if i > 2 %}{% set x = i %}{% endif %}{% endif %}{{ x }}{% endfor %}{{ x }}",
    "{% set x = 'o' %}{% for i in xs %}{% if i == 1 %}{% set x = 'a' %}{% else %}{% set x = 'b' %}{% endif %}{{ x }}{% endfor %}{{ x }}",
    # a loop over a loop, each assigning the same name
    "{% set x = 0 %}{% for i in xs %}{% for j in xs %}{{ x }}{% set x = x + 1 %}{% endfor %}{{ x }};{% set x = x + 10 %}{% endfor %}{{ x }}",
    "{% set x = 0 %}{% for i in xs %}{{ x }}{% for j in xs %}{% set x = j %}{% endfor %}{% set x = i %}{% endfor %}{{ x }}",
    "{% for i in xs %}{% for j in xs %}{% if j > 1 %}{{ y }}{% endif %}{% set y = j %}{% endfor %}{% endfor %}",
    # first assigned inside the loop, read after it
    "{% for i in xs %}{% set z = i %}{% endfor %}[{{ z }}]",
    "{% set z = 'o' %}{% for i in xs %}{% set z = i %}{% endfor %}{{ z }}",
    # for-else
    "{% set x = 'o' %}{% for i in xs %}{{ x }}{% set x = i %}{% else %}{{ x }}{% endfor %}{{ x }}",
    "{% set x = 'o' %}{% for i in xs if i != x %}{{ x }}{% set x = i %}{% endfor %}",
    # loop variable rebound, loop.previtem, loop.cycle
    "{% set i = 'o' %}{% for i in xs %}{{ i }}{% endfor %}{{ i }}",
    "{% for i in xs %}{% if not loop.first %}{{ loop.previtem }}{{ acc }}{% endif %}{% set acc = i %}{% endfor %}",
    # break / continue
    "{% set x = 0 %}{% for i in xs %}{{ x }}{% if i == 2 %}{% continue %}{% endif %}{% set x = i %}{% endfor %}{{ x }}",
    # call block in a loop
    "{% macro w() %}<{{ caller() }}>{% endmacro %}{% set x = 0 %}{% for i in xs %}{% call w() %}{{ x }}{% endcall %}{% set x = i %}{% endfor %}",
    # filter block
    "{% set x = 'a' %}{% for i in xs %}{% filter upper %}{{ x }}{% endfilter %}{% set x = 'b' %}{% endfor %}",
    # a filter block's end tag does not end the loop's body: the loops
    # after it still set their names back
    "{% for i in xs %}{% filter upper %}{{ i }}{% endfilter %}{% endfor %}{% set f = true %}{% for i in xs %}{% if not f %},{% endif %}{{ i }}{% set f = false %}{% endfor %}",
    "{% set f = true %}{% for i in xs %}{% filter upper %}a{% endfilter %}{% if not f %},{% endif %}{{ i }}{% set f = false %}{% endfor %}",
    # names that only look assigned: tuple unpacking with parentheses
    "{% set a, b = 0, 0 %}{% for i in xs %}{{ a }}{{ b }}{% set (a, b) = (i, a) %}{% endfor %}",
    # a set whose value has an '=' in a comparison
    "{% set x = 0 %}{% for i in xs %}{{ x }}{% set x = i == 2 %}{% endfor %}",
    "{% set x = 'o' %}{% for i in xs %}{{ x }}{% set x = {'k': i}['k'] %}{% endfor %}",
    # a string holding tag-like text
    "{% set x = 'o' %}{% for i in xs %}{{ x ~ '{% set x %}' }}{% set x = i %}{% endfor %}",
    # many messages style: Llama 3 / Mistral
    "{%- set sys = none %}{%- for m in xs %}{%- if loop.first %}{%- set sys = m %}{%- endif %}{{ sys }}{%- endfor %}",
]

if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
