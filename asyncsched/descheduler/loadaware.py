"""LoadAware: move pods off nodes whose real usage is too high, while others are idle enough.

Volcano descheduler's LoadAware plugin, decided purely over a snapshot and the
usage figures. Per resource (cpu, memory, pods) a node's usage is compared with
``thresholds`` and ``targetThresholds`` (percent of allocatable, or with
``useDeviationThresholds`` percent points around the cluster's mean): a node
under every threshold is *under*-used (a destination, if schedulable), a node
above any target is *over*-used (a source). Nothing happens unless there is
at least one of each, more under-used nodes than ``numberOfNodes``, and not
every node is under-used. From the most used source down, its evictable pods
are taken biggest user first (of the resource it is over in) until the node
is back under its targets or the under-used nodes' headroom below their
targets is spent.

What differs from Volcano, on purpose: a node or pod without usage figures is
left alone (Volcano counts a missing figure as zero usage); a pod must fit on
another node by its requests as well as by usage when ``nodeFit`` is on; gangs
and PodDisruptionBudgets are respected (``asyncsched.descheduler.evictor``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from asyncsched.descheduler.evictor import EvictionGuard, owner_of
from asyncsched.descheduler.fit import Room, static_fit
from asyncsched.descheduler.plan import NodeLoad, Plan, PlannedEviction, PodUsage, UsageFigures
from asyncsched.descheduler.policy import LOAD_AWARE, EvictorArgs, LoadAwareArgs
from asyncsched.model import ClusterSnapshot, NodeInfo, TaskInfo
from asyncsched.model.resource import CPU, MEMORY, PODS

__all__ = ["detect_load"]

_NAMES = (CPU, MEMORY, PODS)


@dataclass(eq=False)
class _Node:
    info: NodeInfo
    usage: dict[str, float]
    """Percent of allocatable, per resource."""
    low: dict[str, float]
    high: dict[str, float]
    capacity: dict[str, float]
    """cpu in cores, memory in bytes, pods in pods."""

    @property
    def name(self) -> str:
        return self.info.name

    def over(self) -> list[str]:
        return [r for r in _NAMES if self.usage[r] > self.high[r]]

    def under(self) -> bool:
        return all(self.usage[r] <= self.low[r] for r in _NAMES)


def detect_load(
    snapshot: ClusterSnapshot,
    usage: UsageFigures,
    args: LoadAwareArgs,
    evictor: EvictorArgs,
    guard: EvictionGuard | None = None,
) -> Plan:
    """The evictions LoadAware would make now, with node usage before and after."""
    guard = guard or EvictionGuard(
        snapshot, evictor, args.exclude_namespaces, args.include_namespaces
    )
    notes = list(usage.problems)
    unresolved = guard.unresolved()
    if unresolved:
        return Plan(notes=(*notes, unresolved))
    nodes, missing = _measure(snapshot, usage, args, evictor)
    if missing:
        notes.append(f"no usage figures for node(s) {', '.join(missing)}: left alone")
    before = {n.name: dict(n.usage) for n in nodes}
    states = {n.name: "over" if n.over() else "under" if n.under() else "normal" for n in nodes}
    for n in nodes:
        if states[n.name] == "under" and (n.info.unschedulable or not n.info.ready):
            states[n.name] = "normal"
    low = [n for n in nodes if states[n.name] == "under"]
    high = [n for n in nodes if states[n.name] == "over"]
    plan_notes = _nothing_to_do(nodes, low, high, args, missing)
    evictions: list[PlannedEviction] = []
    kept: list[tuple[str, str]] = []
    if not plan_notes:
        _evict(snapshot, usage, high, low, nodes, guard, evictor, evictions, kept)
    loads = tuple(
        NodeLoad(n.name, states[n.name], before[n.name], dict(n.usage)) for n in nodes
    ) + tuple(NodeLoad(name, "no data", {}, {}) for name in missing)
    return Plan(tuple(evictions), loads, tuple(kept), (*notes, *plan_notes))


def _measure(
    snapshot: ClusterSnapshot, usage: UsageFigures, args: LoadAwareArgs, evictor: EvictorArgs
) -> tuple[list[_Node], list[str]]:
    nodes: list[_Node] = []
    missing: list[str] = []
    for name, info in snapshot.nodes.items():
        if any(info.labels.get(k) != v for k, v in evictor.node_selector.items()):
            continue
        figures = usage.nodes.get(name)
        if figures is None:
            missing.append(name)
            continue
        alloc = info.allocatable
        capacity = {
            CPU: alloc.get(CPU) / 1000.0,
            MEMORY: float(alloc.get(MEMORY)),
            PODS: float(info.max_pods or alloc.get(PODS) or 0),
        }
        pods = sum(1 for t in info.tasks.values() if t.status.value in _ON_NODE)
        nodes.append(
            _Node(
                info,
                {
                    CPU: 100.0 * figures.cpu,
                    MEMORY: 100.0 * figures.memory,
                    PODS: 100.0 * pods / capacity[PODS] if capacity[PODS] else 0.0,
                },
                {},
                {},
                capacity,
            )
        )
    _thresholds(nodes, args)
    return nodes, missing


_ON_NODE = frozenset({"Binding", "Bound", "Running", "Releasing"})


def _thresholds(nodes: list[_Node], args: LoadAwareArgs) -> None:
    """Each node's low and high marks in percent; an unset resource never decides."""
    deviation = args.use_deviation_thresholds
    mean = {r: sum(n.usage[r] for n in nodes) / len(nodes) if nodes else 0.0 for r in _NAMES}
    for n in nodes:
        for r in _NAMES:
            if r not in args.thresholds:  # an unset resource neither holds back nor triggers
                n.low[r], n.high[r] = math.inf, math.inf
                continue
            if deviation:
                n.low[r] = _clamp(mean[r] - args.thresholds[r])
                n.high[r] = _clamp(mean[r] + args.target_thresholds[r])
            else:
                n.low[r] = args.thresholds[r]
                n.high[r] = args.target_thresholds[r]


