"""The Helm chart and the kustomize install must not drift (tests/check-chart runs this).

    check_chart.py HELM.yaml KUSTOMIZE.yaml [KUSTOMIZE.yaml ...]
    check_chart.py --values-table CHART_DIR [DOC.md ...]

HELM.yaml is `helm template --include-crds --skip-tests` of charts/lifeguard with some
values; the KUSTOMIZE files are `kubectl kustomize` of what those values stand for. Every
object of one must be in the other, field by field, except for the differences allowed
below, each with the reason it is allowed. Prints every difference with its path; exits 1
if there is any.

With --values-table: the table of values made from the chart's values.schema.json and
values.yaml; with DOC files, checks that the table between TABLE_START and TABLE_END in
each is exactly that table (the chart's README and docs/operations.md).
"""

import json
import sys

import yaml

# Labels Helm's conventions put on every object the chart templates (metadata.labels only;
# selectors and pod templates carry none of them, so a switch between the two installs
# never changes a selector).
HELM_LABELS = {"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}
# The release's namespace: `helm install -n lifeguard-system --create-namespace` makes it
# (Helm stores the release there before it applies anything, so a chart cannot own it).
# Its Pod Security label (privileged, for the prober's hostPath) is set by the user
# (charts/lifeguard/README.md).
RELEASE_NAMESPACE = ("v1", "Namespace", None, "lifeguard-system")
# CRDs: Helm installs crds/ verbatim, untemplated, so they lack the label kustomize's
# `labels:` adds. tests/check-chart also keeps crds/ byte-equal to manifests/crds.
CRD_KIND = "CustomResourceDefinition"
PART_OF = "app.kubernetes.io/part-of"
# The objects of kustomize components (the node-scoped policies, cert-manager's Issuers
# and Certificates): an overlay above manifests/install adds them, so install's `labels:`
# does not reach them; the chart labels them like every other object it makes.
NODE_SCOPED = {"lifeguard-prober-own-node", "lifeguard-disposal-agent-own-node"}
CERT_MANAGER = "cert-manager.io/v1"
# CEL, where whitespace means nothing: Go's YAML parser (kustomize's, and the API server's)
# keeps an extra line break where a folded scalar (>-) has more-indented lines, PyYAML does
# not, so these fields are compared with each run of whitespace as one space.
CEL_FIELDS = {"expression", "messageExpression"}


def key(obj):
    meta = obj.get("metadata", {})
    return (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name"))


def load(paths):
    objects = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for obj in yaml.safe_load_all(f):
                if not obj:
                    continue
                k = key(obj)
                if k in objects:
                    raise SystemExit(f"{path}: {k} appears twice")
                objects[k] = obj
    return objects


def allow_helm_differences(obj):
    """The chart's object with its allowed differences taken out."""
    labels = obj.get("metadata", {}).get("labels", {})
    for label in HELM_LABELS:
        labels.pop(label, None)
    return obj


def allow_kustomize_differences(obj):
    if obj.get("kind") == CRD_KIND:
        labels = obj["metadata"].get("labels", {})
        labels.pop(PART_OF, None)
        if not labels:
            obj["metadata"].pop("labels", None)
    node_scoped = obj["metadata"].get("name") in NODE_SCOPED and obj["kind"].startswith("ValidatingAdmissionPolicy")
    if node_scoped or obj.get("apiVersion") == CERT_MANAGER:
        obj["metadata"].setdefault("labels", {}).setdefault(PART_OF, "lifeguard")
    return obj


def without_cel_whitespace(value, field=None):
    if isinstance(value, dict):
        return {k: without_cel_whitespace(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [without_cel_whitespace(v) for v in value]
    if field in CEL_FIELDS and isinstance(value, str):
        return " ".join(value.split())
    return value


def diff(a, b, path, out):
    """Appends to out every path where a (chart) and b (kustomize) differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}"
            if k not in a:
                out.append(f"{p}: only in kustomize: {short(b[k])}")
            elif k not in b:
                out.append(f"{p}: only in the chart: {short(a[k])}")
            else:
                diff(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items in the chart, {len(b)} in kustomize: {short(a)} != {short(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: chart {short(a)} != kustomize {short(b)}")


def short(value):
    text = json.dumps(value, default=str)
    return text if len(text) < 160 else text[:157] + "..."


def main(helm_path, kustomize_paths):
    chart = {k: without_cel_whitespace(allow_helm_differences(o)) for k, o in load([helm_path]).items()}
    kustomize = {
        k: without_cel_whitespace(allow_kustomize_differences(o)) for k, o in load(kustomize_paths).items()
    }
    kustomize.pop(RELEASE_NAMESPACE, None)
    problems = []
    for k in sorted(set(chart) | set(kustomize), key=str):
        name = "/".join(str(p) for p in k[1:] if p)
        if k not in chart:
            problems.append(f"{name}: only in kustomize")
        elif k not in kustomize:
            problems.append(f"{name}: only in the chart")
        else:
            found = []
            diff(chart[k], kustomize[k], "", found)
            problems += [f"{name}: {d}" for d in found]
    for p in problems:
        print(f"    {p}")
    if problems:
        return 1
    print(f"    {len(chart)} objects equal")
    return 0


TABLE_START = "<!-- values: generated by `tests/check_chart.py --values-table charts/lifeguard` -->"
TABLE_END = "<!-- end of values -->"


def schema_leaves(schema, props, prefix, values):
    """(path, schema, default) of each value: objects declared inline are walked into."""
    for k, p in props.items():
        path = prefix + k
        v = values.get(k) if isinstance(values, dict) else None
        if "properties" in p and "$ref" not in p:
            yield from schema_leaves(schema, p["properties"], path + ".", v)
        else:
            yield path, p, v


def values_table(chart_dir):
    with open(f"{chart_dir}/values.schema.json", encoding="utf-8") as f:
        schema = json.load(f)
    with open(f"{chart_dir}/values.yaml", encoding="utf-8") as f:
        values = yaml.safe_load(f)
    rows = ["| value | default | meaning |", "| --- | --- | --- |"]
    for path, p, v in schema_leaves(schema, schema["properties"], "", values):
        meaning = p.get("description", "")
        if not meaning:
            raise SystemExit(f"values.schema.json: {path} has no description")
        if "enum" in p:
            meaning += " One of " + ", ".join(f"`{json.dumps(e)}`" if e == "" else f"`{e}`" for e in p["enum"]) + "."
        default = f"`{v}`" if isinstance(v, str) and v else f"`{json.dumps(v, separators=(', ', ': '))}`"
        rows.append(f"| `{path}` | {default} | {meaning} |")
    return "\n".join(rows)


def check_tables(chart_dir, docs):
    table = values_table(chart_dir)
    failed = 0
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        start, end = text.find(TABLE_START), text.find(TABLE_END)
        if start < 0 or end < start:
            print(f"    {doc}: no values table between {TABLE_START} and {TABLE_END}")
            failed = 1
        elif text[start + len(TABLE_START) : end].strip() != table:
            print(f"    {doc}: the values table differs from values.schema.json and values.yaml; write")
            print(f"    `tests/check_chart.py --values-table {chart_dir}`'s output there")
            failed = 1
        else:
            print(f"    {doc}: the values table matches the schema")
    return failed


if __name__ == "__main__":
    if sys.argv[1:2] == ["--values-table"] and len(sys.argv) >= 3:
        if len(sys.argv) == 3:
            print(values_table(sys.argv[2]))
            sys.exit(0)
        sys.exit(check_tables(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
