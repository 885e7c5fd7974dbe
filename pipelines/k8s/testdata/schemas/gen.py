#!/usr/bin/env python3
"""Writes the JSON schemas kubeconform checks the manifests in ../.. with.

Sources, both taken through the Go module proxy at the versions below:
- for round.yaml and cron.yaml, Argo Workflows' own JSON schema,
  api/jsonschema/schema.json in the github.com/argoproj/argo-workflows/v3
  module;
- for serve.yaml and secrets.yaml (Deployment, Service, ServiceAccount,
  Role, RoleBinding, Secret), Kubernetes' OpenAPI v2 spec, api/openapi-spec/swagger.json in
  the k8s.io/kubernetes module. Its descriptions are left out, to keep the
  files small; they do not change what validates. Kubernetes types
  Quantity as a string, but takes a number too (cpu: 4), so Quantity
  becomes a string or a number; the root also pins apiVersion and kind
  to its x-kubernetes-group-version-kind.

For each kind, one standalone schema: the
kind's definition at the root, the definitions it reaches, and
"additionalProperties": false on every object that lists its properties
(kubeconform's -strict), so that a misspelt field fails. Argo's file
types IntOrString as a string; Kubernetes takes both (the CRDs say
x-kubernetes-int-or-string), so it becomes a string or an integer, as
kubeconform's own openapi2jsonschema.py makes it.

Run from this folder:  python3 gen.py [OUTDIR]   (default: this folder)
"""
import json
import os
import subprocess
import sys

ARGO = "github.com/argoproj/argo-workflows/v3@v3.7.9"
ARGO_KINDS = {
    "workflowtemplate-argoproj-v1alpha1.json": "io.argoproj.workflow.v1alpha1.WorkflowTemplate",
    "cronworkflow-argoproj-v1alpha1.json": "io.argoproj.workflow.v1alpha1.CronWorkflow",
}
K8S = "k8s.io/kubernetes@v1.34.2"
# kubeconform looks a kind up as KIND-GROUP-VERSION.json, GROUP the first
# part of a dotted group (rbac.authorization.k8s.io: rbac), the core group
# as KIND-VERSION.json.
K8S_KINDS = {
    "deployment-apps-v1.json": "io.k8s.api.apps.v1.Deployment",
    "service-v1.json": "io.k8s.api.core.v1.Service",
    "serviceaccount-v1.json": "io.k8s.api.core.v1.ServiceAccount",
    "secret-v1.json": "io.k8s.api.core.v1.Secret",
    "role-rbac-v1.json": "io.k8s.api.rbac.v1.Role",
    "rolebinding-rbac-v1.json": "io.k8s.api.rbac.v1.RoleBinding",
}
INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}


def module_dir(module):
    out = subprocess.run(["go", "mod", "download", "-json", module], check=True, capture_output=True, text=True).stdout
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


def undescribe(node):
    """Drops the documentation: every description, and the x-kubernetes
    annotations that no validator reads."""
    if isinstance(node, dict):
        for k in [k for k, v in node.items() if k == "description" and isinstance(v, str) or k.startswith("x-kubernetes-")]:
            del node[k]
        for v in node.values():
            undescribe(v)
    elif isinstance(node, list):
        for v in node:
            undescribe(v)


def write(outdir, out, kind, defs, source):
    keep, todo = set(), [kind]
    while todo:
        d = todo.pop()
        if d in keep:
            continue
        if d not in defs:
            raise SystemExit("%s: %s refers to %s, which %s does not define" % (out, kind, d, source))
        keep.add(d)
        found = set()
        refs(defs[d], found)
        todo.extend(found - keep)
    doc = {
        "$schema": "http://json-schema.org/schema#",
        "description": "%s from %s, strict (gen.py)" % (kind, source),
        "$ref": "#/definitions/" + kind,
        "definitions": {d: defs[d] for d in sorted(keep)},
    }
    strict(doc)
    with open(os.path.join(outdir, out), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(out, len(keep), "definitions")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(os.path.join(module_dir(ARGO), "api", "jsonschema", "schema.json")) as f:
        defs = json.load(f)["definitions"]
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = INT_OR_STRING
    for out, kind in ARGO_KINDS.items():
        write(outdir, out, kind, defs, ARGO + " api/jsonschema/schema.json")

    with open(os.path.join(module_dir(K8S), "api", "openapi-spec", "swagger.json")) as f:
        defs = json.load(f)["definitions"]
    for name, d in defs.items():
        if d.get("format") == "int-or-string" and name != "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
            raise SystemExit("%s is int-or-string too: type it here" % name)
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = INT_OR_STRING
    defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    for out, kind in K8S_KINDS.items():
        d = defs[kind]
        (gvk,) = d["x-kubernetes-group-version-kind"]
        api = gvk["version"] if gvk["group"] == "" else gvk["group"] + "/" + gvk["version"]
        d["properties"]["apiVersion"] = {"type": "string", "enum": [api]}
        d["properties"]["kind"] = {"type": "string", "enum": [gvk["kind"]]}
        d["required"] = sorted(set(d.get("required", [])) | {"apiVersion", "kind"})
    undescribe(defs)
    for out, kind in K8S_KINDS.items():
        write(outdir, out, kind, defs, K8S + " api/openapi-spec/swagger.json")


if __name__ == "__main__":
    main()
