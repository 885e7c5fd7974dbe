"""Writes golden.json: str methods called with *args or **kwargs
('{a}'.format(**d), s.split(*xs)), each case with what jinja2 rendered
or raised, set up as testdata/templates/py/check_jinja2.py sets it up
(transformers' settings). TestStrMethodSplatMatchJinja2 renders each with
the same variables and demands the same text, or an error saying what
jinja2's said.

Usage (from the repository root):
  python3 format/chattemplate/testdata/strsplat/make_golden.py > format/chattemplate/testdata/strsplat/golden.json

Left out: what a * or ** of the wrong kind, or two **, raise, which any call's
spread raises alike (splat_test.go).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"d": {"a": 1, "b": [1.0, None]}, "m": {"role": "user", "content": "hi"}, "xs": [3, "x"], "x": 3.14159,
        "text": "a, b ,c", "seps": [","]}

CASES = [
    "{{ '{a}-{b}'.format(**d) }}|{{ '<{role}|{content}>'.format(**m) }}|{{ '{role}{n}'.format(n=1, **m) }}",
    "{{ '{}-{}'.format(*xs) }}|{{ '{1}{0}'.format(*xs) }}|{{ '{:.2f}|{}'.format(*[x, 'y']) }}|{{ '{}{a}'.format(*xs, **d) }}",
    "{{ '{0}{a}'.format(1, **d) }}|{{ '{}{}{}'.format(0, *xs) }}|{{ '{!r}'.format(*['s']) }}",
    "{{ '{}'.format(*'ab') }}|{{ '{}{}'.format(*d) }}",
    "{{ text.split(*seps) }}|{{ text.split(*[',', 1]) }}|{{ text.rsplit(**{'sep': ',', 'maxsplit': 1}) }}",
    "{{ ' x '.strip(*[]) }}|{{ 'xay'.strip(*['xy']) }}|{{ 'abc'.startswith(*[('x', 'a')]) }}|{{ 'abcb'.count(*['b']) }}|{{ 'abc'.find(*['c']) }}",
    "{{ 'abc'.upper(*[]) }}|{{ 'a-b'.replace(*['-', '+']) }}|{{ 'hi'.title(*[]) }}",
    "{{ [1, 2, 1].count(*[1]) }}|{{ [1, 2].index(*[2]) }}",
    "{{ '{c}'.format(**d) }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
