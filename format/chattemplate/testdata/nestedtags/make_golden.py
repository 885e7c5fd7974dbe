"""Writes golden.json: tags whose code holds "}}", "%}" or "#}" inside
brackets or string literals, each with what jinja2 rendered or the error
it raised, set up as testdata/templates/py/check_jinja2.py sets it up
(transformers' settings). jinja2's lexer ends a {{ }} or {% %} tag only
at a closer outside brackets and strings; a comment ends at its first
"#}". TestNestedTagsMatchJinja2 renders each with the same variables: a
nested dict literal in a print tag, {{ {'a': {'b': 1}} }}, was refused
("expected }") where jinja2 kept reading until its brackets closed.

Usage (from the repository root):
  python3 format/chattemplate/testdata/nestedtags/make_golden.py > format/chattemplate/testdata/nestedtags/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"t": {"name": "get_time", "args": {"tz": "UTC"}}, "xs": [1, 2]}

CASES = [
    "{{ {'a': {'b': 1}} }}",
    "{{ {'a': {'b': 1}}}}",
    "{{- {'a': {'b': 1}}-}}",
    "{{ {'type': 'function', 'function': {'name': t.name}}|tojson }}",
    "{{ {'f': {'args': t.args}}['f']['args'].tz }}",
    "{{ [{'a': [1, {'b': 2}]}] }}|{{ ({'a': 1}) }}",
    "{% set d = {'a': {'b': {'c': 1}}} %}{{ d.a.b.c }}",
    "{% if {'a': {'b': 1}}.a.b %}yes{% endif %}",
    "{% for k, v in {'a': {'b': 1}}.items() %}{{ k }}={{ v }}{% endfor %}",
    "{{ '}}' }}|{{ \"}}\" }}|{{ '%}' }}|{{ '#}' }}",
    "{% set x = '%}' %}{{ x }}|{% set y = \"}}\" %}{{ y }}",
    "{{ 'a\\'}}b' }}|{{ \"a\\\"}}b\" }}|{{ 'a\\\\' }}",
    "{{ {'k': '}}'} }}|{{ {'k': {'j': '%}'}}['k'] }}",
    "{# }} #}ok|{# {{ x }} #}ok|{# '#}' #}",
    "{# %} #}ok",
    "{{ {'a': 1}}}",
    "{{ xs[0] }}{{ (xs|length) }}",
    "{{ {'a': 10 % 3} }}",
    "{% set z = {'a': [1, 2]} %}{{ z }}",
    "{{ (1 }}",
    "{{ {'a': 1 }}",
    "{{ [1) }}",
    "{{ 1) }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
