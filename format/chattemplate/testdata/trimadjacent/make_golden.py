"""Writes golden.json: whitespace control (the "-" markers, trim_blocks
and lstrip_blocks) next to a tag that stands right against another tag,
where jinja2 strips only the text that touches the tag and a tag between
keeps the text beyond it whole, each with what jinja2 rendered, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestTrimStopsAtTheNextTag checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/trimadjacent/make_golden.py > format/chattemplate/testdata/trimadjacent/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"t": True, "xs": [1, 2], "cs": [{"type": "text", "text": "A"}, {"type": "image"}]}

CASES = [
    # trim_blocks: the newline after a block tag, not after the tag after it
    "{% if t %}{{ 1 }}\nX{% endif %}",
    "{% if t %}{{ 1 }}{{ 2 }}\n{% endif %}",
    "{% for x in xs %}{% if x %}{{ x }}\n\n{% endif %}{% endfor %}",
    "{% if t %}{% if t %}\n\nX{% endif %}{% endif %}",
    # lstrip_blocks: the indentation before a block tag only, when nothing stands between
    "A\n  {{ 1 }}{% if t %}B{% endif %}",
    "A\n  {# c #}{% if t %}B{% endif %}",
    # "-": the whitespace that touches the tag, none past another tag
    "{% if t -%}{{ 1 }} X{% endif %}",
    "A {# c #}{%- if t %}B{% endif %}",
    "A {% if t %}{%- endif %}",
    "A {{ 1 }}{{- 2 }}",
    "{{ 1 -}}{{ 2 }} B",
    "P {{ 1 }}{%- if t %}{% endif %}",
    "{% for x in xs %}- {{ x }}{%- if not loop.last %},{% endif %}\n{% endfor %}",
    "{%- for c in cs %}{%- if c.type == 'image' %}Picture {{ loop.index }}{%- elif c.type == 'text' %}{{ c.text }}{%- endif %}{%- endfor %}",
    "{% macro m(a) %}{{ a }}{% endmacro %}X {{ m(1) }}{%- if t %}\n\nY{% endif %}",
    # the cases where jinja2 does strip, which must stay stripped
    "A\n  {% if t %}\nB\n  {% endif %}\nC {{- 1 }}\n{%- if t %} D {% endif -%}\n E",
    "{% for x in xs %}\n  {{ x }}\n{% endfor %}{% raw %} {{ y }} {% endraw %}{{ 3 }}\n",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, loaded_then_rendered)
