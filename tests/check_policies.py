"""Evaluates lifeguard's ValidatingAdmissionPolicies (rendered YAML on stdin) against a
table of admission requests: who asks, the object before and after, allowed or not."""
import copy
import sys

import celpy
import yaml

AGENT = "system:serviceaccount:lifeguard-system:lifeguard-prober"
CONTROLLER = "system:serviceaccount:lifeguard-system:lifeguard-controller"
NODE_KEY = "authentication.kubernetes.io/node-name"


def user(name, node=None, groups=("system:authenticated",)):
    extra = {NODE_KEY: [node]} if node else {}
    return {"username": name, "extra": extra, "groups": list(groups)}


TENANT = user("alice@example.com")
ADMIN = user("admin", groups=("system:masters", "system:authenticated"))


def workspace_pod(node="node-2", **meta):
    pod = {
        "metadata": {
            "name": "ws-alice",
            "labels": {"lifeguard.dev/workspace": "alice"},
            "annotations": {"lifeguard.dev/disposal-confirmation": "required"},
            "finalizers": ["lifeguard.dev/disposal"],
        },
        "spec": {"nodeName": node, "containers": [{"name": "ide", "image": "ide:1"}]},
    }
    pod["metadata"].update(meta)
    return pod


def changed(obj, fn):
    new = copy.deepcopy(obj)
    fn(new)
    return new


def answer(pod, value="saved"):
    return changed(pod, lambda p: p["metadata"]["annotations"].update({"lifeguard.dev/disposal-result": value}))


POD = workspace_pod()
STOPPING = workspace_pod(deletionTimestamp="2026-12-01T22:00:00Z")
PLAIN = changed(POD, lambda p: p["metadata"].pop("labels"))
NODE = {"metadata": {"name": "node-2", "labels": {}}, "status": {}}

PROBER_ON_2 = user(AGENT, "node-2")
READY = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
FULL_NODE = {
    "metadata": {"name": "node-2", "labels": {"kubernetes.io/hostname": "node-2", "pool": "a"}},
    "spec": {"podCIDR": "10.0.2.0/24", "taints": [{"key": "dedicated", "value": "ci", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "4", "memory": "8Gi"},
        "allocatable": {"cpu": "4", "memory": "8Gi"},
        "conditions": [READY, {"type": "LifeguardProbesHealthy", "status": "True", "reason": "ChecksPass"}],
    },
}


def with_condition(node, kind, status):
    def edit(n):
        for c in n["status"]["conditions"]:
            if c["type"] == kind:
                c["status"] = status
    return changed(node, edit)


TAINTED = changed(FULL_NODE, lambda n: (
    n["metadata"]["labels"].update({"lifeguard.dev/unhealthy": "probes-failing"}),
    n["spec"]["taints"].append({"key": "lifeguard.dev/unhealthy", "value": "probes-failing", "effect": "NoSchedule"})))
UNPROVEN = changed(FULL_NODE, lambda n: (
    n["metadata"]["labels"].update({"lifeguard.dev/unproven": "true"}),
    n["spec"]["taints"].insert(0, {"key": "lifeguard.dev/unproven", "value": "true", "effect": "NoSchedule"})))
CORDONED = changed(FULL_NODE, lambda n: (
    n["spec"].update({"unschedulable": True}),
    n["spec"]["taints"].append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})))
DRAINED = changed(FULL_NODE, lambda n: (
    n["metadata"]["labels"].update({"lifeguard.dev/drained": "true"}),
    n["metadata"].update({"annotations": {"lifeguard.dev/maintenance-window": "pool-a"}})))

