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
from asyncsched.model.hypernodes import CLUSTER_TOP, HyperNodeInfo, TopologyLimit
from asyncsched.model.status import OCCUPYING_NODE

__all__ = ["Search", "confine", "search"]


@dataclass(frozen=True)
class Search:
    """The candidate HyperNodes, one list per tier from the lowest, or why there are none."""

    gradients: list[list[HyperNodeInfo]]
    why_none: str = ""


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
    need = _still_needed(job)
    by_tier: dict[int, list[HyperNodeInfo]] = {}
    frontier = [root]
    while frontier:
        hn = frontier.pop()
        frontier.extend(tree.hypernodes[c] for c in hn.children)
        if hn.tier > limit.tier or not hn.nodes:
            continue
        if placed or _has_room(ssn, hn, need):
            by_tier.setdefault(hn.tier, []).append(hn)
    gradients = [sorted(by_tier[t], key=lambda h: h.name) for t in sorted(by_tier)]
    if limit.mode == "soft" and gradients and gradients[-1][0].name == CLUSTER_TOP:
        unions = _fewest_top_level(ssn, root)
        if unions:
            gradients[-1:] = [[u] for u in unions]
    if not gradients:
        return Search([], f"no HyperNode of tier {limit.tier} or lower has room for the gang")
    return Search(gradients)


def confine(ssn: Session, hn: HyperNodeInfo) -> list[tuple[str, BoolArray]]:
    """The failure mask keeping a task to ``hn`` (none for the whole cluster)."""
    if hn.name == CLUSTER_TOP:
        return []
    masks = ssn.state(_MASKS)
    found = masks.get(hn.name)
    if found is None:
        outside = np.array([n.name not in hn.nodes for n in ssn.node_list], dtype=np.bool_)
        found = masks[hn.name] = (f"not in HyperNode {hn.name}", outside)
    return [found]


_MASKS: Slot[dict[str, tuple[str, BoolArray]]] = Slot(
    __name__, dict, "Per HyperNode, the nodes outside it (the same array all session)."
)


def _rows(ssn: Session, hn: HyperNodeInfo) -> IntArray:
    masks = confine(ssn, hn)
    rows: IntArray = np.flatnonzero(~masks[0][1]) if masks else np.arange(len(ssn.node_list))
    return rows


def _still_needed(job: JobInfo) -> Resource:
    """What the gang still needs to be whole: the requests of its missing members."""
    missing = max(job.min_available - job.ready_task_num(), 0)
    pending = sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.name)[:missing]
    need = Resource()
    for task in pending:
        need = need + task.resreq
    return need


def _has_room(ssn: Session, hn: HyperNodeInfo, need: Resource) -> bool:
    """Whether ``hn``'s nodes together have ``need`` idle, now or once releasing pods go."""
    table = ssn.table
    rows = _rows(ssn, hn)
    wanted = table.vector(need)
    idle = table.idle[rows].sum(axis=0)
    future = idle + table.releasing[rows].sum(axis=0) - table.pipelined[rows].sum(axis=0)
    return bool((wanted <= idle).all() or (wanted <= future).all())


def _fewest_top_level(ssn: Session, root: HyperNodeInfo) -> list[HyperNodeInfo]:
    """Unions of the root's children, emptiest first: two of them, then three, and so on."""
    tree = ssn.hypernodes
    children = [tree.hypernodes[c] for c in root.children if tree.hypernodes[c].nodes]
    if len(children) < 2:
        return []
    table = ssn.table

    def free(hn: HyperNodeInfo) -> float:
        rows = _rows(ssn, hn)
        total = table.allocatable[rows].sum(axis=0).astype(np.float64)
        idle = table.idle[rows].sum(axis=0)
        shares = np.divide(idle, total, out=np.zeros_like(total), where=total > 0)
        return float(shares.mean())

    ranked = sorted(children, key=lambda h: (-free(h), h.name))
    unions = []
    for k in range(2, len(ranked) + 1):
        chosen = ranked[:k]
        nodes = frozenset().union(*(h.nodes for h in chosen))
        if len(nodes) == len(root.nodes):
            break  # as wide as the cluster: the root itself is tried last
        name = "+".join(h.name for h in chosen)
        unions.append(HyperNodeInfo(name, root.tier, "", "", (), nodes))
    return [*unions, root]
