"""predicates: which nodes a task may never use, whatever their free resources.

The node-static checks: unschedulable and not-ready nodes, nodeSelector and
required node affinity, NoSchedule/NoExecute taints. They depend on nothing
that changes during a session, so their answer is computed once per
equivalence class (the pod template's selector, required affinity and
tolerations) over all nodes and shared by every task of that class.

Then the checks that depend on the other pods, in kube-scheduler's order, each
behind Volcano's switch (all on by default): host ports (NodePorts,
``predicate.NodePortsEnable``), required pod affinity and anti-affinity,
including placed pods' anti-affinity against the incoming pod (InterPodAffinity,
``predicate.PodAffinityEnable``), and DoNotSchedule topology spread constraints
(PodTopologySpread, ``predicate.PodTopologySpreadEnable``). They follow every
pod the session places, evicts or undoes (``asyncsched.plugins._placed``); in a
session where no pod has such rules they cost nothing.

Resource fit and the pod-count limit are checked by the actions on the node
table. Reasons are worded as kube-scheduler words them, because users,
cluster-autoscaler and Karpenter read them from the pod's conditions.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec
import numpy as np

from asyncsched.api.core import NodeSelector, PodSpec, Taint, Toleration
from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import BATCH_PREDICATE, BoolArray
from asyncsched.model import NodeFlags, NodeInfo, TaskInfo
from asyncsched.plugins._nodematch import NodeLabels, first_untolerated, tolerates
from asyncsched.plugins._placed import placed_pods
from asyncsched.plugins._podrules import PodRulesFilter

__all__ = [
    "NODE_AFFINITY_ENABLE",
    "NODE_PORTS_ENABLE",
    "POD_AFFINITY_ENABLE",
    "POD_TOPOLOGY_SPREAD_ENABLE",
    "REASON_NODE_AFFINITY",
    "REASON_NOT_READY",
    "REASON_UNSCHEDULABLE",
    "TAINT_TOLERATION_ENABLE",
    "PredicatesPlugin",
]

NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"

# Volcano's other switches: accepted (and type-checked) so its configurations
# load; what they switch (volumes, DRA, its predicate cache) is not modelled.
_ACCEPTED_SWITCHES = (
    "predicate.CacheEnable",
    "predicate.NodeVolumeLimitsEnable",
    "predicate.VolumeZoneEnable",
    "predicate.VolumeBindingEnable",
    "predicate.DynamicResourceAllocationEnable",
)

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NOT_READY = "node(s) were not ready"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

_FILTER_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
_NOT_READY_TAINT = Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")

Failures = list[tuple[str, BoolArray]]


def taint_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


class PredicatesPlugin:
    """Filters nodes by scheduling gates, node affinity/selector and taints."""

    name: ClassVar[str] = "predicates"

    def __init__(self, arguments: Arguments) -> None:
        self.node_affinity = arguments.get_bool(NODE_AFFINITY_ENABLE, True)
        self.taint_toleration = arguments.get_bool(TAINT_TOLERATION_ENABLE, True)
        self.node_ports = arguments.get_bool(NODE_PORTS_ENABLE, True)
        self.pod_affinity = arguments.get_bool(POD_AFFINITY_ENABLE, True)
        self.pod_topology_spread = arguments.get_bool(POD_TOPOLOGY_SPREAD_ENABLE, True)
        for key in _ACCEPTED_SWITCHES:
            arguments.get_bool(key, False)

    def on_session_open(self, ssn: Session) -> None:
        check = _StaticCheck(
            ssn.node_list, ssn.node_flags, self.node_affinity, self.taint_toleration
        )
        wanted = self.node_ports or self.pod_affinity or self.pod_topology_spread
        placed = placed_pods(ssn) if wanted else None
        if placed is None:
            ssn.add(BATCH_PREDICATE, self.name, check.failures)
            return
        placed.attach(ssn, self.name)
        rules = PodRulesFilter(
            placed,
            ports=self.node_ports,
            affinity=self.pod_affinity,
            spread=self.pod_topology_spread,
        )

        def failures(task: TaskInfo) -> Failures:
            static = check.failures(task)
            more = rules.failures(task)
            return [*static, *more] if more else static

        ssn.add(BATCH_PREDICATE, self.name, failures)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _StaticCheck:
    """The session's node-static filter with its per-equivalence-class cache."""

    def __init__(
        self, nodes: list[NodeInfo], flags: NodeFlags, node_affinity: bool, taints: bool
    ) -> None:
        self.nodes = nodes
        self.labels = NodeLabels(nodes)
        self.check_affinity = node_affinity
        self.check_taints = taints
        self.unschedulable = flags.unschedulable
        self.not_ready = ~flags.ready
        self.tainted = [
            (i, nodes[i].taints)
            for i in flags.tainted
            if any(t.effect in _FILTER_EFFECTS for t in nodes[i].taints)
        ]
        self.cache: dict[bytes, Failures] = {}

    def failures(self, task: TaskInfo) -> Failures:
        spec = task.pod.spec
        key = msgspec.json.encode((spec.node_selector, _required(spec), spec.tolerations))
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self._evaluate(task)
        return found

    def _evaluate(self, task: TaskInfo) -> Failures:
        """Each failing node is counted under its first reason, in kube-scheduler's filter order."""
        size = len(self.nodes)
        spec = task.pod.spec
        tolerations = spec.tolerations
        decided = np.zeros(size, dtype=np.bool_)
        out: Failures = []

        def claim(reason: str, failed: BoolArray) -> None:
            fresh = failed & ~decided
            if fresh.any():
                decided[fresh] = True
                fresh.setflags(write=False)
                out.append((reason, fresh))

        if not _tolerated(tolerations, _UNSCHEDULABLE_TAINT):
            claim(REASON_UNSCHEDULABLE, self.unschedulable)
        if not _tolerated(tolerations, _NOT_READY_TAINT):
            claim(REASON_NOT_READY, self.not_ready)
        if self.check_affinity:
            matched = self.labels.node_selector(spec.node_selector)
            required = _required(spec)
            if required is not None:
                matched &= self.labels.any_term(required.node_selector_terms)
            claim(REASON_NODE_AFFINITY, ~matched)
        if self.check_taints:
            by_reason: dict[str, BoolArray] = {}
            for i, taints in self.tainted:
                taint = first_untolerated(taints, tolerations, _FILTER_EFFECTS)
                if taint is not None:
                    reason = taint_reason(taint)
                    mask = by_reason.get(reason)
                    if mask is None:
                        mask = by_reason[reason] = np.zeros(size, dtype=np.bool_)
                    mask[i] = True
            for reason, mask in by_reason.items():
                claim(reason, mask)
        return out


def _tolerated(tolerations: list[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def _required(spec: PodSpec) -> NodeSelector | None:
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    if affinity is None:
        return None
    return affinity.required_during_scheduling_ignored_during_execution
