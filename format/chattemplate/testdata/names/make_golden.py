"""Writes golden.json: templates that name filters and tests jinja2 has
not, inside and outside the places where jinja2 puts off the error to
rendering ({% if %} bodies and tests, inline if-expressions), and tests
named by what is no name or chained (x is odd is true), and odd and
even on floats, each with
what jinja2 did, set up as testdata/templates/py/check_jinja2.py sets it
up (transformers' settings): "load_error" where Environment.from_string
refused it, "error" where rendering raised, else "want". Also the names
of jinja2's filters and tests. TestNamesMatchJinja2 checks both.

Usage (from the repository root):
  python3 format/chattemplate/testdata/names/make_golden.py > format/chattemplate/testdata/names/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from check_jinja2 import environment  # noqa: E402
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"xs": [1, 2], "t": True, "f": False, "s": "ab"}

CASES = [
    # outside any if: refused when the template is loaded
    "{{ s|nosuchfilter }}",
    "{{ s|upper|nosuchfilter(1) }}",
    "{{ xs|map('upper')|nosuchfilter }}",
    "{% set y = s|nosuchfilter %}ok",
    "{% for x in xs|nosuchfilter %}{% endfor %}ok",
    "{% for x in xs %}{{ x|nosuchfilter }}{% endfor %}ok",
    "{% for x in [] %}{{ x|nosuchfilter }}{% endfor %}ok",
    "{% for x in [] %}{% else %}{{ 1|nosuchfilter }}{% endfor %}ok",
    "{% macro m() %}{{ 1|nosuchfilter }}{% endmacro %}ok",
    "{% filter nosuchfilter %}a{% endfilter %}ok",
    "{% set y %}{{ 1|nosuchfilter }}{% endset %}ok",
    "{{ 1 is nosuchtest }}",
    "{{ 1 is not nosuchtest }}",
    "{% for x in xs %}{{ x is nosuchtest }}{% endfor %}ok",
    "{{ s|raise_exception }}",
    "{{ s|strftime_now }}",
    # a test's name must be a name, and one test cannot follow another
    # straight away, wherever the test is
    "{{ 3 is 3 }}",
    "{{ s is 'ab' }}",
    "{% if f %}{{ 3 is not 3 }}{% endif %}ok",
    "{{ 3 is odd is true }}",
    "{% if f %}{{ 3 is not odd is true }}{% endif %}ok",
    "{{ 4 is divisibleby 2 }}|{{ 3 is in [3] }}|{{ 3 is not none }}|{{ (3 is odd) is true }}|{{ 3 is sameas 3 }}",
    # an if's body starts a frame where jinja2 reports it only when run,
    # but not inside a loop, macro or block in that body
    "{% if f %}{{ s|nosuchfilter }}{% endif %}ok",
    "{% if t %}{{ s|nosuchfilter }}{% endif %}ok",
    "{% if f %}{% elif t %}{% else %}{{ 1|nosuchfilter }}{% endif %}ok",
    "{% if t %}{% elif t|nosuchfilter %}{% endif %}ok",
    "{% if s|nosuchfilter %}{% endif %}ok",
    "{% if f %}{% set y = s|nosuchfilter %}{% endif %}ok",
    "{% if f %}{% for x in xs|nosuchfilter %}{% endfor %}{% endif %}ok",
    "{% if f %}{% for x in xs %}{{ x|nosuchfilter }}{% endfor %}{% endif %}ok",
    "{% if f %}{% macro m() %}{{ 1|nosuchfilter }}{% endmacro %}{% endif %}ok",
    "{% if f %}{% filter upper %}{{ 1|nosuchfilter }}{% endfilter %}{% endif %}ok",
    "{% if f %}{{ 1 is nosuchtest }}{% endif %}ok",
    "{% if 1 is nosuchtest %}{% endif %}ok",
    "{{ s|nosuchfilter if f else 1 }}ok",
    "{{ 1 if t else s|nosuchfilter }}ok",
    "{{ 1 if f else s|nosuchfilter }}ok",
    # the filters and tests jinja2 has, spelt as templates spell them
    "{{ s|upper|trim|length }}|{{ xs|join(',')|string }}|{{ s | e }}|{{ s|d('x') }}|{{ xs|first|abs }}",
    "{{ 2 is divisibleby 2 }}|{{ s is not none }}|{{ xs is iterable }}|{{ 1 is sameas 1 }}|{{ 3 is odd }}",
    # odd and even are Python's value % 2 == 1 and == 0: floats too
    "{{ 3.0 is odd }}|{{ 2.0 is even }}|{{ 2.5 is odd }}|{{ 2.5 is even }}|{{ -3.0 is odd }}|{{ 3 is odd }}|{{ -4 is even }}",
    "{{ 3.0 is not odd }}|{{ t is odd }}|{{ xs|length is even }}|{{ 7.0 is odd and 1 }}",
    "{{ s is odd }}",
    "{{ none is even }}",
    # a tag's name is the whole name token: for0 is no for
    "{%for0%0 in 0%}{%endfor%}ok",
    "{%if0%}a{%endif%}ok",
    "{% set_x = 1 %}ok",
    "{%for x in xs%}{{ x }}{%endfor%}{%if t%}ok{%endif%}",
    "{% raw %}{{ s|nosuchfilter }}{% endraw %}{# s|nosuchfilter #}{{ '|nosuchfilter' }}{{ 'is nosuchtest' }}",
]


if __name__ == "__main__":
    env = environment()
    write_golden(VARS, CASES, loaded_then_rendered, env, filters=sorted(env.filters), tests=sorted(env.tests))
