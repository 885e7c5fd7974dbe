"""Writes golden.json: keywords (if, in, for, else) where jinja2's parser
reads an operand, which it reads as variable names, each with what jinja2
rendered or the error it raised, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestKeywordNamesMatchJinja2 renders each with the same
variables: a sign right after such a name ({% if if+A %}, {{ if-A }}) was
read as the sign of a new operand and the rewritten tag refused ("please
report this as a bug"). Those below that jinja2 renders do not evaluate
the name in arithmetic (jinja2 raises for an undefined operand of + or -).

Usage (from the repository root):
  python3 format/chattemplate/testdata/keywordnames/make_golden.py > format/chattemplate/testdata/keywordnames/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"A": 1}

CASES = [
    "{{ if-A if 0 else 1 }}",
    "{{ if+A if 0 else 1 }}|{{ for*2 if 0 else 3 }}",
    # an elif's condition is evaluated only when the conditions before
    # it are false
    "{% if 1 %}y{% elif if+A %}n{% endif %}|{% if A %}y{% elif in-A %}n{% endif %}",
    "{% if if %}y{% else %}n{% endif %}|{{ 2 if if else 3 }}",
    "{% if not if %}y{% endif %}|{{ if is defined }}|{{ [if] }}",
    "{% for x in if %}{{ x }}{% else %}none{% endfor %}",
    "{% set x = if %}{{ x is defined }}|{{ A if A else if }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