# (policy, what, user, old object, new object, allowed)
CASES = [
    ("lifeguard-disposal-agent-own-node", "the answer on a workspace pod of its node",
     user(AGENT, "node-2"), POD, answer(POD), True),
    ("lifeguard-disposal-agent-own-node", "a failed answer",
     user(AGENT, "node-2"), POD, answer(POD, "failed: disk full"), True),
    ("lifeguard-disposal-agent-own-node", "a pod of another node",
     user(AGENT, "node-1"), POD, answer(POD), False),
    ("lifeguard-disposal-agent-own-node", "a token without a node (before 1.30, or not pod-bound)",
     user(AGENT), POD, answer(POD), False),
    ("lifeguard-disposal-agent-own-node", "a pod that is no workspace pod",
     user(AGENT, "node-2"), PLAIN, answer(PLAIN), False),
    ("lifeguard-disposal-agent-own-node", "a new image: code as the pod's ServiceAccount",
     user(AGENT, "node-2"), POD,
     changed(answer(POD), lambda p: p["spec"]["containers"][0].update({"image": "evil:1"})), False),
    ("lifeguard-disposal-agent-own-node", "another annotation",
     user(AGENT, "node-2"), POD,
     changed(POD, lambda p: p["metadata"]["annotations"].update({"other": "x"})), False),
    ("lifeguard-disposal-agent-own-node", "an annotation removed",
     user(AGENT, "node-2"), POD,
     changed(POD, lambda p: p["metadata"]["annotations"].pop("lifeguard.dev/disposal-confirmation")), False),
    ("lifeguard-disposal-agent-own-node", "the disposal finalizer removed",
     user(AGENT, "node-2"), POD, changed(POD, lambda p: p["metadata"].update({"finalizers": []})), False),
    ("lifeguard-disposal-agent-own-node", "a label removed (the pod leaves lifeguard)",
     user(AGENT, "node-2"), POD, changed(POD, lambda p: p["metadata"].update({"labels": {}})), False),
    ("lifeguard-disposal-agent-own-node", "the controller is not the agent: not matched",
     user(CONTROLLER), POD, changed(POD, lambda p: p["metadata"].update({"finalizers": []})), True),
    ("lifeguard-disposal-answers", "the agent answers a pod being stopped",
     user(AGENT, "node-2"), STOPPING, answer(STOPPING), True),
    ("lifeguard-disposal-answers", "the agent answers a running pod: the stop has not begun",
     user(AGENT, "node-2"), POD, answer(POD), False),
    ("lifeguard-disposal-answers", "a tenant forges the answer on a running pod",
     TENANT, POD, answer(POD), False),
    ("lifeguard-disposal-answers", "a tenant forges the answer on a pod being stopped",
     TENANT, STOPPING, answer(STOPPING), False),
    ("lifeguard-disposal-answers", "a tenant changes the agent's answer",
     TENANT, answer(STOPPING, "failed: disk full"), answer(STOPPING), False),
    ("lifeguard-disposal-answers", "a tenant removes the agent's answer",
     TENANT, answer(STOPPING), STOPPING, False),
    ("lifeguard-disposal-answers", "a tenant removes the confirmation requirement",
     TENANT, POD, changed(POD, lambda p: p["metadata"]["annotations"].pop("lifeguard.dev/disposal-confirmation")), False),
    ("lifeguard-disposal-answers", "the agent cannot drop the confirmation requirement either",
     user(AGENT, "node-2"), STOPPING,
     changed(STOPPING, lambda p: p["metadata"]["annotations"].pop("lifeguard.dev/disposal-confirmation")), False),
    ("lifeguard-disposal-answers", "a tenant's other annotation",
     TENANT, POD, changed(POD, lambda p: p["metadata"]["annotations"].update({"note": "x"})), True),
    ("lifeguard-disposal-answers", "the controller releases the pod (finalizer only)",
     user(CONTROLLER), STOPPING, changed(STOPPING, lambda p: p["metadata"].update({"finalizers": []})), True),
    ("lifeguard-disposal-answers", "a cluster administrator answers by hand",
     ADMIN, POD, answer(POD), True),
    ("lifeguard-prober-own-node", "the prober on its own node",
     user(AGENT, "node-2"), NODE, changed(NODE, lambda n: n["metadata"]["labels"].update({"x": "y"})), True),
    ("lifeguard-prober-own-node", "the prober on another node",
     user(AGENT, "node-1"), NODE, changed(NODE, lambda n: n["metadata"]["labels"].update({"x": "y"})), False),
    ("lifeguard-prober-own-node", "someone else: not matched",
     user(CONTROLLER), NODE, changed(NODE, lambda n: n["metadata"]["labels"].update({"x": "y"})), True),
] + [("lifeguard-node-writes",) + row for row in [
    # The prober's own writes (prober/src/node.rs).
    ("the prober taints its node, with the mirror label",
     PROBER_ON_2, FULL_NODE, TAINTED, True),
    ("the prober removes its taint and label",
     PROBER_ON_2, TAINTED, FULL_NODE, True),
    ("the prober releases an unproven node (taint and label)",
     PROBER_ON_2, UNPROVEN, FULL_NODE, True),
    ("the prober writes its condition",
     PROBER_ON_2, FULL_NODE, with_condition(FULL_NODE, "LifeguardProbesHealthy", "False"), True),
    ("the prober adds its condition to a node without one",
     PROBER_ON_2, changed(FULL_NODE, lambda n: n["status"].update({"conditions": [READY]})),
     FULL_NODE, True),
    # What its token could do before, and may not.
    ("the prober uncordons a node",
     PROBER_ON_2, CORDONED, FULL_NODE, False),
    ("the prober cordons a node",
     PROBER_ON_2, FULL_NODE, CORDONED, False),
    ("the prober removes another's taint",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["spec"].update({"taints": []})), False),
    ("the prober adds another's taint",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["spec"]["taints"].append(
         {"key": "gpu", "effect": "NoSchedule"})), False),
    ("the prober sets a node-restriction.kubernetes.io label",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["metadata"]["labels"].update(
         {"node-restriction.kubernetes.io/pool": "gpu"})), False),
    ("the prober removes another's label",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["metadata"]["labels"].pop("pool")), False),
    ("the prober sets the controller's drained label",
     PROBER_ON_2, FULL_NODE, DRAINED, False),
    ("the prober adds an annotation",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["metadata"].update(
         {"annotations": {"x": "y"}})), False),
    ("the prober adds a finalizer",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["metadata"].update(
         {"finalizers": ["x/hold"]})), False),
    ("the prober changes the kubelet's Ready condition",
     PROBER_ON_2, FULL_NODE, with_condition(FULL_NODE, "Ready", "False"), False),
    ("the prober advertises capacity",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["status"]["capacity"].update(
         {"example.com/gpu": "8"})), False),
    ("the prober sets the pod CIDR",
     PROBER_ON_2, FULL_NODE, changed(FULL_NODE, lambda n: n["spec"].update(
         {"podCIDR": "10.9.0.0/24"})), False),
    # The controller's own writes (controller/src/window/node_signal.rs).
    ("the controller marks a node drained, naming the window",
     user(CONTROLLER), FULL_NODE, DRAINED, True),
    ("the controller clears the mark",
     user(CONTROLLER), DRAINED, FULL_NODE, True),
    ("the controller uncordons a node",
     user(CONTROLLER), CORDONED, FULL_NODE, False),
    ("the controller removes a taint",
     user(CONTROLLER), FULL_NODE, changed(FULL_NODE, lambda n: n["spec"].update({"taints": []})), False),
    ("the controller removes the prober's taint",
     user(CONTROLLER), TAINTED, changed(TAINTED, lambda n: n["spec"].update(
         {"taints": FULL_NODE["spec"]["taints"]})), False),
    ("the controller sets another's label",
     user(CONTROLLER), FULL_NODE, changed(FULL_NODE, lambda n: n["metadata"]["labels"].update(
         {"node-restriction.kubernetes.io/pool": "gpu"})), False),
    ("the controller writes a condition",
     user(CONTROLLER), FULL_NODE, with_condition(FULL_NODE, "LifeguardProbesHealthy", "False"), False),
    # Everyone else: not matched.
    ("the kubelet: not matched",
     user("system:node:node-2"), FULL_NODE, with_condition(FULL_NODE, "Ready", "False"), True),
    ("an administrator uncordons: not matched",
     ADMIN, CORDONED, FULL_NODE, True),
]]


