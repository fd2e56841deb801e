"""Where a gang with ``networkTopology`` may go: HyperNodes, tier by tier, lowest first.

Volcano's allocate tries the job in every candidate HyperNode of the lowest tier,
keeps the trials in which the gang is whole, and takes the best-scoring one
(``hypernode_order``); only when no HyperNode of a tier holds the job does it go up a
tier, never above the job's limit. This module says which HyperNodes those are and
confines a task to one of them; the allocate action runs the trials.

Candidates are the HyperNodes under the search root whose tier is within the limit
and whose nodes have, together, room for what the gang still needs (idle now or once
releasing pods are gone). The search root is the virtual root, or, for a job that
already has pods placed, the highest HyperNode within the limit above those pods,
so a running job grows only where it is.

In ``soft`` mode a job that no single real HyperNode holds goes to the fewest
top-level HyperNodes that hold it, emptiest first, rather than anywhere in the
cluster as Volcano's soft mode does (volcano#5205).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asyncsched.framework import Session
from asyncsched.framework.hooks import BoolArray, IntArray
from asyncsched.framework.state import Slot
from asyncsched.model import JobInfo, Resource, TaskStatus
from asyncsched.model.hypernodes import CLUSTER_TOP, HyperNodeInfo, TopologyLimit, topology_limit
from asyncsched.model.status import OCCUPYING_NODE

__all__ = ["Search", "confine", "job_limit", "nowhere", "search"]


@dataclass(frozen=True)
class Search:
    """The candidate HyperNodes, one list per tier from the lowest, or why there are none."""

    gradients: list[list[HyperNodeInfo]]
    why_none: str = ""


def job_limit(ssn: Session, job: JobInfo) -> TopologyLimit | None:
    """The job's topology limit when it changes where the job may go: None for a job
    without ``networkTopology``, or when no HyperNode exists and nothing is wrong (the
    whole cluster is then the only HyperNode, as with no limit)."""
    if job.network_topology is None:
        return None
    limit = topology_limit(job.network_topology, ssn.hypernodes)
    if limit is None or not (limit.problem or ssn.hypernodes.has_topology):
        return None
    return limit


def search(ssn: Session, job: JobInfo, limit: TopologyLimit) -> Search:
    tree = ssn.hypernodes
    if limit.problem:
        return Search([], limit.problem)
    placed = [
        t.node_name
        for t in job.tasks.values()
        if t.node_name and t.status in OCCUPYING_NODE and t.status is not TaskStatus.RELEASING
    ]
    root = tree.top
    if placed:
        used = tree.lowest_holding(placed)
        if used.tier > limit.tier:
            why = (
                f"its placed pods already span HyperNode {used.name} of tier {used.tier}, "
                f"above the highest tier allowed, {limit.tier}"
            )
            return Search([], why)
        root = next(h for h in reversed(tree.ancestors(used.name)) if h.tier <= limit.tier)
    places = ssn.state(_PLACES)
    need = ssn.table.vector(_still_needed(job))
    under: set[str] | None = None if root.name == CLUSTER_TOP else _subtree(ssn, root)
    gradients = []
    for tier in sorted({h.tier for h in tree.hypernodes.values()}):
        if tier > limit.tier:
            break
        names, room = places.tier(ssn, tier, need)
        chosen = [
            tree.hypernodes[name]
            for i, name in enumerate(names)
            if (under is None or name in under) and (placed or room[i])
        ]
        chosen = [hn for hn in chosen if hn.nodes]
        if chosen:
            gradients.append(chosen)
    if limit.mode == "soft" and gradients and gradients[-1][0].name == CLUSTER_TOP:
        unions = _fewest_top_level(ssn, root)
        if unions:
            gradients[-1:] = [[u] for u in unions]
    if not gradients:
        if not any(h.tier <= limit.tier and h.nodes for h in tree.hypernodes.values()):
            return Search([], f"no HyperNode with nodes is of tier {limit.tier} or lower")
        return Search([], f"no HyperNode of tier {limit.tier} or lower has room for the gang")
    return Search(gradients)


def nowhere(ssn: Session, why: str) -> list[tuple[str, BoolArray]]:
    """A failure mask that keeps a task off every node, for ``why`` (no HyperNode fits)."""
    return [(why, np.ones(len(ssn.node_list), dtype=np.bool_))]


def confine(ssn: Session, hn: HyperNodeInfo) -> list[tuple[str, BoolArray]]:
    """The failure mask keeping a task to ``hn`` (none for the whole cluster)."""
    if hn.name == CLUSTER_TOP:
        return []
    places = ssn.state(_PLACES)
    found = places.masks.get(hn.name)
    if found is None:
        outside = np.ones(len(ssn.node_list), dtype=np.bool_)
        outside[_rows(ssn, hn)] = False
        found = places.masks[hn.name] = (f"not in HyperNode {hn.name}", outside)
    return [found]


class _Places:
    """Per session: each node's row, each HyperNode's rows and mask, and for each tier the
    HyperNode of every node, made once."""

    def __init__(self) -> None:
        self.row: dict[str, int] | None = None
        self.rows: dict[str, IntArray] = {}
        self.masks: dict[str, tuple[str, BoolArray]] = {}
        self.tiers: dict[int, tuple[list[str], IntArray]] = {}
        self.overlapping: set[int] = set()

    def tier(self, ssn: Session, tier: int, need: np.ndarray) -> tuple[list[str], BoolArray]:
        """The tier's HyperNodes (by name) and, for each, whether its nodes together have
        ``need`` idle, now or once releasing pods are gone (one pass over the nodes)."""
        found = self.tiers.get(tier)
        if found is None:
            tree = ssn.hypernodes
            names = sorted(h.name for h in tree.hypernodes.values() if h.tier == tier)
            index = np.full(len(ssn.node_list), len(names), dtype=np.intp)
            shared = False
            for i, name in enumerate(names):
                rows = _rows(ssn, tree.hypernodes[name])
                shared = shared or bool((index[rows] != len(names)).any())
                index[rows] = i
            found = self.tiers[tier] = (names, index)
            if shared:
                self.overlapping.add(tier)
        names, index = found
        table = ssn.table
        if tier in self.overlapping:  # a node in two HyperNodes of the tier: one by one
            tree = ssn.hypernodes
            return names, np.array([_has_room(ssn, tree.hypernodes[n], need) for n in names])
        n, slots = len(ssn.node_list), len(names) + 1
        idle = table.idle[:n]
        future = idle + table.releasing[:n] - table.pipelined[:n]
        room_now = np.ones(slots, dtype=np.bool_)
        room_later = np.ones(slots, dtype=np.bool_)
        for d in np.flatnonzero(need > 0):
            room_now &= np.bincount(index, idle[:, d], slots) >= need[d]
            room_later &= np.bincount(index, future[:, d], slots) >= need[d]
        room: BoolArray = (room_now | room_later)[:-1]
        return names, room


_PLACES: Slot[_Places] = Slot(__name__, _Places, "Rows and masks of HyperNodes, per session.")


def _rows(ssn: Session, hn: HyperNodeInfo) -> IntArray:
    places = ssn.state(_PLACES)
    found = places.rows.get(hn.name)
    if found is None:
        if places.row is None:
            places.row = {node.name: i for i, node in enumerate(ssn.node_list)}
        row = places.row
        found = np.array(sorted(row[n] for n in hn.nodes if n in row), dtype=np.intp)
        places.rows[hn.name] = found
    return found


def _still_needed(job: JobInfo) -> Resource:
    """What the gang still needs to be whole: the requests of its missing members."""
    missing = max(job.min_available - job.ready_task_num(), 0)
    pending = sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.name)[:missing]
    need = Resource()
    for task in pending:
        need = need + task.resreq
    return need


def _has_room(ssn: Session, hn: HyperNodeInfo, need: np.ndarray) -> bool:
    """Whether ``hn``'s nodes together have ``need`` idle, now or once releasing pods go."""
    table = ssn.table
    rows = _rows(ssn, hn)
    idle = table.idle[rows].sum(axis=0)
    future = idle + table.releasing[rows].sum(axis=0) - table.pipelined[rows].sum(axis=0)
    return bool((need <= idle).all() or (need <= future).all())


