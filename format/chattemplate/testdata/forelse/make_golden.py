"""Writes golden.json: names a {% for %}'s {% else %} assigns, which
jinja2 keeps inside the else (it runs in a frame of its own), with what
jinja2 rendered, set up as testdata/templates/py/check_jinja2.py sets it
up (transformers' settings). TestForElseAssignmentsStayInside checks
them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/forelse/make_golden.py > format/chattemplate/testdata/forelse/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered, write_golden  # noqa: E402

VARS = {"xs": [1, 2], "none_": []}

CASES = [
    "{% set x = 'o' %}{{ x }}{% for i in [] %}{% else %}{% set x = 'e' %}{{ x }}{% endfor %}{{ x }}",
    "{% for i in none_ %}{% else %}{% set y = 'e' %}{{ y }}{% endfor %}|{{ y is defined }}",
    "{% set x = 'o' %}{% for i in none_ %}{% else %}{% if true %}{% set x = 'i' %}{% endif %}{% set y %}b{% endset %}{{ x }}{{ y }}{% endfor %}{{ x }}{{ y is defined }}",
    "{% set x = 'o' %}{% for i in xs %}{% set x = i %}{{ x }}{% else %}{% set x = 'e' %}{% endfor %}{{ x }}",
    "{% set ns = namespace(v='o') %}{% for i in [] %}{% else %}{% set ns.v = 'e' %}{% endfor %}{{ ns.v }}",
    "{% set x = 'o' %}{% for a in xs %}{{ x }}{% for b in [] %}{% else %}{% set x = a %}{{ x }}{% endfor %}{{ x }};{% endfor %}{{ x }}",
    "{% set x = 'o' %}{% for a in [] %}{% else %}{% for b in [] %}{% else %}{% set x = 'ee' %}{% endfor %}{{ x }}{% set x = 'e' %}{{ x }}{% endfor %}{{ x }}",
    "{% set x = 'o' %}\n{% for i in [] %}\n{% else %}\n  {% set x = 'e' %}\n  {{ x }}\n{% endfor %}\n  {{ x }}\n",
    "{% set x = 'o' %}\n{%- for i in [] -%}\n{%- else -%}\n  {%- set x = 'e' -%}\n  {{ x }}\n{%- endfor -%}\n  {{ x }}\n",
]

if __name__ == "__main__":
    write_golden(VARS, CASES, rendered)
