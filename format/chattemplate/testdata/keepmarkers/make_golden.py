"""Writes golden.json: jinja2's "+" markers, which keep the white space
on their side of a block tag or comment from trim_blocks ("+%}", "+#}":
the newline after the tag stays) and lstrip_blocks ("{%+", "{#+": the
indentation before it stays), and a "+" after "{{", which jinja2 reads as
such a marker too and which changes nothing there. Each with what jinja2
rendered or refused, set up as testdata/templates/py/check_jinja2.py sets
it up (transformers' settings). TestKeepMarkersMatchJinja2 checks them.

Usage (from the repository root):
  python3 format/chattemplate/testdata/keepmarkers/make_golden.py > format/chattemplate/testdata/keepmarkers/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import loaded_then_rendered, write_golden  # noqa: E402

VARS = {"t": True, "xs": [1, 2]}

CASES = [
    # "+%}": the newline after the tag stays
    "{% for x in xs +%}\n[{{ x }}]\n{% endfor +%}\nend",
    "{% if t +%}\nA\n{% endif %}\nB",
    "{% set y = 1 +%}\n{{ y }}",
    "{% if t+%}\r\nA{% endif %}",
    "{% for x in xs %}{{ x }}{% if loop.last +%}\n{% endif +%}\n{% endfor %}",
    "{% if t +%}\n  {% if t %}A{% endif %}\n{% endif %}",
    "{% if t +%}{% if t %}\nA{% endif %}{% endif %}",
    "{% macro m() +%}\nM{% endmacro +%}\n{{ m() }}",
    "{% set a, b = 1, 2 +%}\n{{ a }}{{ b }}",
    "{# c +#}\nz",
    "{% raw %}{% if %}{% endraw +%}\nr",
    # "{%+": the indentation before the tag stays
    "  {%+ if t %}x{% endif %}",
    "A\n  {%+ if t %}x\n  {%+ endif %}\nB",
    "A\n\t{#+ c #}z",
    "  {%+ if t +%}\nx{% endif %}",
    "{% if t %}\n  {%+ endif %}",
    "{%- if t +%}\n{%+ endif -%}\n",
    "{% raw %}x\n  {%+ endraw +%}\ny",
    "{{ 1 }}\n  {%+ for x in xs %}{{ x }}{% endfor %}",
    "{{ 1 }}\n  {%+ raw %}x{% endraw %}|",
    "{% for x in xs %}\n  {%+ if x == 1 %}{{ x }}{% endif %}\n{% endfor %}",
    # "{{+": read as a marker, not as a unary plus
    "{{+ 'a' }}",
    "  {{+ 1 }}",
    # "+" where jinja2 takes it for an operator, or opens no raw block
    "{% if 1 + %}A{% endif %}",
    "{{ 1 +}}",
    "{% raw +%}\nq{% endraw %}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, loaded_then_rendered)
