"""Writes golden.json: names a {% for %} body assigns, which jinja2
clears at the end of each iteration (the next one reads the value from
outside the loop again, or none), with what jinja2 rendered, set up as
testdata/templates/py/check_jinja2.py sets it up (transformers'
settings). TestLoopAssignmentsLastOneIteration checks them. The first
case is the arguments loop of vLLM's examples/tool_chat_template_gemma3_pythonic.jinja
(Apache-2.0), cut down to that loop.

Usage (from the repository root):
  python3 format/chattemplate/testdata/looplocals/make_golden.py > format/chattemplate/testdata/looplocals/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered, write_golden  # noqa: E402

VARS = {
    "xs": [1, 2, 3],
    "calls": [{"function": {"name": "f", "arguments": {"a": 1, "b": "x", "c": [True, None]}}}, {"function": {"name": "g", "arguments": {}}}],
}

CASES = [
    # Gemma 3 pythonic (vLLM): `first` is true again in every iteration
    "[{%- for tool_call in calls -%}\n"
    "    {%- if tool_call.function is defined -%}\n"
    "        {%- set tool_call = tool_call.function -%}\n"
    "    {%- endif -%}\n"
    "    {{- tool_call.name + '(' -}}\n"
    "    {%- if tool_call.arguments is iterable and tool_call.arguments is mapping -%}\n"
    "        {%- set first = true -%}\n"
    "        {%- for key, val in tool_call.arguments.items() -%}\n"
    "            {%- if not first %}, {% endif -%}\n"
    "            {{ key }}={{ val | tojson }}\n"
    "            {%- set first = false -%}\n"
    "        {%- endfor -%}\n"
    "    {%- endif -%}\n"
    "    {{- ')' -}}\n"
    "    {%- if not loop.last -%}, {% endif -%}\n"
    "{%- endfor -%}]",
    "{% set x = 1 %}{% for i in xs %}{{ x }}{% set x = x + 1 %}{{ x }};{% endfor %}{{ x }}",
    "{% set first = true %}{% for i in xs %}{% if not first %}, {% endif %}{{ i }}{% set first = false %}{% endfor %}",
    "{% for i in xs %}{% if i > 1 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}|{{ y is defined }}",
    "{% set y = 'o' %}{% for i in xs %}{% if i > 1 %}{{ y }}{% endif %}{% set y = i %}{% endfor %}{{ y }}",
    "{% set x = 0 %}{% for i in xs %}{% if i == 2 %}{% set x = 5 %}{% endif %}{{ x }}{% endfor %}{{ x }}",
    "{% set x = 0 %}{% for i in xs %}{% if i == 2 %}{% set x = 5 %}{% elif i == 3 %}{{ x }}{% else %}{% set x = 7 %}{% endif %}{{ x }}{% endfor %}{{ x }}",
    "{% set s = 'x' %}{% for i in range(64) %}{% set s = s + s %}{% endfor %}{{ s|length }}",
    "{% set n = 0 %}{% for i in xs %}{% for j in xs %}{% set n = n + j %}{% endfor %}{{ n }}{% set n = n + 10 %}{{ n }};{% endfor %}{{ n }}",
    "{% set t = 'a' %}{% for i in xs %}{{ t }}{% set t %}{{ t }}{{ i }}{% endset %}{{ t }};{% endfor %}{{ t }}",
    "{% set a = 0 %}{% set b = 0 %}{% for i in xs %}{{ a }}{{ b }}{% set a, b = b + 1, a + 2 %}{% endfor %}|{{ a }}{{ b }}",
    "{% set ns = namespace(c=0) %}{% set k = 0 %}{% for i in xs %}{% set ns.c = ns.c + k %}{% set k = i %}{% endfor %}{{ ns.c }}",
    "{% set c = 'out' %}{% for i in xs %}{% set c = c ~ i %}{% endfor %}{% for i in [] %}{% set c = 1 %}{% else %}{{ c }}{% endfor %}",
    "{% set p = 0 %}{% for i in xs %}{% macro m() %}{{ p }}{% endmacro %}{{ m() }}{% set p = i %}{% endfor %}",
    "{% for i in xs %}{% set i = i * 10 %}{{ i }},{% endfor %}",
    "{%- set last = none %}\n{%- for m in xs %}\n  {%- if last is not none %}\n    {{- last }}>\n  {%- endif %}\n  {%- set last = m %}\n{{ m }}\n{% endfor %}",
    "{% set first = true %}\n{% for i in xs %}\n  {% if not first %}\n, \n  {% endif %}\n{{ i }}\n  {% set first = false %}\n{% endfor %}\nend",
    "{% set w = 'w' %}  {% for i in xs -%}\n  {{ w }}{% set w = i %}\n{%- endfor %}",
]

if __name__ == "__main__":
    write_golden(VARS, CASES, rendered)
