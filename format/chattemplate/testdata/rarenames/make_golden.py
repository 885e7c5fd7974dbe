"""Writes golden.json: the center filter and the escaped, filter and test
tests, which jinja2 has and the engine had not (the load check let them
through, and the rendering failed), each with what jinja2 rendered, set
up as testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestRareNamesMatchJinja2 renders each with the same variables.

Usage (from the repository root):
  python3 format/chattemplate/testdata/rarenames/make_golden.py > format/chattemplate/testdata/rarenames/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered, write_golden  # noqa: E402

VARS = {"s": "abc", "names": ["upper", "tojson", "nope", "odd", "divisibleby"]}

CASES = [
    "[{{ s|center(9) }}]|[{{ s|center(8) }}]|[{{ 'ab'|center(7) }}]|[{{ 'ab'|center(1) }}]|[{{ 'é'|center(4) }}]|{{ (s|center)|length }}|[{{ 5|center(3) }}]",
    "{{ s is escaped }}|{{ s is not escaped }}|{{ 1 is escaped }}",
    "{% for n in names %}{{ n is filter }},{{ n is test }};{% endfor %}|{{ 1 is filter }}|{{ 'upper' is not test }}",
    "{% if s is escaped %}e{% else %}n{% endif %}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered)
