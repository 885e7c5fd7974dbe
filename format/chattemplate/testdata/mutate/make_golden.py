"""Writes golden.json: list.append, list.insert, dict.update and the
pop of both, and attributes of those names, each with what jinja2
rendered or raised, set
up as testdata/templates/py/check_jinja2.py sets it up (transformers'
ImmutableSandboxedEnvironment, which refuses the methods that change a
list or dict in place with a SecurityError, so a chat template that
calls them fails in transformers and vLLM). TestMutatorsMatchJinja2
renders each with the same variables and demands the same text, or an
error saying what jinja2's said: Hone replaces these methods with its
own (mutate.go), which refuse as the sandbox does.

Usage (from the repository root):
  python3 format/chattemplate/testdata/mutate/make_golden.py > format/chattemplate/testdata/mutate/golden.json

Left out: a method taken as a value and called later
({% set f = l.append %}{{ f(1) }}), which fails saying what the engine
says of calling an undefined value (TestMutatorTakenAsValue).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"xs": [1, 2], "msg": {"role": "user", "content": "hi"}, "dk": {"append": 6, "insert": 7}}

CASES = [
    "{% set l = [] %}{% for x in xs %}{% set _ = l.append(x * 10) %}{% endfor %}{{ l }}",
    "{{ xs.append(9) }}",
    "{% set l = [1, 2, 3] %}{% set _ = l.insert(0, 'a') %}{{ l }}",
    "{% set d = {'a': 1} %}{% set _ = d.update({'b': 2}) %}{{ d }}",
    "{{ msg.update({}) }}",
    "{% set ns = namespace(items=[]) %}{% set _ = ns.items.append(msg) %}{{ ns.items|length }}",
    "{% set l = [] %}{{ l.append(l) }}{{ l }}",
    "{% set d = {} %}{{ d.update({'a': d}) }}{{ d == d }}",
    "{% set l = [] %}{% if l.append(1) is none %}none{% endif %}|{{ l }}",
    "{% set l = [] %}{% set f = l.append %}[{{ f }}]|{{ f is defined }}|{{ l }}",
    "{% set ns = namespace(update=5, append='x') %}{{ ns.update }}{{ ns.append }}",
    "{{ msg.update is defined }}|{{ msg.append is defined }}|{{ xs.append is defined }}|{{ xs.insert is defined }}|{{ xs.update is defined }}|[{{ xs.append }}]",
    "{{ dk.append }}|{{ dk.insert }}",
    "{{ msg.append(1) }}",
    "{{ xs.update({}) }}",
    "{{ 'ab'.append(1) }}",
    "{% set l = [1, 2] %}{{ l.pop() }}{{ l }}",
    "{% set d = {'a': 1} %}{{ d.pop('a') }}{{ d }}",
    "{{ xs.pop is defined }}|{{ msg.pop is defined }}|{% set ns = namespace(pop=3) %}{{ ns.pop }}",
    "{{ none.insert(0, 1) }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
