"""Writes golden.json: the str methods join, splitlines, removeprefix,
removesuffix, zfill, ljust, rjust, center, isdigit, isalpha, isspace,
isalnum, isupper and islower, each with what jinja2 rendered or the error
it raised, set up as testdata/templates/py/check_jinja2.py sets it up
(transformers' settings). TestStrExtraMatchJinja2 renders each with the
same variables: the engine had none of them ("'\\n\\n'.join(xs)" failed
with "literal.join is not callable").

Usage (from the repository root):
  python3 format/chattemplate/testdata/strextra/make_golden.py > format/chattemplate/testdata/strextra/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {
    "xs": ["a", "b", "c"],
    "parts": ["<think>", "é", "</think>"],
    "d": {"k1": 1, "k2": 2},
    "nums": [1, 2],
    "text": "line one\nline two\r\nline three\rfour\x0bfive\x0csix\x1cseven\u2028eight\x85nine\n",
}

CASES = [
    "{{ '\\n\\n'.join(xs) }}|{{ ', '.join(parts) }}|{{ ''.join([]) }}|{{ '-'.join('abc') }}|{{ '+'.join(d) }}",
    "{{ '\\n'.join(xs|map('upper')) }}|{{ sep.join(xs) if sep is defined else '|'.join(xs) }}",
    "{% set lines = text.splitlines() %}{{ lines|length }}:{{ lines|join('/') }}",
    "{{ text.splitlines(true)|length }}|{{ text.splitlines(keepends=true)[1] == 'line two\\r\\n' }}|{{ ''.splitlines() }}|{{ 'a\\n\\nb'.splitlines() }}",
    "{{ '<think>x'.removeprefix('<think>') }}|{{ 'x</think>'.removesuffix('</think>') }}|{{ 'abc'.removeprefix('z') }}|{{ 'abc'.removesuffix('') }}",
    "{{ '42'.zfill(5) }}|{{ '-42'.zfill(5) }}|{{ '+7'.zfill(3) }}|{{ 'é'.zfill(3) }}|{{ 'abc'.zfill(2) }}|{{ '-'.zfill(3) }}",
    "[{{ 'a'.ljust(3) }}][{{ 'a'.rjust(3, '*') }}][{{ 'ab'.center(5, '.') }}][{{ 'ab'.center(6) }}][{{ 'é'.ljust(3, 'é') }}][{{ 'abc'.rjust(1) }}][{{ 'a'.center(4) }}]",
    "{{ '123'.isdigit() }}{{ '12a'.isdigit() }}{{ ''.isdigit() }}{{ '²'.isdigit() }}{{ '٣'.isdigit() }}",
    "{{ 'abc'.isalpha() }}{{ 'éà'.isalpha() }}{{ 'ab1'.isalpha() }}{{ ''.isalpha() }}{{ '中文'.isalpha() }}",
    "{{ ' \\t\\n'.isspace() }}{{ ''.isspace() }}{{ ' a'.isspace() }}{{ '\\x1c\\x85\\xa0'.isspace() }}",
    "{{ 'a1'.isalnum() }}{{ 'a 1'.isalnum() }}{{ ''.isalnum() }}{{ '²x'.isalnum() }}",
    "{{ 'AB1'.isupper() }}{{ 'Ab'.isupper() }}{{ '12'.isupper() }}{{ 'ab1'.islower() }}{{ 'aB'.islower() }}{{ ''.islower() }}{{ 'ÉCOLE'.isupper() }}",
    "{% for x in ['1', 'a', ' '] %}{% if x.isdigit() %}d{% elif x.isalpha() %}a{% else %}s{% endif %}{% endfor %}",
    "{{ ', '.join(nums) }}",
    "{{ 'a'.ljust(3, 'ab') }}",
    "{{ 'a'.zfill('3') }}",
    "{{ 'a'.removeprefix(1) }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
