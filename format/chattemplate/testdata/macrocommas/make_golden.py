"""Writes golden.json: macros and {% call %} blocks whose default values
hold a comma, in a string or between brackets (sep=", ", a=[1, 2]),
each with what jinja2 rendered or raised, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestMacroDefaultCommasMatchJinja2 renders each with the same
variables and demands the same text, or an error saying what jinja2's
said: the engine cuts a macro's parameters at every comma, so Hone moves
such a default into the macro's body.

Usage (from the repository root):
  python3 format/chattemplate/testdata/macrocommas/make_golden.py > format/chattemplate/testdata/macrocommas/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"xs": [1, 2, 3], "fns": [{"name": "f"}, {"name": "g"}]}

CASES = [
    "{% macro join(xs, sep=', ') %}{{ xs|join(sep) }}{% endmacro %}{{ join([1, 2]) }}|{{ join([1, 2], '-') }}|{{ join([1, 2], sep='+') }}",
    "{% macro m(a='a,b', b=2) %}{{ a }}{{ b }}{% endmacro %}{{ m() }}|{{ m(1) }}|{{ m(b=3) }}|{{ m(none) }}|{{ m(a=none, b=none) }}",
    "{% macro m(a=[1, 2], b={'k': 'v', 'w': 1}, c=(1, 2)|list) %}{{ a }}|{{ b }}|{{ c }}{% endmacro %}{{ m() }}|{{ m([]) }}",
    "{% macro m(n, pad=' ' * 2, ks=range(1, 3)|list, s='{}, {}'.format(1, 2)) %}[{{ pad }}{{ n }}]{{ ks }}{{ s }}{% endmacro %}{{ m(1) }}",
    "{% macro m(xs, names=xs|map(attribute='name')|join(', ')) %}{{ names }}{% endmacro %}{{ m(fns) }}|{{ m([], 'x') }}",
    "{% macro m(a=1, b=a ~ ',' ~ a, c=[a, b]) %}{{ a }}|{{ b }}|{{ c }}{% endmacro %}{{ m() }}|{{ m(2) }}|{{ m(2, 'x') }}",
    "{% macro m(a, sep=', ') %}{{ a|join(sep) }}{{ varargs|list }}{{ kwargs }}{% endmacro %}{{ m(xs) }}|{{ m(xs, '/', 4) }}",
    "{% macro m(t, end=',\\n') -%}\n{{ t }}{{ end }}\n{%- endmacro %}{% for x in xs %}{{ m(x) }}{% endfor %}",
    "{% macro m() %}{{ caller() }}{{ caller([3, 4]) }}{% endmacro %}{% call(x=[1, 2], sep=', ') m() %}{{ x|join(sep) }};{% endcall %}",
    "{% macro m(a='a,b') %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "{% macro m(a='a,b') %}{{ a }}{% endmacro %}{{ m(z=1) }}",
    "{% macro m(a=[1, 2][5]) %}{{ a }}{% endmacro %}{{ m() }}|{{ m(1) }}",
    # a later default without a comma reads the one before it
    "{% macro m(a=[1, 2], b=a, c=a|length, d=b) %}{{ b }}|{{ c }}|{{ d }}{% endmacro %}{{ m() }}|{{ m([3]) }}|{{ m(b=7) }}",
    "{% macro m(sep=', ', end=sep ~ '.') %}{{ end }}{% endmacro %}{{ m() }}|{{ m('-') }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
