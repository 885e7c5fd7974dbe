"""The case loop that format/chattemplate/testdata/*/make_golden.py
share: each script lists its variables and templates, and this runs every
template through jinja2, set up as check_jinja2.py sets it up
(transformers' settings) unless the script brings its own environment,
and writes golden.json to stdout for the Go test beside it
(format/chattemplate/jinja2golden_test.go reads it).

A case is {"src": template} and one of "want" (what jinja2 rendered),
"error" (what it raised, "Class: message") or "load_error" (what
Environment.from_string raised, for scripts that tell the two apart).
"""
import json
import sys

from check_jinja2 import environment


def error_text(e):
    return type(e).__name__ + ": " + str(e)


def rendered(env, src, variables):
    """Records what jinja2 rendered; a template it refuses stops the
    script, for goldens whose every case must render."""
    return {"src": src, "want": env.from_string(src).render(**variables)}


def rendered_or_error(env, src, variables):
    """Records what jinja2 rendered, or what it raised when it loaded or
    rendered the template."""
    case = {"src": src}
    try:
        case["want"] = env.from_string(src).render(**variables)
    except Exception as e:  # the golden records that jinja2 raised
        case["error"] = error_text(e)
    return case


def loaded_then_rendered(env, src, variables):
    """Records a refusal at load apart from an error when rendering."""
    case = {"src": src}
    try:
        tmpl = env.from_string(src)
    except Exception as e:  # the golden records that jinja2 refused it
        case["load_error"] = error_text(e)
        return case
    try:
        case["want"] = tmpl.render(**variables)
    except Exception as e:
        case["error"] = error_text(e)
    return case


def write_golden(variables, cases, record, env=None, **extra):
    """Writes {"vars", **extra, "cases"} to stdout, each case as record
    makes it; nothing is written if a case stops the script."""
    if env is None:
        env = environment()
    out = {"vars": variables, **extra, "cases": [record(env, src, variables) for src in cases]}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
