"""Writes golden.json: {% set %} statements whose text has an "=" inside a
string literal, before or after the assignment's "=" (or in a block set's
filter), or a target jinja2
cannot assign to (a string, a subscript, two dots, nothing) or no value,
each with what jinja2 did, set up as testdata/templates/py/check_jinja2.py
sets it up (transformers' settings): "load_error" where
Environment.from_string refused it, "error" where rendering raised, else
"want". TestSetTargetsMatchJinja2 checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/settarget/make_golden.py > format/chattemplate/testdata/settarget/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"t": True, "s": "ab"}

CASES = [
    # an "=" in a string literal where the target should be
    '{%set"="0%}',
    "{%set'='0%}",
    "{% set '=' = 1 %}",
    "{% set x['a=b'] = 1 %}",
    "{% set 'x' = 1 %}",
    # no target, a target with two dots, no value
    "{% set = 1 %}",
    "{% set x.y.z = 1 %}",
    "{% set x = %}",
    "{% set ns = namespace(a=1) %}{% set ns.a = %}",
    # an "=" in a string literal in the value, and targets jinja2 takes
    "{% set x = '=' if t else '==' %}{{ x }}|{% set x='a=b' %}{{ x }}|{%set x=1%}{{x}}|{% set y = s == 'ab' %}{{ y }}",
    "{% set ns = namespace(a='=') %}{% set ns.a = ns.a ~ '=' %}{{ ns.a }}|{% set (a, b) = ['=', '=='] %}{{ a }}{{ b }}|{% set (c) = '=' %}{{ c }}",
    "{% set x %}a=b{% endset %}{{ x }}|{% set x -%} '=' {%- endset %}{{ x }}",
    # a block set's filters, with an "=" in their arguments or not, and the
    # whitespace control of its endset
    "{% set x | replace('=', '-') %}a=b{% endset %}{{ x }}|{% set y|upper|replace('A', 'b') %}ab{% endset %}{{ y }}",
    "{% set x | indent(width=2) %}a\nb{% endset %}[{{ x }}]",
    "{% for m in ['a', 'b'] %}\n  {% set x | trim %}\n {{ m }} \n  {% endset %}\n\n{{ x }}{% endfor %}",
    "{% set x | trim -%}\n a {% endset -%}\n\n {{ x }}|{% set y | upper %}z{% endset %}{% if true %}{{ y }}{% endif %}",
    # what stands after a block set's "|" must be filters
    "{%set A|0=0%}0",
    "{% set x | upper = 1 %}",
    "{% set x | upper 1 %}a{% endset %}",
    "{% set x | %}a{% endset %}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, loaded_then_rendered)
