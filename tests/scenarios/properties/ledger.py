"""The cluster as the event stream tells it, one event at a time.

The ledger believes the events, not the simulator: which objects are live,
which pod is bound where and whether it ended, which PodGroups got binds at
the current instant. Invariants read it; only facts the events do not carry
(requests, labels, uids, minMember) come from the ``World``, read at the
moment of the event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.scenarios.properties.world import NodeFacts, PodFacts, World

__all__ = ["ADDS", "REMOVES", "GroupRecord", "Ledger", "ObjectKey", "PodKey", "PodRecord"]

ObjectKey = tuple[str, str, str]
"""(kind, namespace, name); cluster-scoped kinds have namespace ''."""
PodKey = tuple[str, str]

ADDS = ("submitted", "created")
REMOVES = ("deleted", "evicted")
ENDS = ("completed", "failed")


@dataclass
class PodRecord:
    """One incarnation of a pod: from its creation to its deletion."""

    namespace: str
    name: str
    created: float
    facts: PodFacts | None
    node: str = ""
    bound_at: float | None = None
    ended: str = ""
    """'completed' or 'failed' once its container finished for good."""
    reasons: list[tuple[float, str]] = field(default_factory=list)
    """(time, reason) of every 'unschedulable' event."""

    @property
    def group(self) -> str:
        return self.facts.group if self.facts is not None else ""

    @property
    def holds_node(self) -> bool:
        """Bound and still holding its requests on the node."""
        return bool(self.node) and not self.ended


@dataclass
class GroupRecord:
    min_member: int | None = None
    """minMember read when one of its pods was last bound; None: no PodGroup then."""


class Ledger:
    def __init__(self, world: World) -> None:
        self.world = world
        self.time = 0.0
        self.instants = 0
        """Distinct times at which events came."""
        self.events = 0
        self.live: dict[ObjectKey, str] = {}
        """Live objects and their uids ('' when the world does not know it)."""
        self.pods: dict[PodKey, PodRecord] = {}
        self.nodes: dict[str, NodeFacts] = {}
        self.groups: dict[PodKey, GroupRecord] = {}
        self.job_phases: dict[PodKey, str] = {}
        """The last phase of every live Volcano Job."""
        self.reasons_by_name: dict[PodKey, str] = {}
        """The last reason given to any pod of that name, whichever incarnation."""

    # -- reading ---------------------------------------------------------------------

    def pod(self, event: Mapping[str, Any]) -> PodRecord | None:
        return self.pods.get((event["namespace"], event["name"]))

    def on_node(self, node: str) -> list[PodRecord]:
        return [p for p in self.pods.values() if p.node == node and p.holds_node]

    def members(self, namespace: str, group: str) -> list[PodRecord]:
        return [p for p in self.pods.values() if p.namespace == namespace and p.group == group]

    # -- writing ---------------------------------------------------------------------

    def next_instant(self, time: float) -> None:
        self.time = time
        self.instants += 1

    def apply(self, event: Mapping[str, Any]) -> None:
        self.events += 1
        what, kind = event["event"], event["kind"]
        ns, name = event["namespace"], event["name"]
        key = (kind, ns, name)
        if what in ADDS:
            self.live[key] = self.world.uid(kind, ns, name) or ""
            if kind == "Pod":
                facts = self.world.pod(ns, name)
                # a pod the input gives bound holds its node from the start
                node = facts.node_name if facts is not None else ""
                self.pods[(ns, name)] = PodRecord(ns, name, event["time"], facts, node)
            elif kind == "Node":
                node = self.world.node(name)
                if node is not None:
                    self.nodes[name] = node
        elif what in REMOVES:
            self.live.pop(key, None)
            if kind == "Job":
                self.job_phases.pop((ns, name), None)
            if kind == "Pod":
                self.pods.pop((ns, name), None)
            elif kind == "Node":
                self.nodes.pop(name, None)
        elif kind == "Node" and what == "updated":  # cordoned, uncordoned, relabelled
            node = self.world.node(name)
            if node is not None:
                self.nodes[name] = node
        elif kind == "Pod":
            self._pod_event(event)
        elif kind == "Job" and what == "phase":
            self.job_phases[(ns, name)] = event.get("phase", "")

    def regroup(self, event: Mapping[str, Any]) -> None:
        """A pod that joined a group since it was created (the PodGroup controller names a
        lone pod's group after creating it) is read again: its events say the group."""
        if event["kind"] != "Pod" or event["event"] in ADDS:
            return
        pod = self.pod(event)
        if (
            pod is not None
            and pod.facts is not None
            and event.get("job", "") != (pod.group or pod.name)
        ):
            pod.facts = self.world.pod(pod.namespace, pod.name) or pod.facts

    def _pod_event(self, event: Mapping[str, Any]) -> None:
        pod = self.pod(event)
        if pod is None:
            return
        what = event["event"]
        if what == "bound":
            pod.node = event.get("node", "")
            pod.bound_at = event["time"]
            group = self.groups.setdefault((pod.namespace, pod.group), GroupRecord())
            group.min_member = self.world.min_member(pod.namespace, pod.group)
        elif what in ENDS:
            pod.ended = what
        elif what == "unschedulable":
            pod.reasons.append((event["time"], event.get("reason", "")))
            self.reasons_by_name[(pod.namespace, pod.name)] = event.get("reason", "")
