"""Checks the upgrade-tool recipes in docs/operations.md ("Upgrade one node pool").

The recipes hand a node to system-upgrade-controller, kured or `kubectl drain` only once
lifeguard has drained it. A recipe that does not parse, names a field or flag the tool does
not have, or waits on a label lifeguard does not write would silently upgrade nodes with
running workspaces, so each one is checked here:

- every YAML block parses; core kinds are left to kubernetes-validate (the caller);
- the system-upgrade-controller Plan is validated strictly (unknown fields fail) against
  the Plan schema transcribed below from the project's generated CRD
  (pkg/crds/yaml/generated/upgrade.cattle.io_plans.yaml, commit 10dc220 of
  rancher/system-upgrade-controller): the fields a recipe may use, with their types;
- kured's container args use only flags kured 1.14 to 1.23 define (cmd/kured/main.go);
- the labels the recipes wait on are the ones lifeguard writes (api/src/names.rs).

Usage: check_doc_recipes.py DOC NAMES_RS OUT_DIR. Writes each YAML block of the section
to OUT_DIR/recipe-N.yaml for the caller's kubernetes-validate pass. Exit 1 on any finding.
"""

import re
import sys

import jsonschema
import yaml

SECTION = "## Upgrade one node pool"

_STRINGS = {"type": "array", "items": {"type": "string"}}
_REQUIREMENT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["key", "operator"],
    "properties": {
        "key": {"type": "string"},
        "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
        "values": _STRINGS,
    },
}
_SELECTOR = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "matchExpressions": {"type": "array", "items": _REQUIREMENT},
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
_ANY = {}
# spec of upgrade.cattle.io/v1 Plan: every field the CRD has (so a misspelt one fails),
# typed in detail where a lifeguard recipe uses it.
PLAN_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "upgrade.cattle.io/v1"},
        "kind": {"const": "Plan"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
        },
        "spec": {
            "type": "object",
            "required": ["upgrade"],
            "additionalProperties": False,
            "properties": {
                "channel": {"type": "string"},
                "concurrency": {"type": "integer", "minimum": 1},
                "cordon": {"type": "boolean"},
                "drain": {"type": "object"},
                "exclusive": {"type": "boolean"},
                "imagePullSecrets": {"type": "array"},
                "jobActiveDeadlineSecs": {"type": "integer"},
                "nodeSelector": _SELECTOR,
                "postCompleteDelay": {"type": "string"},
                "postCompleteLabels": {"type": "object"},
                "prepare": {"type": "object"},
                "priorityClassName": {"type": "string"},
                "secrets": {"type": "array"},
                "serviceAccountName": {"type": "string"},
                "tolerations": {"type": "array"},
                "upgrade": {
                    "type": "object",
                    "required": ["image"],
                    "properties": {
                        "image": {"type": "string"},
                        "args": _STRINGS,
                        "command": _STRINGS,
                        "envFrom": _ANY,
                        "envs": _ANY,
                        "securityContext": _ANY,
                        "volumes": _ANY,
                    },
                    "additionalProperties": False,
                },
                "version": {"type": "string"},
                "window": {"type": "object"},
            },
        },
    },
}

# Flags kured's daemon defines in both 1.14 (its first with --concurrency) and 1.23
# (cmd/kured/main.go): a recipe may use these.
KURED_FLAGS = {
    "alert-filter-match-only", "alert-filter-regexp", "alert-firing-only",
    "annotate-nodes", "blocking-pod-selector", "concurrency", "drain-grace-period",
    "drain-pod-selector", "drain-timeout", "ds-name", "ds-namespace", "end-time",
    "force-reboot", "lock-annotation", "lock-release-delay", "lock-ttl", "log-format",
    "message-template-drain", "message-template-reboot", "message-template-uncordon",
    "metrics-host", "metrics-port", "node-id", "notify-url", "period",
    "post-reboot-node-labels", "pre-reboot-node-labels", "prefer-no-schedule-taint",
    "prometheus-url", "reboot-command", "reboot-days", "reboot-delay", "reboot-sentinel",
    "reboot-sentinel-command", "skip-wait-for-delete-timeout", "slack-channel",
    "slack-hook-url", "slack-username", "start-time", "time-zone",
}


def section(doc):
    start = doc.index(SECTION)
    end = doc.find("\n## ", start + len(SECTION))
    return doc[start : end if end >= 0 else len(doc)]


def constants(names_rs):
    return dict(re.findall(r'pub const (\w+): &str = "([^"]+)";', names_rs))


def main(doc_path, names_path, out_dir):
    findings = []
    text = section(open(doc_path, encoding="utf-8").read())
    names = constants(open(names_path, encoding="utf-8").read())
    drained, workspace = names["NODE_DRAINED_LABEL"], names["WORKSPACE_LABEL"]

    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    shells = re.findall(r"```sh\n(.*?)```", text, re.S)
    plans = kured = 0
    for i, block in enumerate(blocks):
        try:
            doc = yaml.safe_load(block)
        except yaml.YAMLError as err:
            findings.append(f"YAML block {i + 1} does not parse: {err}")
            continue
        if isinstance(doc, dict) and doc.get("kind") == "Plan":
            plans += 1
            for err in jsonschema.Draft7Validator(PLAN_SCHEMA).iter_errors(doc):
                path = ".".join(str(p) for p in err.absolute_path)
                findings.append(f"Plan {path or '(root)'}: {err.message}")
            keys = [
                e.get("key")
                for e in doc.get("spec", {}).get("nodeSelector", {}).get("matchExpressions", [])
            ]
            if drained not in keys:
                findings.append(f"the Plan's nodeSelector does not require {drained}")
        elif isinstance(doc, dict) and "args" in doc:
            kured += 1
            for arg in doc["args"]:
                flag = re.match(r"--([a-z-]+)(?:=(.*))?$", str(arg))
                if not flag or flag.group(1) not in KURED_FLAGS:
                    findings.append(f"kured has no flag {arg!r}")
                elif flag.group(1) == "blocking-pod-selector" and flag.group(2) != workspace:
                    findings.append(
                        f"kured's blocking pod selector is {flag.group(2)!r}, "
                        f"not lifeguard's workspace label {workspace!r}"
                    )
        elif doc is not None:
            with open(f"{out_dir}/recipe-{i + 1}.yaml", "w", encoding="utf-8") as out:
                out.write(block)
    if plans != 1 or kured != 1:
        findings.append(f"expected one Plan and one kured args block, found {plans} and {kured}")
    waits = [s for s in shells if "kubectl wait" in s]
    escaped = drained.replace(".", "\\.")
    if not waits or not all(f"labels.{escaped}}}'=true" in s for s in waits):
        findings.append(f"the kubectl drain loop does not wait on the label {drained}=true")

    for finding in findings:
        print(f"    {doc_path}: {finding}")
    if not findings:
        print(f"    {doc_path}: the Plan, the kured args and the drain loop match their tools and lifeguard's labels")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
