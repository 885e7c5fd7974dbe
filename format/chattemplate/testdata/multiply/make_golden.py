"""Writes golden.json: templates that use * in the places a rewrite of it
could go wrong (string literals, {% set %}, filters, loop.index0, {% if %},
tests, inline if-else, slices, calls and their *args, not, comparisons,
comments and raw blocks), each with what jinja2 renders, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers' settings).
TestMultiplyMatchesJinja2 renders each with the same variables.

Usage (from the repository root):
  python3 format/chattemplate/testdata/multiply/make_golden.py > format/chattemplate/testdata/multiply/golden.json

Left out, as Hone's engine differs there whatever * does: `is` binding
tighter than * (jinja2: 2 * 3 is odd is 2 * (3 is odd)), tuples (printed
as lists), varargs, -x|f (jinja2: (-x)|f), ints past 64 bits.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"turns": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "xs": [1, 2, 3], "n": 3, "s": "ab", "d": {"a": 1}, "none": None, "f": 2.5, "t": True}

M = "{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}"

CASES = [
    # string literals and comments hold * as text
    "{{ 'a*b' }}|{{ \"x * y\" ~ '*' }}|{{ '*' * 3 }}|{{ \"=\" * 10 }}|{{ 'a\\'*b' * 2 }}",
    "{# 2 * 3 #}{% raw %}{{ 2 * 3 }}{{ 'x' * -1 }}{% endraw %}{#* x *#}ok",
    "{{ '*'|join(['a', 'b']) }}|{{ 'a*b'.split('*') }}|{{ 'a*b'.replace('*', '-') }}|{{ '{{ 2 * 3 }}' }}",
    # numbers, strings and lists each way round
    "{{ 2 * 3 }}|{{ 3 * 'ab' }}|{{ 'ab' * 0 }}|{{ 'ab' * -1 }}|{{ [1, 2] * 2 }}|{{ [] * 3 }}|{{ [[1]] * 2 }}",
    "{{ t * 3 }}|{{ 3 * t }}|{{ 'x' * t }}|{{ 2 * false }}|{{ f * 2 }}|{{ 2 * f }}|{{ 1.5 * 2 }}|{{ 0.1 * 3 }}|{{ 2 * 3.0 }}",
    "{{ xs * 2 }}|{{ s * n * 2 }}|{{ 2 * n * s }}|{{ ['a'] * 2 + ['b'] }}|{{ 'a' * 2 + 'b' }}|{{ 'a' + 'b' * 2 }}",
    "{{ 3 * 2000000 }}|{{ 2*3*4*5*6 }}|{{ 2 *3 }}{{ 2* 3 }}{{ n*n }}|{{ 2\n* 3 }}",
    # precedence among the arithmetic operators
    "{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 1 - 2 * 3 }}|{{ 10 - 2 * 3 - 1 }}|{{ -n * 2 }}|{{ 2 * -3 }}|{{ n*-1 }}|{{ n * +1 }}",
    "{{ 2 ** 3 * 2 }}|{{ 2 * 2 ** 3 }}|{{ n ** 2 * 2 }}|{{ (-2) ** 2 * 3 }}|{{ 2 * 2 ** -1 }}",
    "{{ 7 * 3 % 4 }}|{{ 7 % 3 * 4 }}|{{ 10 / 4 * 2 }}|{{ 10 // 4 * 2 }}|{{ 6 / 2 * 3 }}|{{ 2 * 6 / 3 }}|{{ 2 * 7 // 2 }}|{{ 2 * 7 % 3 }}",
    "{{ '%s' % 2 * 3 }}|{{ '%d' % (2 * 3) }}|{{ '%s-%s' % (n * 2, 'a' * 2) }}",
    "{{ 2 * 3 ~ 'x' }}|{{ 'x' ~ 2 * 3 }}|{{ 'a' ~ n * 2 ~ 'b' }}|{{ 'x' * n ~ 'y' * n }}",
    # filters bind tighter than *
    "{{ n * '3'|int }}|{{ n * s|length }}|{{ '2' * 3|int }}|{{ n * 2|string }}|{{ 2 * 3|float }}|{{ n * 2|abs }}",
    "{{ xs|length * 2 }}|{{ xs|sum * 2 }}|{{ (xs * 2)|length }}|{{ (s * 3)|length }}|{{ (n * 2)|string * 2 }}",
    "{{ xs|first * 2 }}|{{ xs|last * 2 }}|{{ xs|max * xs|min }}|{{ s|upper * 2 }}|{{ f|int * 2 }}|{{ f * 2|int }}",
    "{{ xs|join(', ') * 2 }}|{{ d|length * 2 }}|{{ d|tojson * 2 }}|{{ nope|default(2 * 3) }}|{{ nope|default('*' * 3) }}",
    # attributes, items, calls and slices
    "{{ d.a * 5 }}|{{ d['a'] * 5 }}|{{ d.get('b', 2) * 3 }}|{{ s.upper() * 2 }}|{{ (s * 2).upper() }}|{{ turns[0].content * 2 }}",
    "{{ xs[1 * 1:] }}|{{ xs[n * 0:n * 1 - 1] }}|{{ 'abcdef'[2*1:] }}|{{ xs[0 * 1] }}|{{ xs[n * 0 - 1] }}|{{ xs[::1 * 2] }}",
    "{{ [2 * 3, 4 * 5] }}|{{ {'k': 2 * 3} }}|{{ {'k': n * 2}.k }}|{{ [n * 2][0] }}|{{ range(2 * 2)|list }}|{{ xs[0] * xs[1] * xs[2] }}",
    # not, and, or, comparisons, in, inline if
    "{{ not n * 0 }}|{{ not 2 * 3 == 6 }}|{{ n * 2 == 6 and n * 3 == 9 }}|{{ t and n * 2 }}|{{ not t or n * 2 }}",
    "{{ n * 2 < 7 < 8 }}|{{ 0 < n * 2 < 10 }}|{{ n * 2 >= 6 }}|{{ n * 2 in [6] }}|{{ 6 in [n * 2] }}|{{ n * 2 not in [6] }}",
    "{{ n * 2 if t else 0 }}|{{ 'y' if n * 2 == 6 else 'n' }}|{{ 'a' * n if t else 'b' }}|{{ 'a' * (n if t else 1) }}|{{ n * 2 > 5 and 'y' or 'n' }}",
    "{{ x.y * 2 if x is defined else 'none' }}|{{ xs is defined and 2 * 3 }}|{{ (n * 2) is even }}|{{ (2 * 3) is odd }}",
    # statements
    "{% set x = n * 2 %}{{ x }}|{% set x = s * n %}{{ x }}|{% set x = 2 * 3 if t else 0 %}{{ x }}|{% set x = {'a': 2 * 3} %}{{ x.a }}",
    "{%- set x = 2*3 -%} {{ x }}|{% set x %}{{ 2 * 3 }}{% endset %}{{ x }}|{% set y = xs * 2 %}{{ y|length }}",
    "{% set ns = namespace(c=1) %}{% for i in range(3) %}{% set ns.c = ns.c * 2 %}{% endfor %}{{ ns.c }}",
    "{% set ns = namespace(items=[]) %}{% set ns.items = ns.items + [1] * 2 %}{{ ns.items }}",
    "{% if n * 2 > 5 %}big{% endif %}|{% if false %}{% elif n * 2 == 6 %}six{% endif %}|{% if '*' in s * 2 %}y{% else %}n{% endif %}",
    "{% for m in turns %}{{ loop.index0 * 2 }},{{ loop.index * 2 - 1 }},{{ '  ' * loop.index }}{{ m.role }};{% endfor %}",
    "{% for m in turns %}{% if loop.index0 * 2 < loop.length %}{{ m.content }}{% endif %}{{ (loop.index0 * 2)|string }}{% endfor %}",
    "{% for i in range(2 * 2) %}{{ i }}{% endfor %}|{% for i in range(n) if i * 2 > 2 %}{{ i }}{% endfor %}|{% for x in xs * 2 %}{{ x }}{% endfor %}",
    "{% for a, b in [(1, 2), (3, 4)] %}{{ a * b }};{% endfor %}|{% for x in xs * 2 if x * 2 > 9 %}{{ x }}{% else %}none{% endfor %}",
    "{% filter upper %}{{ 'a' * 3 }}{% endfilter %}",
    # macros, call blocks and spread arguments
    "{% macro m(a, b) %}{{ a * b }}{% endmacro %}{{ m(2, 3) }}|{{ m('a', 3) }}|{{ m(2 * 3, b=4 * 5) }}|{{ m(b=4*5, a=1) }}",
    "{% macro m(a, b=2*3) %}{{ a * b }}{% endmacro %}{{ m(2) }}|{% macro k(a, b='-'*3) %}{{ a ~ b }}{% endmacro %}{{ k(2) }}",
    "{% macro g(x) %}{{ caller(x * 2) }}{% endmacro %}{% call(v) g(n * 2) %}{{ v * 2 }}{% endcall %}",
    "{% macro g() %}{{ caller() * 2 }}{% endmacro %}{% call g() %}ab{% endcall %}",
    M + "{{ m(*xs[:1]) }}|{{ m(*[1 * 2, 3]) }}|{{ m(1, *[2 * 2]) }}|{{ m(*xs[:1] * 2) }}|{{ m(*(xs * 2)[:2]) }}|{{ m(* xs[:1]) }}",
    M + "{{ m(*[n * 2], b=n * 3) }}|{{ m(*[n * 2], **{'b': n * 3}) }}|{{ m(*[s * 2]) }}|{{ m(*[1] * 2) }}|{{ m(**{'a': 1 * 2}) }}",
    M + "{{ m(*xs[:1])|upper }}|{{ m(*xs[:1]) ~ 'z' }}|{{ m(*xs[:1]) * 2 }}|{{ m(*xs[:1])|length * 2 }}|{{ 'yes' if m(*xs[:2]) else 'no' }}",
    # no space between a keyword and the rewritten expression after it
    "{%if(xs|length)%2==1%}odd{%endif%}|{%for x in(xs)*2%}{{x}}{%endfor%}|{{'a'if(n)*2==6 else'b'}}|{%for x in xs if(x)%2%}{{x}}{%endfor%}|{{ 1 if 3 in(xs)*2 else 0 }}|{%if not(n)%2%}e{%else%}o{%endif%}",
    # errors: jinja2 raises, and so must the rendering
    "{{ none * 2 }}",
    "{{ nope * 2 }}",
    "{{ 'x' * 2.0 }}",
    "{{ d * 2 }}",
    "{{ [1] * 'a' }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
