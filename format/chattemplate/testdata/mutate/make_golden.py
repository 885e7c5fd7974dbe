"""Writes golden.json: list.append, list.insert and dict.update, each
with what jinja2 rendered. TestMutatorsMatchJinja2 renders each with the
same variables and demands the same text: Hone replaces these methods
with its own (mutate.go), which refuse to put a value inside itself.

transformers' ImmutableSandboxedEnvironment refuses these methods (a
SecurityError), which Hone does not (yet) do; the golden is what Python's
methods do, from jinja2's plain Environment with transformers'
trim_blocks and lstrip_blocks, and its tojson.

Usage (from the repository root):
  python3 format/chattemplate/testdata/mutate/make_golden.py > format/chattemplate/testdata/mutate/golden.json

Left out: a value put inside itself (jinja2 prints it as [[...]], Hone
stops with a value depth error: TestHostileTemplates), dict.update with
keyword arguments (refused: the engine loses their order).
"""
import sys
from pathlib import Path

import jinja2

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from check_jinja2 import tojson  # noqa: E402
from golden_cases import rendered, write_golden  # noqa: E402

VARS = {"xs": [1, 2], "msg": {"role": "user", "content": "hi"}}

CASES = [
    "{% set l = [] %}{% for x in xs %}{% set _ = l.append(x * 10) %}{% endfor %}{{ l }}|{{ l|length }}",
    "{% set l = [1, 2, 3] %}{% set _ = l.insert(0, 'a') %}{% set _ = l.insert(-1, 'b') %}{% set _ = l.insert(-10, 'c') %}{% set _ = l.insert(99, 'd') %}{{ l }}",
    "{% set d = {'a': 1} %}{% set _ = d.update({'b': 2, 'a': 3}) %}{% set _ = d.update([['c', 4]]) %}{{ d }}",
    "{% set ns = namespace(items=[]) %}{% set _ = ns.items.append(msg) %}{% set _ = ns.items.append([msg]) %}{{ ns.items|length }}|{{ ns.items[1][0].role }}",
    "{% set l = [] %}{% set m = [l] %}{% set _ = l.append([1]) %}{{ m }}",
    "{% set l = [] %}{% set f = l.append %}{% set _ = f(1) %}{{ l }}",
    "{% set ns = namespace(update=5, append='x') %}{{ ns.update }}{{ ns.append }}",
    "{{ msg.update is defined }}|{{ msg.append is defined }}",
    "{% set l = [] %}{% if l.append(1) is none %}none{% endif %}|{{ l }}",
]


if __name__ == "__main__":
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    write_golden(VARS, CASES, rendered, env)