def evaluate(env, expression, activation):
    return env.program(env.compile(expression)).evaluate(activation)


def admits(policy, request_user, old, new, operation="UPDATE"):
    """None when the policy does not apply; else (allowed, message of the first failure)."""
    env = celpy.Environment()
    activation = {
        "request": celpy.json_to_cel({"userInfo": request_user, "operation": operation}),
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
    }
    spec = policy["spec"]
    for condition in spec.get("matchConditions", []):
        if not bool(evaluate(env, condition["expression"], activation)):
            return None
    variables = {}
    for variable in spec.get("variables", []):
        activation["variables"] = celpy.celtypes.MapType(
            {celpy.celtypes.StringType(k): v for k, v in variables.items()}
        )
        variables[variable["name"]] = evaluate(env, variable["expression"], activation)
    activation["variables"] = celpy.celtypes.MapType(
        {celpy.celtypes.StringType(k): v for k, v in variables.items()}
    )
    for validation in spec["validations"]:
        if not bool(evaluate(env, validation["expression"], activation)):
            return False, validation.get("message", "")
    return True, ""


NAME_LABEL = "kubernetes.io/metadata.name"
# (namespace, a Workspace may be created there)
NAMESPACE_CASES = [
    ("kube-system", False),
    ("lifeguard-system", False),
    ("lifeguard-probes", False),
    ("default", True),
    ("team-a", True),
]


