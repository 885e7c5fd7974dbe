"""Writes golden.json: the str methods find, rfind, index, rindex, count,
title and capitalize and the title filter, each with what jinja2 rendered
or the error it raised, set up as testdata/templates/py/check_jinja2.py
sets it up (transformers' settings). TestStrSearchMatchJinja2 renders
each with the same variables: the engine's find counted bytes, not
characters, and ignored start and end; it had no index, rindex or rfind;
its title method was jinja2's title filter and its title filter Python's
str.title, and its capitalize method lowercased nothing.

Usage (from the repository root):
  python3 format/chattemplate/testdata/strsearch/make_golden.py > format/chattemplate/testdata/strsearch/golden.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "testdata" / "templates" / "py"))
from golden_cases import rendered_or_error, write_golden  # noqa: E402

VARS = {"c": "éé<think>x</think>réponse", "roles": ["user", "assistant", "tool_call"], "xs": [1, 2, 1]}

CASES = [
    "{% set i = c.find('</think>') %}{{ i }}|{{ c[i + 9:] }}|{{ c[:c.index('<think>')] }}",
    "{{ c.rfind('é') }}|{{ c.rindex('>') }}|{{ c.find('é', 1) }}|{{ c.find('é', 2) }}|{{ c.find('x', -20, -15) }}|{{ c.find('x', None, 20) }}",
    "{{ 'abc'.find('') }}|{{ 'abc'.find('', 3) }}|{{ 'abc'.find('', 4) }}|{{ 'abc'.rfind('') }}|{{ 'abc'.find('c', 5) }}|{{ 'abc'.find('z') }}",
    "{{ 'abcabc'.count('c') }}|{{ 'abcabc'.count('c', 3) }}|{{ 'aaaa'.count('aa') }}|{{ 'abc'.count('') }}|{{ 'abc'.count('', 1, 2) }}|{{ 'éé'.count('é', -1) }}",
    "{{ xs.index(1) }}|{{ xs.count(1) }}|{{ xs.index(2) }}",
    "{{ \"what's up 2nd\".title() }}|{{ \"what's up 2nd\"|title }}|{{ 'hello WORLD'.capitalize() }}|{{ 'hello WORLD'|capitalize }}",
    "{% for r in roles %}{{ r.title() }},{{ r|title }},{{ r.capitalize() }};{% endfor %}",
    "{{ 'a-b (c [d {e <f\tg'|title }}|{{ 'ÉCOLE élan'.title() }}|{{ 'ÉCOLE élan'|title }}",
    # Python's bool is an int: true and false are 1 and 0 as slice bounds
    "{{ c.find('r', true) }}|{{ 'abc'.count('a', false, true) }}|{{ 'abc'.rfind('c', false) }}|{{ 'abc'.find('b', true, true) }}|{{ 'aba'.rindex('a', false) }}",
    # Python's full case mappings (ß is Ss in title case, SS in upper case;
    # ﬁ is Fi and FI; İ is i and a dot in lower case), its cased
    # characters (ª is one) and final sigma where Python lowers a whole
    # string (str.lower in the title filter, str.capitalize)
    "{{ 'straße ﬁx ǆa'.title() }}|{{ 'ßa ﬁx'.capitalize() }}|{{ 'ßtraße ﬁx'|title }}|{{ 'aİ'.title() }}|{{ 'aİ'.capitalize() }}|{{ 'ªb'.title() }}",
    "{{ 'ΑΣ'.capitalize() }}|{{ 'ΟΔΟΣ ΟΔΟΣ'|title }}|{{ 'a\x1fb'|title }}",
    "{{ c.index('zzz') }}",
    "{{ c.rindex('zzz') }}",
    "{{ xs.index(5) }}",
]


if __name__ == "__main__":
    write_golden(VARS, CASES, rendered_or_error)
