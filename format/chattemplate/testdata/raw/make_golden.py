"""Writes golden.json: {% raw %} blocks with what is around and inside
them, each with what jinja2 rendered, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings: trim_blocks and lstrip_blocks). TestRawBlocksMatchJinja2
renders each with the same variables and demands the same text: inside a
raw block jinja2 trims nothing around the tags it copies, keeps their "-"
markers, and trims no newline after {% raw %}.

Usage (from the repository root):
  python3 format/chattemplate/testdata/raw/make_golden.py > format/chattemplate/testdata/raw/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered, write_golden  # noqa: E402

VARS = {"xs": [1, 2]}

CASES = [
    "{% raw %}{{ y }}\n{% endraw %}",
    "{% raw %}{{ y }}\n  {% endraw %}|",
    "{% raw %}\n{{ y }}\n{% if %}\n{% endraw %}\n|",
    "a{% raw %}{% x %}\nb{% endraw %}",
    "{% raw %}{{- y }}\n {% endraw %}",
    "{% raw %}{% y -%}\n  {% endraw %}",
    "{% raw %}{{ y }}{% endraw %}\n",
    "{% raw %}  {{ y }}  {% endraw %}|",
    "a  \n  {% raw -%}\n  x  \n  {%- endraw %}  \nb",
    "a  {%- raw %}x{% endraw -%}  \n  b",
    "{% for x in xs %}\n  {% raw %}{{ x }}\n{% endraw %}\n{% endfor %}|",
    "{% raw %}'\"\\n\\\\{# c #}}}{{{%%}{% endraw %}",
    "{{ 1 }}{% raw %}{{ 2 }}{% endraw %}{{ 3 }}",
    "{% if true %}{% raw %}\n  {% x %}\n{% endraw %}\n{% endif %}|",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered)
