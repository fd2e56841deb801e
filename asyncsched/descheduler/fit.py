"""Where an evicted pod could go: the scheduler's static rules, its requests, real usage.

A pod is moved only if some other node would take it (``nodeFit``): ready and
schedulable, matched by its node selector and required node affinity, every
NoSchedule/NoExecute taint tolerated, room for its requests beside what the
pass already sent there, and (against real usage) not pushed above the
target thresholds. Otherwise the scheduler would put it straight back where
it was, or nowhere.
"""

from __future__ import annotations

from collections.abc import Mapping

from asyncsched.model import NodeInfo, Resource, TaskInfo
from asyncsched.model.resource import PODS
from asyncsched.plugins._nodematch import NodeLabels, first_untolerated

__all__ = ["Room", "static_fit"]

_FILTER_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def static_fit(task: TaskInfo, node: NodeInfo) -> str:
    """Why the scheduler would not put ``task`` on ``node`` whatever is on it ("" if it
    might)."""
    if not node.ready:
        return "not ready"
    if node.unschedulable:
        return "unschedulable"
    spec = task.pod.spec
    labels = NodeLabels([node])
    if not labels.node_selector(spec.node_selector)[0]:
        return "node selector does not match"
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None and not labels.any_term(required.node_selector_terms)[0]:
        return "node affinity does not match"
    taint = first_untolerated(node.taints, spec.tolerations, _FILTER_EFFECTS)
    if taint is not None:
        return f"taint {taint.key}={taint.value}:{taint.effect} not tolerated"
    return ""


class Room:
    """Requests the pass has added to and taken from each node so far, over the snapshot's
    idle room (so two moved pods never both count on the last free core)."""

    def __init__(self, nodes: Mapping[str, NodeInfo]) -> None:
        self.nodes = nodes
        self._delta: dict[str, Resource] = {}
        self._pods: dict[str, int] = {}

    def idle(self, name: str) -> Resource:
        node = self.nodes[name]
        return node.idle - self._delta.get(name, Resource())

    def fits(self, task: TaskInfo, name: str) -> bool:
        node = self.nodes[name]
        if node.max_pods and node.pod_count + self._pods.get(name, 0) + 1 > node.max_pods:
            return False
        idle = self.idle(name)
        return all(value <= idle.get(res) for res, value in task.resreq.items() if res != PODS)

    def add(self, task: TaskInfo, name: str) -> None:
        self._delta[name] = self._delta.get(name, Resource()) + task.resreq
        self._pods[name] = self._pods.get(name, 0) + 1

    def remove(self, task: TaskInfo, name: str) -> None:
        self._delta[name] = self._delta.get(name, Resource()) - task.resreq
        self._pods[name] = self._pods.get(name, 0) - 1
