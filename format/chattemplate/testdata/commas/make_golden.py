"""Writes golden.json: templates with two operands side by side inside
brackets (call arguments, list, dict and tuple items, subscripts), which
jinja2 refuses when it compiles them (expected token ','), or a {% set %}
or {% for %} target list ending with a comma outside parentheses, which it
refuses too, and the places
where jinja2 reads two operands side by side (adjacent string
literals, one string to jinja2; a test's argument without parentheses), each with what jinja2 did, set up
as testdata/templates/py/check_jinja2.py sets it up (transformers'
settings): "load_error" where Environment.from_string refused it, "error"
where rendering raised, else "want". TestCommasMatchJinja2 checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/commas/make_golden.py > format/chattemplate/testdata/commas/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"xs": [1, 2, 3], "d": {"a": 1, "b": 2}, "s": "ab", "n": 3}

CASES = [
    # refused: two operands with no comma between them
    "{{ range(1 3)|list }}",
    "{{ [1 2] }}",
    "{{ [1 'a'] }}",
    "{{ [n s] }}",
    "{{ [1.5 2] }}",
    "{{ [1 true] }}",
    "{{ {'a': 1 'b': 2} }}",
    "{{ (1 2) }}",
    "{{ s.replace('a' n) }}",
    "{{ xs|join(', ' s) }}",
    "{{ dict(a=1 b=2) }}",
    "{{ [(1) 2] }}",
    "{{ [xs[0] n] }}",
    "{{ [d.a n] }}",
    "{{ [xs|length n] }}",
    "{{ xs[0 1] }}",
    "{{ [n is divisibleby 3 4] }}",
    "{% set y = [1 2] %}ok",
    "{% for x in [1 2] %}{{ x }}{% endfor %}",
    "{% if n in [1 2] %}y{% endif %}ok",
    "{% if false %}{{ [1 2] }}{% endif %}ok",
    "{% macro m(a, b) %}{{ a }}{% endmacro %}{{ m(1 2) }}",
    # a bare target list may not end with a comma ({% set a, = … %})
    "{% set a, = [1] %}{{ a }}",
    "{% set a, b, = [1, 2] %}{{ a }}",
    "{% for a, in [[1]] %}{{ a }}{% endfor %}",
    "{% for a, b, in [[1, 2]] %}{{ a }}{% endfor %}",
    "{% set (a,) = [1] %}{{ a }}|{% set (a, b,) = [1, 2] %}{{ a }}{{ b }}|{% for (a,) in [[1]] %}{{ a }}{% endfor %}|{% set a, b = 1, 2 %}{{ b }}",
    # taken: what jinja2 reads with no comma
    "{{ ['a' 'b'] }}|{{ s.replace('a' 'b', 'c') }}|{{ [\"x\" 'y' \"z\"] }}|{{ {'k' 'l': 'v' 'w'} }}",
    "{{ 'a' 'b' }}|{{ 'a' 'b'|upper }}|{{ '%s' '!' % s }}|{{ 'a' 'b'.upper() }}|{{ 'a'\n'b' ~ 'c' }}|{{ 'x' 'y'[1] }}",
    "{% set y = 'a' 'b' %}{{ y }}|{% if 'a' 'b' == 'ab' %}y{% endif %}|{% for c in 'a' 'b' %}{{ c }}{% endfor %}",
    "{{ [n is divisibleby 3] }}|{{ [n is not divisibleby 3] }}|{{ [n is sameas none] }}|{{ [n is defined] }}",
    "{{ [not n] }}|{{ [1 if n else 2] }}|{{ [n is string] }}|{{ [- 1] }}|{{ [n not in xs] }}|{{ [n in xs and s or d] }}",
    "{{ xs[1:2] }}|{{ d['a'] }}|{{ {'k': [1, (2, 3)]}['k'][1][0] }}|{{ range(1, 3)|list }}|{{ s.replace('a', 'b') }}|{{ dict(a=1, b=2) }}",
    "{% raw %}{{ [1 2] }}{% endraw %}{# [1 2] #}{{ '[1 2]' }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, loaded_then_rendered)
