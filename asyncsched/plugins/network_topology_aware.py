"""network-topology-aware: choose HyperNodes and nodes by the network, as Volcano does.

- Among the HyperNodes of one tier that hold a gang (``hypernode_order``): the one the
  gang fills most, Volcano's HyperNode binpack over the resources it weighs,
  ``(used + request) / allocatable``, 0 where the gang overflows; ties go to the
  HyperNode already holding more of the job's pods.
- The nodes for a pod of a job with ``networkTopology``: 1 on the lowest-tier HyperNode
  where the job already has pods, less the higher the tier at which a node meets it
  (``(top - tier) / (top - lowest)``), 0 before the job has any pod placed.
- The nodes for any other pod (``hypernode.binpack.normal-pod.enable``): the binpack
  of the HyperNode holding the node at each tier, tier t weighed ``fading^(t-1)``, so
  ordinary pods fill racks already in use and leave whole racks for gangs.

Every score is 0..100 x ``weight``. ``hypernode.gradient.evict.max-hypernodes`` is for
Volcano's gang preemption, which is not built here; given, it is warned about unused.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from asyncsched.framework import Arguments, Session, Slot
from asyncsched.framework.hooks import BATCH_NODE_ORDER, HYPERNODE_ORDER, FloatArray, IntArray
from asyncsched.model import JobInfo, Resource, TaskInfo
from asyncsched.model.hypernodes import CLUSTER_TOP, HyperNodeInfo
from asyncsched.model.status import OCCUPYING_NODE, TaskStatus
from asyncsched.plugins.binpack import resource_weights

__all__ = ["NetworkTopologyAwarePlugin"]

MAX_SCORE = 100.0
PREFIX = "hypernode.binpack"


class NetworkTopologyAwarePlugin:
    name: ClassVar[str] = "network-topology-aware"

    def __init__(self, arguments: Arguments) -> None:
        weight = arguments.get_int("weight", 1)
        self.weight = 1 if weight < 0 else weight
        self.resource_weights = resource_weights(arguments, self.name, PREFIX)
        self.normal_pods = arguments.get_bool(f"{PREFIX}.normal-pod.enable", True)
        fading = arguments.get_float(f"{PREFIX}.normal-pod.fading", 0.8)
        self.fading = 0.8 if fading < 0 else fading

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0 or not ssn.hypernodes.has_topology:
            return
        ssn.add(HYPERNODE_ORDER, self.name, lambda job, hn: self._hypernode(ssn, job, hn))
        ssn.add(BATCH_NODE_ORDER, self.name, lambda task, rows: self._nodes(ssn, task, rows))

    def on_session_close(self, ssn: Session) -> None:
        pass

    # -- HyperNodes --------------------------------------------------------------------

    def _hypernode(self, ssn: Session, job: JobInfo, hn: HyperNodeInfo) -> float:
        maps = ssn.state(_MAPS).of(ssn)
        rows = maps.rows(hn)
        request = Resource()
        for task in job.tasks_in(TaskStatus.PENDING):
            request = request + task.resreq
        table = ssn.table
        allocatable = table.allocatable[rows].sum(axis=0)
        used = allocatable - table.idle[rows].sum(axis=0)
        one = self._binpack_many(
            table.vector(request), used[None], allocatable[None], table.dimensions
        )
        score = float(one[0])
        here = sum(1 for t in job.tasks.values() if t.node_name in hn.nodes)
        # Volcano adds the locality share only to tied HyperNodes; a share below 1/100 of a
        # binpack step keeps the order of untied ones the same.
        return MAX_SCORE * self.weight * (score + here / max(len(job.tasks), 1) * 1e-3)

    # -- nodes ---------------------------------------------------------------------------

    def _nodes(self, ssn: Session, task: TaskInfo, candidates: IntArray) -> FloatArray:
        job = ssn.jobs.get(task.job)
        if job is not None and job.network_topology is not None:
            scores = self._near_the_job(ssn, job)
        elif self.normal_pods:
            scores = self._tiers_binpack(ssn, task)
        else:
            return np.zeros(len(candidates), dtype=np.float64)
        found: FloatArray = scores[candidates] * (MAX_SCORE * self.weight)
        return found

    def _near_the_job(self, ssn: Session, job: JobInfo) -> FloatArray:
        maps = ssn.state(_MAPS).of(ssn)
        tree = ssn.hypernodes
        n = len(ssn.node_list)
        placed = {
            t.node_name
            for t in job.tasks.values()
            if t.node_name and t.status in OCCUPYING_NODE and t.status is not TaskStatus.RELEASING
        }
        if not placed:
            return np.zeros(n, dtype=np.float64)
        allocated = tree.lowest_holding(placed)
        meets = {h.name: h.tier for h in tree.ancestors(allocated.name)}
        top, low = tree.top.tier, maps.lowest_tier
        span = top - low
        by_hn = np.zeros(len(maps.lowest) + 1, dtype=np.float64)  # last: in no HyperNode
        for i, name in enumerate(maps.lowest):
            if name == allocated.name:
                by_hn[i] = 1.0
                continue
            tier = next((meets[h.name] for h in tree.ancestors(name) if h.name in meets), top)
            by_hn[i] = 1.0 if span <= 0 else (top - tier) / span
        scores: FloatArray = by_hn[maps.lowest_index[:n]]
        return scores

    def _tiers_binpack(self, ssn: Session, task: TaskInfo) -> FloatArray:
        maps = ssn.state(_MAPS).of(ssn)
        table = ssn.table
        n = len(ssn.node_list)
        request = table.vector(task.resreq)
        allocatable_rows = table.allocatable[:n].astype(np.float64)
        used_rows = allocatable_rows - table.idle[:n]
        total = np.zeros(n, dtype=np.float64)
        weights = 0.0
        for tier, (names, index) in maps.tiers.items():
            weight = self.fading ** (tier - 1) if tier > 0 else 1.0
            slots = len(names) + 1  # the last: in no HyperNode of this tier
            at = index[:n]
            allocatable = np.stack(
                [np.bincount(at, allocatable_rows[:, d], slots) for d in range(len(request))],
                axis=1,
            )
            used = np.stack(
                [np.bincount(at, used_rows[:, d], slots) for d in range(len(request))], axis=1
            )
            per_hn = self._binpack_many(request, used, allocatable, table.dimensions)
            per_hn[-1] = 1.0
            total += weight * per_hn[at]
            weights += weight
        scores: FloatArray = total / weights if weights else total
        return scores

    def _binpack_many(
        self, request: np.ndarray, used: np.ndarray, allocatable: np.ndarray, names: list[str]
    ) -> FloatArray:
        """Volcano's HyperNode binpack for each row of ``used`` and ``allocatable``: the
        weighted mean of ``(used + request) / allocatable`` over the weighed resources the
        request asks for, 0 where one would overflow."""
        total = np.zeros(used.shape[0], dtype=np.float64)
        overflow = np.zeros(used.shape[0], dtype=np.bool_)
        weighed = 0.0
        for i, name in enumerate(names):
            weight = self.resource_weights.get(name, 0)
            if request[i] <= 0 or weight <= 0:
                continue
            filled = used[:, i] + request[i]
            capacity = allocatable[:, i]
            overflow |= (capacity <= 0) | (filled > capacity)
            total += weight * np.divide(
                filled, capacity, out=np.zeros_like(total), where=capacity > 0
            )
            weighed += weight
        scores: FloatArray = np.where(overflow, 0.0, total / weighed if weighed else 0.0)
        return scores


class _Maps:
    """Per session: each node's lowest HyperNode and its HyperNode at each tier, as row
    indexes into the session's node list (-1, read as the last slot: in none)."""

    def __init__(self) -> None:
        self.built = False
        self.lowest: list[str] = []
        self.lowest_index = np.zeros(0, dtype=np.intp)
        self.lowest_tier = 0
        self.tiers: dict[int, tuple[list[str], IntArray]] = {}
        self._rows: dict[str, IntArray] = {}
        self._names: list[str] = []
        self._pos: dict[str, int] = {}

    def of(self, ssn: Session) -> _Maps:
        if self.built:
            return self
        tree = ssn.hypernodes
        self._names = [node.name for node in ssn.node_list]
        self._pos = {name: row for row, name in enumerate(self._names)}
        real = [h for h in tree.hypernodes.values() if h.name != CLUSTER_TOP]
        self.lowest_tier = min((h.tier for h in real), default=tree.top.tier)
        lowest = np.full(len(self._names), -1, dtype=np.intp)
        chosen: dict[str, int] = {}
        for tier in sorted({h.tier for h in real}):
            names = sorted(h.name for h in real if h.tier == tier)
            index = np.full(len(self._names), len(names), dtype=np.intp)
            for i, name in enumerate(names):
                for row in self.rows(tree.hypernodes[name]):
                    if index[row] == len(names):
                        index[row] = i
                    if lowest[row] < 0:
                        lowest[row] = chosen.setdefault(name, len(chosen))
            self.tiers[tier] = (names, index)
        lowest[lowest < 0] = len(chosen)
        self.lowest, self.lowest_index = list(chosen), lowest
        self.built = True
        return self

    def rows(self, hn: HyperNodeInfo) -> IntArray:
        found = self._rows.get(hn.name)
        if found is None:
            pos = self._pos
            found = np.array(sorted(pos[n] for n in hn.nodes if n in pos), dtype=np.intp)
            self._rows[hn.name] = found
        return found


_MAPS: Slot[_Maps] = Slot(__name__, _Maps, "Each node's HyperNodes, as indexes, per session.")
