"""Required pod anti-affinity is never broken: judged from the pod and node documents by
Kubernetes' documented rules, not by the scheduler's code.

A required anti-affinity term of pod P (``labelSelector``, ``namespaces`` or
``namespaceSelector``, ``topologyKey``) forbids any pod it selects to run in the same
topology domain as P: on a node with the same value of the ``topologyKey`` label as
P's node (a node without the label is in no domain). The term selects pods of P's own
namespace unless it lists namespaces or has a namespaceSelector (empty: every
namespace; this oracle knows no namespace labels but ``kubernetes.io/metadata.name``).
The rule binds both ways: the scheduler may place neither a pod that P's term selects
beside P, nor P beside such a pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.scenarios.properties.invariants import Invariant, describe
from tests.scenarios.properties.ledger import Ledger, PodRecord

__all__ = ["AntiAffinityHeld", "selects"]


def _selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: a missing selector selects nothing, an empty one all."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, op = expression["key"], expression["operator"]
        values = expression.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def selects(term: Mapping[str, Any], owner: str, namespace: str, labels: Mapping[str, str]) -> bool:
    """Does the anti-affinity term of a pod of namespace ``owner`` select a pod of
    ``namespace`` with ``labels``?"""
    listed = term.get("namespaces") or []
    chosen = term.get("namespaceSelector")
    if not listed and chosen is None:
        in_scope = namespace == owner
    else:
        by_name = {"kubernetes.io/metadata.name": namespace}
        in_scope = namespace in listed or (
            chosen is not None and _selector_matches(chosen, by_name)
        )
    return in_scope and _selector_matches(term.get("labelSelector"), labels)


class AntiAffinityHeld(Invariant):
    """No pod is bound into the topology domain of a running pod whose required
    anti-affinity selects it, nor a pod with such a term beside a pod it selects."""

    name = "pod anti-affinity"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "bound":
            return
        pod, node = ledger.pod(event), ledger.nodes.get(event.get("node", ""))
        if pod is None or pod.facts is None or node is None:
            return
        for other in ledger.pods.values():
            if other is pod or not other.holds_node or other.facts is None:
                continue
            there = ledger.nodes.get(other.node)
            if there is None:
                continue
            for holder, held in ((other, pod), (pod, other)):
                for term in holder.facts.apart_from if holder.facts else ():
                    key = term.get("topologyKey", "")
                    value = node.labels.get(key)
                    if value is None or there.labels.get(key) != value:
                        continue
                    if _selected(term, holder, held):
                        self.fail(
                            ledger,
                            describe("Pod", pod.namespace, pod.name),
                            f"bound to {event['node']}, in the {key}={value} domain of "
                            f"{other.namespace}/{other.name} (on {other.node}), but "
                            f"{holder.name}'s required anti-affinity selects {held.name}",
                        )


def _selected(term: Mapping[str, Any], holder: PodRecord, held: PodRecord) -> bool:
    labels = held.facts.labels if held.facts is not None else {}
    return selects(term, holder.namespace, held.namespace, labels)