def _subtree(ssn: Session, root: HyperNodeInfo) -> set[str]:
    tree = ssn.hypernodes
    found, frontier = set(), [root.name]
    while frontier:
        name = frontier.pop()
        found.add(name)
        frontier.extend(tree.hypernodes[name].children)
    return found


def _free(ssn: Session, hn: HyperNodeInfo) -> float:
    """The mean share of the HyperNode's allocatable that is idle, over resources."""
    rows = _rows(ssn, hn)
    table = ssn.table
    total = table.allocatable[rows].sum(axis=0).astype(np.float64)
    idle = table.idle[rows].sum(axis=0)
    shares = np.divide(idle, total, out=np.zeros_like(total), where=total > 0)
    return float(shares.mean())


def _fewest_top_level(ssn: Session, root: HyperNodeInfo) -> list[HyperNodeInfo]:
    """Unions of the root's children, emptiest first: two of them, then three, and so on."""
    tree = ssn.hypernodes
    children = [tree.hypernodes[c] for c in root.children if tree.hypernodes[c].nodes]
    if len(children) < 2:
        return []
    ranked = sorted(children, key=lambda h: (-_free(ssn, h), h.name))
    unions = []
    for k in range(2, len(ranked) + 1):
        chosen = ranked[:k]
        nodes = frozenset().union(*(h.nodes for h in chosen))
        if len(nodes) == len(root.nodes):
            break  # as wide as the cluster: the root itself is tried last
        name = "+".join(h.name for h in chosen)
        unions.append(HyperNodeInfo(name, root.tier, "", "", (), nodes))
    return [*unions, root]
