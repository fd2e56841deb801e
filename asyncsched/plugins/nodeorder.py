"""nodeorder: kube-scheduler's node scores, so Volcano users get the placements they know.

Volcano runs kube-scheduler's score plugins with its own weights; this module
computes the same integer scores over the candidate rows of the node table:
least/most allocated and balanced allocation on the node's requested amount
plus the task's (as kube-scheduler counts a pod being placed), preferred node
affinity and PreferNoSchedule taints normalised across the candidates. Each
score lies in 0..100 and is multiplied by its weight.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from asyncsched.api.core import PreferredSchedulingTerm, Toleration
from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import BATCH_NODE_ORDER, BoolArray, FloatArray, IntArray
from asyncsched.model import NodeInfo, TaskInfo
from asyncsched.model.resource import CPU, MEMORY
from asyncsched.plugins._nodematch import NodeLabels, tolerates

__all__ = ["DEFAULT_WEIGHTS", "MAX_NODE_SCORE", "NodeOrderPlugin"]

MAX_NODE_SCORE = 100
GPU = "nvidia.com/gpu"

DEFAULT_WEIGHTS: dict[str, int] = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "nodeaffinity.weight": 2,
    "podaffinity.weight": 2,
    "balancedresource.weight": 1,
    "tainttoleration.weight": 3,
    "imagelocality.weight": 1,
    "podtopologyspread.weight": 2,
}
"""Volcano's argument names and defaults. podaffinity, imagelocality and
podtopologyspread are accepted but score nothing: pod affinity, node images
and topology spread constraints are not modelled."""

# What kube-scheduler counts for a pod that requests no cpu or memory, so
# best-effort pods still spread under least-allocated scoring.
_NON_ZERO_CPU = 100
_NON_ZERO_MEMORY = 200 * 1024 * 1024

Scores = npt.NDArray[np.int64]


class NodeOrderPlugin:
    """Weighted sum of kube-scheduler's node scores."""

    name: ClassVar[str] = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        self.weights = {key: arguments.get_int(key, d) for key, d in DEFAULT_WEIGHTS.items()}

    def on_session_open(self, ssn: Session) -> None:
        scorer = _Scorer(ssn, self.weights)
        ssn.add(BATCH_NODE_ORDER, self.name, scorer.scores)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _Scorer:
    def __init__(self, ssn: Session, weights: dict[str, int]) -> None:
        self.ssn = ssn
        self.least = weights["leastrequested.weight"]
        self.most = weights["mostrequested.weight"]
        self.balanced = weights["balancedresource.weight"]
        self.affinity = weights["nodeaffinity.weight"]
        self.taint = weights["tainttoleration.weight"]
        self.labels = NodeLabels(ssn.node_list)
        self.soft_tainted = [(i, n) for i, n in enumerate(ssn.node_list) if _prefer_no_schedule(n)]
        self._affinity_cache: dict[bytes, Scores] = {}
        self._taint_cache: dict[bytes, Scores] = {}

    def scores(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        total = np.zeros(len(candidates), dtype=np.int64)
        if self.least or self.most:
            allocatable, requested = self._amounts(task, candidates, (CPU, MEMORY), True)
            if self.least:
                total += self.least * _least_allocated(requested, allocatable)
            if self.most:
                total += self.most * _most_allocated(requested, allocatable)
        if self.balanced:
            total += self.balanced * self._balanced(task, candidates)
        if self.affinity:
            raw = self._preferred_affinity(task)[candidates]
            total += self.affinity * _normalize(raw, reverse=False)
        if self.taint:
            raw = self._intolerable(task)[candidates]
            total += self.taint * _normalize(raw, reverse=True)
        return total.astype(np.float64)

    def _amounts(
        self, task: TaskInfo, rows: IntArray, names: tuple[str, ...], non_zero: bool
    ) -> tuple[Scores, Scores]:
        """(allocatable, used + task request) of ``rows``, one column per name."""
        table = self.ssn.table
        allocatable = np.zeros((len(rows), len(names)), dtype=np.int64)
        requested = np.zeros((len(rows), len(names)), dtype=np.int64)
        for k, name in enumerate(names):
            request = task.resreq.get(name)
            if non_zero and request == 0:
                request = {CPU: _NON_ZERO_CPU, MEMORY: _NON_ZERO_MEMORY}.get(name, 0)
            column = table.index.get(name)
            if column is not None:
                allocatable[:, k] = table.allocatable[rows, column]
                requested[:, k] = allocatable[:, k] - table.idle[rows, column]
            requested[:, k] += request
        return allocatable, requested

    def _balanced(self, task: TaskInfo, rows: IntArray) -> Scores:
        """1 - std deviation of the requested fractions (cpu, memory, and GPUs if asked for)."""
        names = (CPU, MEMORY, GPU) if task.resreq.get(GPU) else (CPU, MEMORY)
        if not any(task.resreq.get(n) for n in names):
            return np.zeros(len(rows), dtype=np.int64)
        allocatable, requested = self._amounts(task, rows, names, False)
        present = allocatable > 0
        fraction = np.minimum(requested / np.where(present, allocatable, 1), 1.0)
        count = present.sum(axis=1)
        mean = np.where(present, fraction, 0.0).sum(axis=1) / np.maximum(count, 1)
        spread = np.where(present, (fraction - mean[:, None]) ** 2, 0.0).sum(axis=1)
        std = np.where(count > 2, np.sqrt(spread / np.maximum(count, 1)), 0.0)
        high = np.where(present, fraction, -np.inf).max(axis=1)
        low = np.where(present, fraction, np.inf).min(axis=1)
        std = np.where(count == 2, (high - low) / 2, std)
        return ((1.0 - std) * MAX_NODE_SCORE).astype(np.int64)

    def _preferred_affinity(self, task: TaskInfo) -> Scores:
        """Sum of the weights of the preferred terms each node matches (all nodes, cached)."""
        spec = task.pod.spec
        node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        terms: list[PreferredSchedulingTerm] = (
            node_affinity.preferred_during_scheduling_ignored_during_execution
            if node_affinity is not None
            else []
        )
        key = msgspec.json.encode(terms)
        found = self._affinity_cache.get(key)
        if found is None:
            found = np.zeros(self.labels.size, dtype=np.int64)
            for term in terms:
                if term.weight:
                    found += term.weight * self.labels.term(term.preference)
            self._affinity_cache[key] = found
        return found

    def _intolerable(self, task: TaskInfo) -> Scores:
        """How many PreferNoSchedule taints of each node the task does not tolerate (cached)."""
        tolerations = [t for t in task.pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")]
        key = msgspec.json.encode(tolerations)
        found = self._taint_cache.get(key)
        if found is None:
            found = np.zeros(self.labels.size, dtype=np.int64)
            for i, node in self.soft_tainted:
                found[i] = _count_intolerable(node, tolerations)
            self._taint_cache[key] = found
        return found


def _least_allocated(requested: Scores, allocatable: Scores) -> Scores:
    present = allocatable > 0
    safe = np.where(present, allocatable, 1)
    free = np.where(requested > allocatable, 0, (allocatable - requested) * MAX_NODE_SCORE // safe)
    return _mean_over_present(free, present)


def _most_allocated(requested: Scores, allocatable: Scores) -> Scores:
    present = allocatable > 0
    safe = np.where(present, allocatable, 1)
    used = np.minimum(requested, allocatable) * MAX_NODE_SCORE // safe
    return _mean_over_present(used, present)


def _mean_over_present(per_resource: Scores, present: BoolArray) -> Scores:
    """Equal-weight integer mean over the resources a node has, as kube-scheduler does."""
    count = present.sum(axis=1)
    summed = np.where(present, per_resource, 0).sum(axis=1)
    result: Scores = np.where(count > 0, summed // np.maximum(count, 1), 0)
    return result


def _normalize(raw: Scores, reverse: bool) -> Scores:
    """kube-scheduler's DefaultNormalizeScore: scale to 0..100 by the best candidate."""
    top = int(raw.max()) if len(raw) else 0
    if top == 0:
        fill = MAX_NODE_SCORE if reverse else 0
        return np.full(len(raw), fill, dtype=np.int64)
    scaled = MAX_NODE_SCORE * raw // top
    result: Scores = MAX_NODE_SCORE - scaled if reverse else scaled
    return result


def _prefer_no_schedule(node: NodeInfo) -> bool:
    return any(t.effect == "PreferNoSchedule" for t in node.taints)


def _count_intolerable(node: NodeInfo, tolerations: list[Toleration]) -> int:
    return sum(
        1
        for taint in node.taints
        if taint.effect == "PreferNoSchedule" and not any(tolerates(t, taint) for t in tolerations)
    )
