"""Writes golden.json: jinja2's slice and attr filters, which the engine
has not, each case with what jinja2 rendered or raised, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestSliceAttrFiltersMatchJinja2 renders each with the same
variables and demands the same text, or an error saying what jinja2's
said.

Usage (from the repository root):
  python3 format/chattemplate/testdata/slicefilter/make_golden.py > format/chattemplate/testdata/slicefilter/golden.json

Left out: printing a slice without |list or a loop (jinja2 prints its
generator object's address).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"xs": [1, 2, 3, 4, 5], "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}

CASES = [
    "{{ xs|slice(2)|list }}",
    "{% for col in xs|slice(3) %}{{ col }};{% endfor %}",
    "{{ xs|slice(3, 0)|list }}|{{ xs|slice(3, fill_with='x')|list }}|{{ xs|slice(5, none)|list }}",
    "{{ xs|slice(7)|list }}|{{ xs|slice(1)|list }}|{{ xs|slice(-1)|list }}|{{ xs|slice(true)|list }}",
    "{{ 'abcde'|slice(2)|list }}|{{ {'a': 1, 'b': 2}|slice(2)|list }}|{{ nothing|slice(2)|list }}|{{ []|slice(2)|list }}",
    "{% for col in msgs|slice(2) %}{% for m in col %}{{ m.role }}{% endfor %}/{% endfor %}",
    "{{ xs|slice(0)|list }}",
    "{{ xs|slice(2.0)|list }}",
    "{{ 5|slice(2)|list }}",
    "{{ none|slice(2)|list }}",
    "{{ xs|slice|list }}",
    "{{ xs|slice(2, 1, 2)|list }}",
    "{{ xs|slice(2, foo=1)|list }}",
    "[{{ msgs[0]|attr('role') }}]{{ msgs[0]|attr('role') is defined }}{{ xs|attr('x') is undefined }}",
    "{{ msgs[0]|attr(1) }}",
    "{{ msgs[0]|attr }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
