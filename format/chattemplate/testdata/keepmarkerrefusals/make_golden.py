"""Writes golden.json: templates whose "+" markers leave jinja2 a tag
with no name ("{%+- if", "{%-+ if") or an operator before the tag's end
("{% if t -+%}"), which jinja2 refuses at load, and templates whose other
tags jinja2 refuses after a "{%+" (an unknown tag, an endraw outside a
raw block), with a few that it renders beside them. Set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestKeepMarkerRefusalsMatchJinja2 checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/keepmarkerrefusals/make_golden.py > format/chattemplate/testdata/keepmarkerrefusals/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"t": True}

CASES = [
    # no tag name after the markers
    "{%+- if t %}A{% endif %}",
    "{%-+ if t %}A{% endif %}",
    "{%+ +if t %}A{% endif %}",
    "{% - if t %}A{% endif %}",
    # an operator before "+%}"
    "{% if t -+%}\nA{% endif %}",
    "{% set x = 1 -+%}\n{{ x }}",
    "{% if t ++%}\nA{% endif %}",
    # refused tags after a "{%+"
    "{%+ endraw %}x",
    "l1\n  {%+ if t %}\nl3 {% bogus %}{% endif %}",
    "{%+ if t %}x{% endif %}{{ 1 2 }}",
    # rendered
    "{{+- 1 }}",
    "{{-+ 1 }}",
    "  {%+ if t %}x{% endif %}{% set y = 3 - 1 +%}\n{{ y }}",
    "{% if t - 1 +%}\nA{% endif %}B",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, loaded_then_rendered)
