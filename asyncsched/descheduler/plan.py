"""What one descheduling pass measured and decided: usage figures in, a plan out.

Both are plain values: the shell fills ``UsageFigures`` from Prometheus (or
the simulator from its pods' declared usage), the pure detect functions return
a ``Plan``, and the shell carries out its evictions through the effects
interface, or prints it (``--dry-run``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from asyncsched.framework.results import Eviction

__all__ = ["NodeLoad", "NodeUsage", "Plan", "PlannedEviction", "PodUsage", "UsageFigures"]


@dataclass(frozen=True)
class NodeUsage:
    """A node's real usage averaged over the window, as fractions (0..1) of its capacity."""

    cpu: float
    memory: float


@dataclass(frozen=True)
class PodUsage:
    """A pod's real usage averaged over the window: cores and bytes."""

    cpu: float
    memory: float


@dataclass(frozen=True)
class UsageFigures:
    nodes: Mapping[str, NodeUsage] = field(default_factory=dict)
    pods: Mapping[str, PodUsage] = field(default_factory=dict)
    """By ``namespace/name``."""
    problems: tuple[str, ...] = ()
    """What could not be measured (shown as warnings; nothing is decided on it)."""


@dataclass(frozen=True)
class PlannedEviction:
    key: str
    """``namespace/name`` of the pod (the cache's task key)."""
    namespace: str
    name: str
    node: str
    plugin: str
    reason: str
    destination: str = ""
    """A node the pod fits on elsewhere (nodeFit), "" if not checked."""
    cpu: float = 0.0
    """Its usage (cores), the figure taken off its node."""
    memory: float = 0.0
    owner: str = ""
    """The controller that makes it again (``Kind/namespace/name``)."""
    siblings: frozenset[str] = frozenset()
    """Its owner's pods on its node when it was chosen (for the next passes' history)."""

    def eviction(self) -> Eviction:
        return Eviction(self.key, self.namespace, self.name, self.reason)


@dataclass(frozen=True)
class NodeLoad:
    """A node's usage in percent of allocatable, before and after the plan."""

    node: str
    state: str
    """over, under, normal, or no data."""
    before: Mapping[str, float]
    after: Mapping[str, float]


@dataclass(frozen=True)
class Plan:
    evictions: tuple[PlannedEviction, ...] = ()
    nodes: tuple[NodeLoad, ...] = ()
    kept: tuple[tuple[str, str], ...] = ()
    """Pods on hot nodes that were looked at and left alone, with why."""
    notes: tuple[str, ...] = ()
    """Why a plugin decided nothing, and what data was missing."""

    def __add__(self, other: Plan) -> Plan:
        return Plan(
            self.evictions + other.evictions,
            self.nodes + other.nodes,
            self.kept + other.kept,
            self.notes + other.notes,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "evictions": [
                {
                    "pod": e.key,
                    "node": e.node,
                    "plugin": e.plugin,
                    "reason": e.reason,
                    "destination": e.destination,
                    "usage": {"cpu": round(e.cpu, 4), "memory": round(e.memory)},
                }
                for e in self.evictions
            ],
            "nodes": [
                {
                    "node": n.node,
                    "state": n.state,
                    "before": {k: round(v, 2) for k, v in n.before.items()},
                    "after": {k: round(v, 2) for k, v in n.after.items()},
                }
                for n in self.nodes
            ],
            "kept": [{"pod": pod, "why": why} for pod, why in self.kept],
            "notes": list(self.notes),
        }

    def render(self) -> str:
        """The plan as tables: node usage before/after, then the evictions and why."""
        lines = ["NODE                 STATE     CPU% BEFORE->AFTER   MEM% BEFORE->AFTER   PODS"]
        for n in self.nodes:
            lines.append(
                f"{n.node:<20} {n.state:<9} {_pair(n, 'cpu'):<20} {_pair(n, 'memory'):<20} "
                f"{_pair(n, 'pods', digits=0)}"
            )
        lines.append("")
        if self.evictions:
            lines.append(f"{'POD':<40} {'NODE':<16} {'TO':<16} {'PLUGIN':<20} WHY")
            for e in self.evictions:
                lines.append(
                    f"{e.key:<40} {e.node:<16} {e.destination or '-':<16} {e.plugin:<20} {e.reason}"
                )
        else:
            lines.append("no evictions")
        if self.kept:
            lines.append("")
            lines.append("kept:")
            lines.extend(f"  {pod}: {why}" for pod, why in self.kept)
        if self.notes:
            lines.append("")
            lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def _pair(load: NodeLoad, name: str, digits: int = 1) -> str:
    if name not in load.before:
        return "-"
    before, after = load.before[name], load.after.get(name, load.before[name])
    return f"{before:.{digits}f} -> {after:.{digits}f}"