def _clamp(value: float) -> float:
    return min(100.0, max(0.0, value))


def _nothing_to_do(
    nodes: list[_Node], low: list[_Node], high: list[_Node], args: LoadAwareArgs, missing: list[str]
) -> list[str]:
    if not low:
        return ["LoadAware: no node is under the thresholds; nothing to do"]
    if len(low) <= args.number_of_nodes:
        return [
            f"LoadAware: {len(low)} node(s) under the thresholds, not more than numberOfNodes "
            f"({args.number_of_nodes}); nothing to do"
        ]
    if len(low) == len(nodes) and not missing:
        return ["LoadAware: every node is under the thresholds; nothing to do"]
    if not high:
        return ["LoadAware: no node is above the target thresholds; nothing to do"]
    return []


def _evict(
    snapshot: ClusterSnapshot,
    usage: UsageFigures,
    high: list[_Node],
    low: list[_Node],
    nodes: list[_Node],
    guard: EvictionGuard,
    evictor: EvictorArgs,
    evictions: list[PlannedEviction],
    kept: list[tuple[str, str]],
) -> None:
    # Headroom of the under-used nodes below their targets: an upper bound on what moves.
    headroom = {
        r: sum((n.high[r] - n.usage[r]) / 100.0 * n.capacity[r] for n in low) for r in _NAMES
    }
    room = Room(snapshot.nodes)
    by_name = {n.name: n for n in nodes}
    high.sort(key=lambda n: (-max(n.usage[r] - n.high[r] for r in _NAMES), n.name))
    for source in high:
        over = source.over()
        reason = _reason(source, over)
        key_resource = CPU if CPU in over else MEMORY
        candidates = []
        for task in source.info.tasks.values():
            why = guard.why_not(task)
            if why:
                kept.append((task.uid, why))
                continue
            figures = usage.pods.get(task.uid)
            if figures is None:
                kept.append((task.uid, "no usage figures for it"))
                continue
            candidates.append((task, figures))
        candidates.sort(
            key=lambda c: (-(c[1].cpu if key_resource == CPU else c[1].memory), c[0].uid)
        )
        for task, figures in candidates:
            if not source.over() or any(headroom[r] <= 0 for r in _NAMES):
                break
            why = guard.why_not(task)  # an earlier eviction may have spent its gang or budget
            if why:
                kept.append((task.uid, why))
                continue
            destination = ""
            if evictor.node_fit:
                destination = _destination(task, figures, source, by_name, low, room)
                if not destination:
                    kept.append((task.uid, "fits on no other node (nodeFit)"))
                    continue
            guard.take(task)
            moved = {CPU: figures.cpu, MEMORY: figures.memory, PODS: 1.0}
            for r in _NAMES:
                source.usage[r] -= (
                    100.0 * moved[r] / source.capacity[r] if source.capacity[r] else 0
                )
                headroom[r] -= moved[r]
            if destination:
                target = by_name[destination]
                for r in _NAMES:
                    cap = target.capacity[r]
                    target.usage[r] += 100.0 * moved[r] / cap if cap else 0.0
            evictions.append(
                PlannedEviction(
                    key=task.uid,
                    namespace=task.namespace,
                    name=task.name,
                    node=source.name,
                    plugin=LOAD_AWARE,
                    reason=reason,
                    destination=destination,
                    owner=owner_of(task),
                    siblings=guard.siblings(task),
                    cpu=figures.cpu,
                    memory=figures.memory,
                )
            )


def _destination(
    task: TaskInfo,
    figures: PodUsage,
    source: _Node,
    by_name: dict[str, _Node],
    low: list[_Node],
    room: Room,
) -> str:
    """The node the pod would go to: first an under-used one, then any other whose usage stays
    under its targets with the pod's usage added; "" if none. The cheap tests first: the
    scheduler's rules are checked only on a node with the room."""
    under = {n.name for n in low}
    ordered = sorted(by_name.values(), key=lambda n: (n.name not in under, n.usage[CPU], n.name))
    for node in ordered:
        if node.name == source.name:
            continue
        cap = node.capacity
        added = {
            CPU: 100.0 * figures.cpu / cap[CPU] if cap[CPU] else 0.0,
            MEMORY: 100.0 * figures.memory / cap[MEMORY] if cap[MEMORY] else 0.0,
            PODS: 100.0 / cap[PODS] if cap[PODS] else 0.0,
        }
        if any(node.usage[r] + added[r] > node.high[r] for r in _NAMES):
            continue
        if not room.fits(task, node.name) or static_fit(task, node.info):
            continue
        room.add(task, node.name)
        room.remove(task, source.name)
        return node.name
    return ""


def _reason(node: _Node, over: list[str]) -> str:
    marks = ", ".join(f"{r} {node.usage[r]:.0f}% > {node.high[r]:.0f}%" for r in over)
    return f"LoadAware: node {node.name} over target ({marks})"