def names(selector, operator):
    return sorted(
        value
        for e in (selector or {}).get("matchExpressions", [])
        if e["key"] == NAME_LABEL and e["operator"] == operator
        for value in e["values"]
    )


def check_exempt_namespaces(docs, policies):
    """lifeguard-exempt-namespaces refuses Workspaces in exactly the namespaces every
    webhook leaves out, and only there. Returns (passed, failed)."""
    passed = failed = 0
    policy = policies.get("lifeguard-exempt-namespaces")
    if policy is None:
        sys.exit("policy lifeguard-exempt-namespaces is not in the rendered manifests")
    refused = names(policy["spec"]["matchConstraints"].get("namespaceSelector"), "In")
    for doc in docs:
        if doc.get("kind") not in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            continue
        for webhook in doc.get("webhooks", []):
            exempt = names(webhook.get("namespaceSelector"), "NotIn")
            if exempt == refused:
                passed += 1
            else:
                failed += 1
                print(f"FAILED: webhook {webhook['name']} exempts {exempt}, but "
                      f"lifeguard-exempt-namespaces refuses Workspaces in {refused}")
    workspace = {"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                 "metadata": {"name": "alice"}, "spec": {"podTemplate": {}}}
    for namespace, allowed in NAMESPACE_CASES:
        selected = namespace in refused
        outcome = admits(policy, TENANT, None, workspace, "CREATE") if selected else None
        got = True if outcome is None else outcome[0]
        if got == allowed:
            passed += 1
        else:
            failed += 1
            print(f"FAILED: lifeguard-exempt-namespaces: a Workspace in {namespace}: "
                  f"{'allowed' if got else 'denied'}, expected {'allowed' if allowed else 'denied'}")
    return passed, failed


def main():
    docs = [doc for doc in yaml.safe_load_all(sys.stdin) if doc]
    policies = {
        doc["metadata"]["name"]: doc
        for doc in docs
        if doc.get("kind") == "ValidatingAdmissionPolicy"
    }
    passed, failed = check_exempt_namespaces(docs, policies)
    for name, what, request_user, old, new, allowed in CASES:
        if name not in policies:
            sys.exit(f"policy {name} is not in the rendered manifests")
        outcome = admits(policies[name], request_user, old, new)
        got = True if outcome is None else outcome[0]
        if got == allowed:
            passed += 1
        else:
            failed += 1
            print(f"FAILED: {name}: {what}: {'allowed' if got else 'denied'}, expected "
                  f"{'allowed' if allowed else 'denied'} {outcome}")
    print(f"policies: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
