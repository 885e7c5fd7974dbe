"""Writes golden.json: templates with a unary - or + on numbers and on
what is no number (a string, None, a list, an undefined name), each with
what jinja2 rendered or the error it raised, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestUnaryMatchesJinja2 renders each with the same variables;
where jinja2 raised, the rendering must fail too.

Usage (from the repository root):
  python3 format/chattemplate/testdata/unary/make_golden.py > format/chattemplate/testdata/unary/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"n": 2, "f": 2.5, "t": True, "s": "ab", "xs": [1, 2], "none": None}

CASES = [
    # numbers: the sign applies before filters and **, as in jinja2
    "{{ -n }}|{{ -f }}|{{ -t }}|{{ - -n }}|{{ -n|abs }}|{{ +n }}|{{ -(n) }}|{{ xs[-1] }}|{{ -xs[0] }}|{{ -n ** 2 }}|{{ +t }}",
    "{{ -1|string }}|{{ -n * 2 }}|{{ 3 - -n }}|{{ [-n, +f] }}|{% set y = -n %}{{ y }}|{% if -n < 0 %}neg{% endif %}",
    "{{ -xs|length }}",
    # what is no number
    "{{ -s }}",
    "{{ +s }}",
    "{{ -none }}",
    "{{ -xs }}",
    "{{ -x }}",
    "{{ -x|default(3) }}",
    "{{ - 'a'|length }}",
    "{% set y = -s %}{{ y }}",
    "{% if -x %}y{% endif %}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
