#!/usr/bin/env python3
"""Writes the JSON schemas kubeconform checks round.yaml and cron.yaml with.

Source: Argo Workflows' own JSON schema, api/jsonschema/schema.json in the
github.com/argoproj/argo-workflows/v3 module (the version below), taken
through the Go module proxy. For each kind, one standalone schema: the
kind's definition at the root, the definitions it reaches, and
"additionalProperties": false on every object that lists its properties
(kubeconform's -strict), so that a misspelt field fails. Argo's file
types IntOrString as a string; Kubernetes takes both (the CRDs say
x-kubernetes-int-or-string), so it becomes a string or an integer, as
kubeconform's own openapi2jsonschema.py makes it.

Run from this folder:  python3 gen.py
"""
import json
import os
import subprocess

MODULE = "github.com/argoproj/argo-workflows/v3@v3.7.9"
KINDS = {
    "workflowtemplate-argoproj-v1alpha1.json": "io.argoproj.workflow.v1alpha1.WorkflowTemplate",
    "cronworkflow-argoproj-v1alpha1.json": "io.argoproj.workflow.v1alpha1.CronWorkflow",
}


def module_dir():
    out = subprocess.run(["go", "mod", "download", "-json", MODULE], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["Dir"]


def refs(node, found):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/definitions/"):
            found.add(r[len("#/definitions/"):])
        for v in node.values():
            refs(v, found)
    elif isinstance(node, list):
        for v in node:
            refs(v, found)


def strict(node):
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for v in node.values():
            strict(v)
    elif isinstance(node, list):
        for v in node:
            strict(v)


def main():
    with open(os.path.join(module_dir(), "api", "jsonschema", "schema.json")) as f:
        schema = json.load(f)
    defs = schema["definitions"]
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    for out, kind in KINDS.items():
        keep, todo = set(), [kind]
        while todo:
            d = todo.pop()
            if d in keep:
                continue
            keep.add(d)
            found = set()
            refs(defs[d], found)
            todo.extend(found - keep)
        doc = {
            "$schema": "http://json-schema.org/schema#",
            "description": "%s from %s api/jsonschema/schema.json, strict (gen.py)" % (kind, MODULE),
            "$ref": "#/definitions/" + kind,
            "definitions": {d: defs[d] for d in sorted(keep)},
        }
        strict(doc)
        with open(out, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(out, len(keep), "definitions")


if __name__ == "__main__":
    main()
