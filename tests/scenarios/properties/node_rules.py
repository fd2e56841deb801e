"""Whether a node may take a pod, by Kubernetes' rules: taints, nodeSelector, required
node affinity and cordoning, written from the API's documented semantics rather than
from the scheduler's predicates, so they can judge them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.scenarios.properties.world import NodeFacts, PodFacts

__all__ = ["why_not_allowed"]

_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
_UNSCHEDULABLE_TAINT = {
    "key": "node.kubernetes.io/unschedulable",
    "value": "",
    "effect": "NoSchedule",
}


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool(toleration.get("value", "") == taint["value"])


def _matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expression["key"], expression["operator"], expression.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels:
        try:
            have, bound = int(labels[key]), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def why_not_allowed(pod: PodFacts, node: NodeFacts) -> str:
    """Why ``node`` may not take ``pod``; '' when it may."""
    if pod.gated:
        return "it has scheduling gates (the API server refuses to bind it)"
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} does not match the node's labels"
    terms = pod.required_terms
    if terms and not any(
        t["matchExpressions"] and all(_matches(e, node.labels) for e in t["matchExpressions"])
        for t in terms
    ):
        return "no required node affinity term matches the node's labels"
    taints = list(node.taints)
    if node.unschedulable:
        taints.append(_UNSCHEDULABLE_TAINT)
    for taint in taints:
        if taint["effect"] in _BLOCKING_EFFECTS and not any(
            tolerates(t, taint) for t in pod.tolerations
        ):
            return f"taint {taint['key']}={taint['value']}:{taint['effect']} is not tolerated"
    return ""
