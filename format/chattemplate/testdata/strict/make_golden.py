"""Writes golden.json: templates that jinja2 refuses, when it loads or
renders them, where the engine rendered something (a wrong template
became silently wrong text): arguments a filter has not, an inline if
as an {% if %} test, an undefined operand of + or - or of <, + and - on
what Python does not add or subtract, a
filter jinja2 has not beside an inline if, a call block's default
parameters, each with what
jinja2 did, set up as testdata/templates/py/check_jinja2.py sets it up
(transformers' settings): "load_error" where Environment.from_string
refused it, "error" where rendering raised, else "want".
TestStrictMatchesJinja2 checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/strict/make_golden.py > format/chattemplate/testdata/strict/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"n": 2, "s": "ab", "xs": [1, 2], "none": None, "d": {"a": 1}}

CASES = [
    # center(width=80): no fill character, width an int
    "[{{ s|center(6) }}]|[{{ s|center(width=6) }}]|[{{ s|center }}]|[{{ s|center(true) }}]",
    "{{ s|center(6, 1) }}",
    "{{ s|center(6, '*') }}",
    "{{ s|center(6, fillchar='*') }}",
    "{{ s|center(6, width=6) }}",
    "{{ s|center(none) }}",
    "{{ s|center(width=none) }}",
    "{{ s|center(x) }}",
    # an {% if %} or {% elif %} test is no inline if-expression unless
    # in brackets
    "{% if A if A else 0 %}y{% endif %}",
    "{% if n if n else 0 %}y{% endif %}",
    "{% if n %}{% elif n if n else 0 %}y{% endif %}",
    "{%- if n if n else 0 -%}y{% endif %}",
    "{% if (n if n else 0) %}y{% endif %}|{% if [n if n else 0] %}y{% endif %}|{% if d.if is undefined %}u{% endif %}|{% if n|default(0 if n else 1) %}y{% endif %}",
    "{% for a in xs if a if a else 0 %}{{ a }}{% endfor %}",
    # an undefined operand of + or -, or of an ordering comparison
    "{{ x + 1 }}",
    "{{ 1 + x }}",
    "{{ x - 1 }}",
    "{{ s + x }}",
    "{{ xs + x }}",
    "{{ d.zz + 1 }}",
    "{{ n - d.q }}",
    "{% set y = x + 1 %}{{ y }}",
    "{% if x + 1 %}a{% endif %}",
    "{% for a in xs %}{{ a + b }}{% endfor %}",
    "{{ x < 1 }}",
    "{{ 1 >= x }}",
    "{% if d.zz > 0 %}p{% endif %}",
    "{{ n + 1 }}|{{ s + 'c' }}|{{ xs + [3] }}|{{ n - 1 - 1 }}|{{ n < 3 }}|{{ x is defined and x + 1 }}|{{ (x + 1) if false else 3 }}|{{ x == 1 }}|{{ x ~ 'a' }}|{{ d.a + n }}|{{ xs[n - 1] }}|{{ x is defined and x < 1 }}",
    "{% for a in xs %}{{ loop.index0 + 1 }}{{ loop.revindex - 1 }}{% if loop.index > 1 %}>{% endif %}{% endfor %}",
    # + and - on what Python does not add or subtract
    "{{ xs + 1 }}",
    "{{ 1 + s }}",
    "{{ s + 1 }}",
    "{{ none + 1 }}",
    "{{ s - 1 }}",
    "{{ xs - xs }}",
    "{{ d + d }}",
    "{{ true + 1 }}|{{ true + true }}|{{ 1 + 1.5 }}|{{ 2.5 - 0.5 }}|{{ 1 - 3 }}|{{ 9223372036854775807 - 1 }}|{{ [] + [] }}|{{ 'a' + 'b' + 'c' }}|{{ 1 - 2 - 3 }}|{{ 1 - 2 + 3 }}|{{ (xs + xs)|length }}|{{ -1 + n }}",
    # a filter or test jinja2 has not, in a tag with an inline if: only
    # what the if-expression holds waits for the rendering
    "{% for a in [] %}{{ (a if 1 else 2)|nosuch }}{% endfor %}",
    "{% for a in [] %}{{ [a if 1 else 2, 3|nosuch] }}{% endfor %}",
    "{% for a in [] %}{{ f(1 if 1 else 2)|nosuch }}{% endfor %}",
    "{% for a in [] %}{{ (1 if 1 else 2) is nosuch }}{% endfor %}",
    "{% for a in [] %}{{ f(k=1 if 1 else 2, j=3|nosuch) }}{% endfor %}",
    "{% for a in xs if a|nosuch %}{% endfor %}",
    "{% for a in xs if a if 1 else 0 %}{{ a|nosuch }}{% endfor %}",
    "{% set y = (1 if 1 else 2)|nosuch %}",
    "{{ x|nosuch if 1 else 2 }}",
    "{{ 1 if 3|nosuch }}",
    "{{ 1 if 1 else 2|nosuch }}|{{ d|default(1 if n else 2|nosuch) }}|{{ {'k': 1 if 1 else 2|nosuch, 'j': 2} }}|{{ xs[0 if 1 else 1|nosuch] }}|{{ n if n == 2 else n|nosuch }}",
    # a call block's parameters are a macro's: defaults, keywords, and no
    # variable of the outer scope for one that was not passed
    "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% call(x, y='d') m() %}{{ x }}-{{ y }}{% endcall %}",
    "{% macro m() %}[{{ caller(1, 2) }}|{{ caller(y=5) }}|{{ caller(1, y=none) }}]{% endmacro %}{% call(x, y='d') m() %}{{ x }}-{{ y }}{% endcall %}",
    "{% macro m(a, b=2) %}<{{ a }}{{ b }}{{ caller(a) }}>{% endmacro %}{% for i in xs %}\n  {% call(x, y=i * 10) m(i,) %}\n    {{ x }}:{{ y }}:{{ i }}\n  {% endcall %}\n{% endfor %}|{% call(x, y=xs|length) m(0, b=3) -%}\n  {{ y }}\n{%- endcall %}",
    "{% set y = 'outer' %}{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% call(x, y) m() %}{{ x }}-{{ y }}{% endcall %}",
    "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% call(x, y=x ~ '!') m() %}{{ x }}-{{ y }}{% endcall %}|{% macro p() %}({{ caller() }}){% endmacro %}{% call p() %}plain{% endcall %}|{% call(x) p() %}{{ x }}{% endcall %}",
    "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% call(x, y=f(1)) m() %}{{ x }}-{{ y }}{% endcall %}",
    "{% macro m() %}[{{ caller(1) }}]{% endmacro %}{% call(x) m() %}{{ x }}{% endmacro %}",
    "{% for a in xs if (a if 1 else a|nosuch) %}{{ a }}{% endfor %}|{% macro m(a=1 if 1 else 2|nosuch) %}{{ a }}{% endmacro %}{{ m() }}|{% set y = 1 if 1 else 2|nosuch %}{{ y }}|{% for a in xs if a if 1 else a|nosuch %}{{ a }}{% endfor %}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, loaded_then_rendered)
