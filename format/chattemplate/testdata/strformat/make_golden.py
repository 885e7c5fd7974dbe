"""Writes golden.json: Python's str.format as templates call it
('{}: {}'.format(a, b)), with names, attributes, items, conversions and
format specs, each case with what jinja2 rendered or raised, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings: the sandbox's formatter). TestStrFormatMatchJinja2 renders
each with the same variables and demands the same text, or an error
saying what jinja2's said.

Usage (from the repository root):
  python3 format/chattemplate/testdata/strformat/make_golden.py > format/chattemplate/testdata/strformat/golden.json

Left out: !a, and .format(**d), which reaches the engine's method.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"m": {"role": "user", "content": "hi", "tool_calls": [{"name": "f"}]}, "x": 3.14159, "n": 7, "big": 1234567,
        "neg": -42, "d": {"a": 1, "b": [1.0, None]}, "fmt": "<{role}|{content}>"}

CASES = [
    "{{ '{}: {}'.format(m.role, m.content) }}|{{ '{role}'.format(role=m.role) }}|{{ '{0}{1}{0}'.format('a', 'b') }}",
    "{{ fmt.format(role=m.role, content=m.content) }}|{{ fmt.format(role=1, content=none) }}",
    "{{ '{}|{}|{}|{}|{}'.format(none, true, 1.0, d, [1, 'a']) }}",
    "{{ '{{x}}'.format() }}|{{ '{{{}}}'.format(1) }}|{{ '}}{{'.format() }}",
    "{{ '{0.role}'.format(m) }}|{{ '{0[content]}'.format(m) }}|{{ '{m[tool_calls][0][name]}'.format(m=m) }}|[{{ '{0[nope]}'.format(m) }}]|[{{ '{0[5]}'.format([1]) }}]|{{ '{0[1]}'.format('ab') }}",
    "{{ '{0.tool_calls.0.name}'.format(m) }}",
    "{{ '{0[nope][x]}'.format(m) }}",
    "{{ '{0[3].x}'.format([1]) }}",
    "{{ '{:>3}'.format(m.nope) }}",
    "{{ '{!r}'.format('a') }}|{{ '{!s:>4}'.format(1) }}|{{ '{0!r:<8}|'.format('b') }}|{{ '{!r}'.format(d) }}",
    "{{ '{:.2f}'.format(x) }}|{{ '{:>5}|{:<5}|{:^5}|{:^6}'.format('a', 'b', 'c', 'd') }}|{{ '{:05d}'.format(n) }}|{{ '{:,}'.format(big) }}|{{ '{:_}'.format(big) }}",
    "{{ '{:*^9}'.format('ab') }}|{{ '{:+d}'.format(n) }}|{{ '{: d}'.format(n) }}|{{ '{:.3}'.format('abcdef') }}|{{ '{:e}'.format(x) }}|{{ '{:E}'.format(x) }}|{{ '{:%}'.format(0.5) }}|{{ '{:.1%}'.format(0.25) }}|{{ '{:10.3f}'.format(x) }}",
    "{{ '{:x}|{:X}|{:#x}|{:o}|{:#o}|{:b}|{:#b}|{:_b}|{:c}'.format(255, 255, 255, 8, 8, 5, 5, 255, 65) }}",
    "{{ '{:g}|{:g}|{:g}|{:.3g}|{:G}|{:.3}|{:.3}|{:10}|{:<10}|'.format(x, 1e20, 0.0001, 1234.5, 1e-10, x, 3.0, 1.5, 2.5) }}",
    "{{ '{:5}|{:<5}|{:05}|{:=+6}|{:06.2f}|{:,.2f}|{:+.1f}|{:d}|{:>4}'.format(neg, neg, neg, n, -x, 1234567.891, x, true, false) }}",
    "{{ '{:f}|{:.0f}|{:#.0f}|{:.2e}|{:.1e}|{:.2f}'.format(n, 2.5, 2.0, 12345, 1e300, -0.001) }}",
    "{{ '{:.2f}'.format(none) }}",
    "{{ '{:d}'.format('a') }}",
    "{{ '{:d}'.format(x) }}",
    "{{ '{:.2d}'.format(n) }}",
    "{{ '{:+}'.format('a') }}",
    "{{ '{:,s}'.format('a') }}",
    "{{ '{:=5}'.format('a') }}",
    "{{ '{:q}'.format(n) }}",
    "{{ '{:5x5}'.format(n) }}",
    "{{ '{} {}'.format(1) }}",
    "{{ '{name}'.format(1) }}",
    "{{ '{0} {}'.format(1, 2) }}",
    "{{ '{} {0}'.format(1, 2) }}",
    "{{ '{!x}'.format(1) }}",
    "{{ 'a}b'.format() }}",
    "{{ 'a{b'.format() }}",
    "{{ '{[role]}'.format(m) }}",
    # a name is a position only when it is all digits; only a field that
    # is all digits, no .attr or [key] after it, turns numbering manual
    "{{ '{-1}'.format(1, 2) }}",
    "{{ '{+0}'.format(1, 2) }}",
    "{{ '{0[+1]}|{0[-1]}|'.format([1, 2]) }}|{{ '{0[-1]}|{0[+1]}'.format({'-1': 'a', '+1': 'b'}) }}",
    # the spec's edges: a precision past 1000, digits past an int, # with
    # g, 0 before a string's width, 0 padding that groups, , with x
    "{{ '{:.1500}'.format('x' * 3000)|length }}|{{ '{:.1200f}'.format(1.5)|length }}|{{ '{:.1100e}'.format(2.5)|length }}",
    "{{ '{:99999999999999999999}'.format(1) }}",
    "{{ '{:.99999999999999999999}'.format(1.5) }}",
    "{{ '{:#g}|{:#.3g}|{:#}|{:#.3}|{:#g}|{:#G}'.format(1.5, 2.0, 3.0, 4.0, 1e20, 1e-10) }}",
    "{{ '{:#g}|{:#g}|{:#g}|{:#.0g}|{:#g}|{:#.10g}'.format(0.0001, 0.0, 123456.0, 7.0, -1234567.0, 0.1) }}|{{ '{:#.2000000g}'.format(0.5)|length }}",
    "{{ '{:05}|{:03}|{:0>4}'.format('a', 'abcd', 'b') }}",
    "{{ '{:010,}|{:010,.1f}|{:07_}|{:+09,}|{:09_x}|{:010,}'.format(1234, 1234.5, 12345, 1234, 65535, -1234) }}",
    "{{ '{:,x}'.format(1234) }}",
    "{{ '{:<05x}|{:<020}|{:>05}|{:*<05}|{:^07.1f}'.format(7, 1e-05, 'a', 3, 2.5) }}",
    "{{ '{:+c}'.format(65) }}",
    "{{ '{:#c}'.format(65) }}",
    "{{ '{: }'.format('a') }}",
    "{{ '{:.2s}'.format(5) }}",
    "{{ '{:,s}'.format(5) }}",
    "{{ '{:_n}'.format(1234) }}",
    # a field inside a spec, filled in first, numbered after its own field
    "{{ '{:>{}}|'.format('a', 5) }}{{ '{:>{w}}|'.format('a', w=5) }}{{ '{0:{1}.{2}f}|'.format(3.14159, 8, 2) }}{{ '{:{}}{}|'.format('x', 3, 'y') }}{{ '{!r:{}}|'.format('x', 5) }}{{ '{:{}}|'.format('x', '>4') }}{{ '{0[}]}|{0[{]}'.format({'}': 1, '{': 2}) }}",
    "{{ '{:{:{}}}'.format('x', 3, 4) }}",
    "{{ '{:{0}}'.format('x', 3) }}",
    "{{ '{:{{}}}'.format('x') }}",
    "{{ '{:{}'.format('x') }}",
    "{{ '{a{b}'.format(a=1) }}",
    "{{ '{:[^5}'.format('a') }}",
    # a precision with no type writes an exponent where a digit past the
    # point would pass it
    "{{ '{:.3}|{:.2}|{:.1}|{:.1}|{:.3}|{:#.3}|{:.3}|{:.4}|{:.0}'.format(100.0, 10.0, 5.0, 0.5, 3.0, 100.0, 0.0001, 0.00001, 25.0) }}",
    "{{ '{0[0]}{}'.format([5, 6]) }}|{{ '{}{0[1]}'.format([5, 6]) }}|{{ '{0.role}{}'.format(m) }}|{{ '{}{0.role}'.format(m) }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
