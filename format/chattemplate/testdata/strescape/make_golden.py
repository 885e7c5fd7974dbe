"""Writes golden.json: string literals with backslash escapes, each with
what jinja2 rendered, or the error it refused the template with, set up
as testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestStringEscapesMatchJinja2 renders each with the same
variables: jinja2 decodes a literal as Python's unicode-escape codec
does (\\r, \\xhh, \\uhhhh, \\Uhhhhhhhh, \\N{name}, octal, \\a \\b \\f \\v, a
backslash before a line break), the engine only \\n, \\t, \\\\, \\' and \\".

Usage (from the repository root):
  python3 format/chattemplate/testdata/strescape/make_golden.py > format/chattemplate/testdata/strescape/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"s": "a\r\nb\u00e9"}

CASES = [
    r"{{ '\u00e9' }}|{{ '\r'|length }}|{{ '\x41' }}|{{ '\101' }}|{{ '\a\b\f\v'|length }}|{{ '\q' }}|{{ '\'' }}|{{ " + '"\\""' + " }}",
    r"{{ '\U0001F600' }}|{{ '\N{BULLET}' }}|{{ '\N{bullet}' }}|{{ '\0'|length }}|{{ '\777' }}|{{ '\xe9' }}",
    r"{{ s.split('\r\n') }}|{{ s.replace('\r', '') }}|{{ s.endswith('\u00e9') }}",
    r"{% set nl = '\n' %}{{ nl|length }}|{{ '\\n' }}|{{ '\\' ~ 'x' }}|{{ 'a' '\x62' }}",
    r"{% if s.startswith('a\r') %}yes{% endif %}|{{ ['\x7b\x7b', '\x7d\x7d']|join('\u0020') }}",
    "{{ 'a\\\nb' }}|{{ '\\\u00e9' }}",
    r"{% macro m(x='\u00e9') %}{{ x }}{% endmacro %}{{ m() }}",
    r"{{ '\x4' }}",
    r"{{ '\u12' }}",
    r"{{ '\N{NO SUCH NAME}' }}",
    r"{{ '\U00110000' }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
