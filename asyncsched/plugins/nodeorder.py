"""nodeorder: kube-scheduler's node scores, so Volcano users get the placements they know.

Volcano runs kube-scheduler's score plugins with its own weights; this module
computes the same integer scores over the candidate rows of the node table:
least/most allocated and balanced allocation on the node's requested amount
plus the task's (as kube-scheduler counts a pod being placed), preferred node
affinity and PreferNoSchedule taints normalised across the candidates, and,
from the pods placed so far in the session, preferred inter-pod affinity and
anti-affinity (InterPodAffinity) and ScheduleAnyway topology spread
(PodTopologySpread), also normalised across the candidates
(``asyncsched.plugins._podrules``). Each score lies in 0..100 and is
multiplied by its weight.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from asyncsched.api.core import PreferredSchedulingTerm, Toleration
from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import BATCH_NODE_ORDER, BatchNodeOrderFn, FloatArray, IntArray
from asyncsched.model import NodeInfo, NodeTable, Resource, TaskInfo, kernels
from asyncsched.model.resource import CPU, MEMORY
from asyncsched.plugins._nodematch import NodeLabels, tolerates
from asyncsched.plugins._placed import placed_pods
from asyncsched.plugins._podrules import PodRulesScorer

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
"""Volcano's argument names and defaults. imagelocality is accepted but scores
nothing: the images on nodes are not modelled."""

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
        affinity = self.weights["podaffinity.weight"]
        spread = self.weights["podtopologyspread.weight"]
        placed = placed_pods(ssn) if affinity or spread else None
        if placed is not None:
            placed.attach(ssn, self.name)
            scorer.pod_rules = PodRulesScorer(placed, affinity=affinity, spread=spread)
        score: BatchNodeOrderFn = scorer
        ssn.add(BATCH_NODE_ORDER, self.name, score)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _Scorer:
    __slots__ = (
        "_affinity_cache",
        "_classes",
        "_epoch",
        "_taint_cache",
        "affinity",
        "balanced",
        "labels",
        "least",
        "most",
        "pod_rules",
        "soft_tainted",
        "ssn",
        "taint",
    )

    def __init__(self, ssn: Session, weights: dict[str, int]) -> None:
        self.ssn = ssn
        self.least = weights["leastrequested.weight"]
        self.most = weights["mostrequested.weight"]
        self.balanced = weights["balancedresource.weight"]
        self.affinity = weights["nodeaffinity.weight"]
        self.taint = weights["tainttoleration.weight"]
        self.labels = NodeLabels(ssn.node_list)
        nodes = ssn.node_list
        self.soft_tainted = [
            (i, nodes[i]) for i in ssn.node_flags.tainted if _prefer_no_schedule(nodes[i])
        ]
        self._affinity_cache: dict[bytes, _Raw] = {}
        self._taint_cache: dict[bytes, _Raw] = {}
        self._classes: dict[Resource, _ResourceClass] = {}
        self._epoch = -1
        self.pod_rules: PodRulesScorer | None = None
        """Scores from where other pods are; None when no pod of the session has such rules."""

    def __call__(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        return self.scores(task, candidates)

    def all_rows(self, task: TaskInfo) -> FloatArray | None:
        """Every node's score, when the normalized scores are the same on every node.

        Kept per (request, affinity terms, tolerations) and refreshed on the rows
        that changed, like the resource scores it adds up.
        """
        if self.pod_rules is not None and not self.pod_rules.constant(task):
            return None
        offset = 0
        if self.affinity:
            _, constant, value = self._preferred_affinity_full(task)
            if not constant:
                return None
            offset += self.affinity * value
        if self.taint:
            _, constant, value = self._intolerable_full(task)
            if not constant:
                return None
            offset += self.taint * value
        entry = self._synced_class(task)
        scores = entry.scores
        found = entry.totals.get(offset)
        if found is None:
            found = entry.totals[offset] = _Total(scores, offset)
        found.sync(entry.table)
        return found.scores

    def scores(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        total = self._resource_scores(task)[candidates]
        if self.affinity:
            raw, constant, value = self._preferred_affinity_full(task)
            if constant and len(candidates):
                total += self.affinity * value
            else:
                total += self.affinity * _normalize(raw[candidates], reverse=False)
        if self.taint:
            raw, constant, value = self._intolerable_full(task)
            if constant and len(candidates):
                total += self.taint * value
            else:
                total += self.taint * _normalize(raw[candidates], reverse=True)
        if self.pod_rules is not None:
            total += self.pod_rules.scores(task, candidates)
        return total.astype(np.float64)

    def _resource_scores(self, task: TaskInfo) -> Scores:
        """Least/most allocated and balanced scores of every node for the task's request.

        Cached per request (an equivalence class) and refreshed only on the rows the
        table's change log names, so placing a task rescores one node, not all.
        """
        return self._synced_class(task).scores

    def _synced_class(self, task: TaskInfo) -> _ResourceClass:
        """The task's request class, its scores brought up to the table's version."""
        entry = self._resource_class(task)
        entry.sync(entry.table)
        return entry

    def _resource_class(self, task: TaskInfo) -> _ResourceClass:
        table = self.ssn.table
        if table.epoch != self._epoch:
            self._epoch = table.epoch
            self._classes = {}
        entry = self._classes.get(task.resreq)
        if entry is None:
            entry = self._classes[task.resreq] = _ResourceClass(
                self._parameters(task), len(self.ssn.node_list), table
            )
        return entry

    def _parameters(self, task: TaskInfo) -> _Parameters:
        """The kernel's arguments for a request: columns, requests and weights."""
        index = self.ssn.table.index
        lm_names = (CPU, MEMORY) if self.least or self.most else ()
        lm_cols = np.array([index.get(n, -1) for n in lm_names], dtype=np.intp)
        lm_req = np.array(
            [
                task.resreq.get(n) or {CPU: _NON_ZERO_CPU, MEMORY: _NON_ZERO_MEMORY}[n]
                for n in lm_names
            ],
            dtype=np.int64,
        )
        names: tuple[str, ...] = (CPU, MEMORY, GPU) if task.resreq.get(GPU) else (CPU, MEMORY)
        if not self.balanced or not any(task.resreq.get(n) for n in names):
            names = ()
        bal_cols = np.array([index.get(n, -1) for n in names], dtype=np.intp)
        bal_req = np.array([task.resreq.get(n) for n in names], dtype=np.int64)
        return (lm_cols, lm_req, self.least, self.most, bal_cols, bal_req, self.balanced)

    def _preferred_affinity_full(self, task: TaskInfo) -> _Raw:
        """Sum of the weights of the preferred terms each node matches (all nodes, cached);
        whether it is the same on every node, and then its normalized score (a constant)."""
        spec = task.pod.spec
        node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        terms: list[PreferredSchedulingTerm] = (
            node_affinity.preferred_during_scheduling_ignored_during_execution
            if node_affinity is not None
            else []
        )
        key = msgspec.json.encode(terms) if terms else b""
        found = self._affinity_cache.get(key)
        if found is None:
            raw = np.zeros(self.labels.size, dtype=np.int64)
            for term in terms:
                if term.weight:
                    raw += term.weight * self.labels.term(term.preference)
            found = self._affinity_cache[key] = _raw(raw, reverse=False)
        return found

    def _intolerable_full(self, task: TaskInfo) -> _Raw:
        """How many PreferNoSchedule taints of each node the task does not tolerate (cached),
        whether that count is the same on every node, and then its normalized score."""
        tolerations = [t for t in task.pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")]
        key = msgspec.json.encode(tolerations) if tolerations else b""
        found = self._taint_cache.get(key)
        if found is None:
            raw = np.zeros(self.labels.size, dtype=np.int64)
            for i, node in self.soft_tainted:
                raw[i] = _count_intolerable(node, tolerations)
            found = self._taint_cache[key] = _raw(raw, reverse=True)
        return found


_Raw = tuple[Scores, bool, int]


def _raw(raw: Scores, reverse: bool) -> _Raw:
    """A raw per-node score, whether it is constant, and its normalized value if so."""
    constant = _constant(raw)
    value = int(_normalize(raw[:1], reverse)[0]) if constant and len(raw) else 0
    return raw, constant, value


def _constant(raw: Scores) -> bool:
    return not len(raw) or bool(raw.min() == raw.max())


_Parameters = tuple[IntArray, Scores, int, int, IntArray, Scores, int]


class _ResourceClass:
    """The resource scores of every node for one request, kept in step with the table."""

    __slots__ = ("n", "parameters", "scores", "sync", "table", "totals")

    def __init__(self, parameters: _Parameters, n: int, table: NodeTable) -> None:
        self.parameters = parameters
        self.scores: Scores = np.zeros(n, dtype=np.int64)
        self.table = table
        self.n = n
        self.totals: dict[int, _Total] = {}
        self.sync = kernels.ScoreRows(table.allocatable, table.idle, *parameters, self.scores).sync
        """Rescores the rows the table's change log names since it last did (all the first
        time): the kernel bound to the table's arrays, which stay the same while its epoch
        does (the classes start over when it changes)."""


class _Total:
    """Resource scores plus a constant, as floats: what all_rows hands out."""

    __slots__ = ("scores", "sync")

    def __init__(self, resource_scores: Scores, offset: int) -> None:
        self.scores: FloatArray = np.zeros(len(resource_scores), dtype=np.float64)
        self.sync = kernels.OffsetRows(self.scores, resource_scores, offset).sync
        """Adds the offset to the resource scores of the rows the table's change log names
        since it last did (all the first time); synced after the resource scores."""


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
