"""Pod topology spread, as kube-scheduler's PodTopologySpread decides it.

A constraint counts the pods its labelSelector selects in the incoming pod's
namespace (releasing pods left out), per value (domain) of the node label
``topologyKey``, over the eligible nodes: those having every constraint's key
and, by the node inclusion policies, matching the pod's nodeSelector and
required node affinity (``nodeAffinityPolicy``, Honor unless Ignore) and,
with ``nodeTaintsPolicy: Honor``, whose NoSchedule and NoExecute taints it
tolerates. ``matchLabelKeys`` adds the incoming pod's values of those labels
to the selector.

- ``whenUnsatisfiable: DoNotSchedule`` filters (``failures``): a node without
  a constraint's key is never eligible ("missing required label"); on the
  others, the domain's count, plus one if the pod is selected itself, minus the
  lowest count of any domain may not exceed ``maxSkew``. With fewer domains
  than ``minDomains`` the lowest count is taken as 0.
- ``ScheduleAnyway`` scores (``raw_scores`` then ``normalize``): per candidate,
  the count of its domain times log(domains among the candidates + 2), plus
  maxSkew - 1, per constraint; fewer pods score higher after normalizing, and
  candidates without every key score 0.

Not modelled: the system default constraints kube-scheduler gives pods of
Services and ReplicaSets that declare none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from asyncsched.api.selectors import LabelSelector, LabelSelectorRequirement, Selector
from asyncsched.framework.hooks import BoolArray, IntArray
from asyncsched.model import TaskInfo
from asyncsched.plugins._nodematch import first_untolerated
from asyncsched.plugins._placed import PlacedPods, by_value, dense
from asyncsched.plugins._podterms import PodSet

__all__ = [
    "HOSTNAME",
    "REASON_MISSING_LABEL",
    "REASON_SKEW",
    "Constraint",
    "constraints",
    "failures",
    "normalize",
    "raw_scores",
]

REASON_SKEW = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
"""kube-scheduler's reasons, word for word."""

HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100
_DO_NOT_SCHEDULE = frozenset({"NoSchedule", "NoExecute"})
Scores = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Constraint:
    """One topology spread constraint of a pod, read."""

    max_skew: int
    key: str
    pods: PodSet
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def constraints(task: TaskInfo, hard: bool) -> list[Constraint]:
    """The task's DoNotSchedule (``hard``) or ScheduleAnyway constraints."""
    wanted = "DoNotSchedule" if hard else "ScheduleAnyway"
    pod = task.pod
    found = []
    for c in pod.spec.topology_spread_constraints:
        if c.when_unsatisfiable != wanted:
            continue
        selector = c.label_selector
        extra = [k for k in c.match_label_keys if k in pod.metadata.labels]
        if selector is not None and extra:
            more = [LabelSelectorRequirement(k, "In", [pod.metadata.labels[k]]) for k in extra]
            selector = LabelSelector(selector.match_labels, [*selector.match_expressions, *more])
        found.append(
            Constraint(
                max_skew=c.max_skew,
                key=c.topology_key,
                pods=PodSet(Selector.of(selector), frozenset((task.namespace,))),
                min_domains=c.min_domains if c.min_domains is not None else 1,
                honor_affinity=c.node_affinity_policy != "Ignore",
                honor_taints=c.node_taints_policy == "Honor",
            )
        )
    return found


def _with_keys(placed: PlacedPods, found: list[Constraint]) -> BoolArray:
    has: BoolArray = np.ones(placed.size, dtype=np.bool_)
    for c in found:
        has &= placed.labels.codes(c.key)[0] >= 0
    return has


def _included(placed: PlacedPods, task: TaskInfo, c: Constraint) -> BoolArray:
    """The nodes the node inclusion policies let count for the task."""
    labels = placed.labels
    spec = task.pod.spec
    included: BoolArray = np.ones(placed.size, dtype=np.bool_)
    if c.honor_affinity:
        included &= labels.node_selector(spec.node_selector)
        node_affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = (
            node_affinity.required_during_scheduling_ignored_during_execution
            if node_affinity is not None
            else None
        )
        if required is not None:
            included &= labels.any_term(required.node_selector_terms)
    if c.honor_taints:
        nodes = placed.nodes
        for row in placed.ssn.node_flags.tainted:
            if first_untolerated(nodes[row].taints, spec.tolerations, _DO_NOT_SCHEDULE):
                included[row] = False
    return included


def _by_domain(placed: PlacedPods, c: Constraint, eligible: BoolArray) -> tuple[Scores, BoolArray]:
    """The selected pods per domain over the eligible nodes, and which values are domains."""
    codes, vocabulary = placed.labels.codes(c.key)
    counts = placed.per_node((c.pods,), live=True)
    domains: BoolArray = np.zeros(len(vocabulary), dtype=np.bool_)
    domains[codes[eligible]] = True
    return by_value(codes, counts, len(vocabulary), eligible), domains


def failures(placed: PlacedPods, task: TaskInfo) -> list[tuple[str, BoolArray]]:
    """The nodes the task's DoNotSchedule constraints keep it off, by reason."""
    hard = constraints(task, hard=True)
    if not hard:
        return []
    has_keys = _with_keys(placed, hard)
    skewed: BoolArray = np.zeros(placed.size, dtype=np.bool_)
    for c in hard:
        counted, domains = _by_domain(placed, c, has_keys & _included(placed, task, c))
        n_domains = int(np.count_nonzero(domains))
        lowest = int(counted[domains].min()) if n_domains and n_domains >= c.min_domains else 0
        selected = 1 if c.pods.has_task(task) else 0
        codes = placed.labels.codes(c.key)[0]
        over = counted + selected - lowest > c.max_skew
        skewed[has_keys] |= over[codes[has_keys]]
    found = [(REASON_MISSING_LABEL, ~has_keys), (REASON_SKEW, skewed)]
    return [(reason, mask) for reason, mask in found if mask.any()]


def raw_scores(
    placed: PlacedPods, task: TaskInfo, candidates: IntArray
) -> tuple[Scores, BoolArray] | None:
    """The candidates' raw scores and which candidates are scored at all (they have every
    key); None when the task has no ScheduleAnyway constraint (score 0 everywhere)."""
    soft = constraints(task, hard=False)
    if not soft or not len(candidates):
        return None
    has_keys = _with_keys(placed, soft)
    kept = has_keys[candidates]
    total = np.zeros(len(candidates), dtype=np.float64)
    for c in soft:
        codes = placed.labels.codes(c.key)[0]
        if c.key == HOSTNAME:
            count = dense(placed.per_node((c.pods,), live=True), placed.size)[candidates]
            size = int(np.count_nonzero(kept))
        else:
            counted, _ = _by_domain(placed, c, has_keys & _included(placed, task, c))
            at = np.where(kept, codes[candidates], 0)
            count = np.where(kept, counted[at], 0)
            size = len(np.unique(codes[candidates][kept]))
        total += count * math.log(size + 2) + (c.max_skew - 1)
    rounded: Scores = np.floor(total + 0.5).astype(np.int64)
    return rounded, kept


def normalize(raw: Scores, kept: BoolArray) -> Scores:
    """kube-scheduler's PodTopologySpread normalization: the fewest pods score 100; the
    candidates without every key 0."""
    out: Scores = np.zeros(len(raw), dtype=np.int64)
    if not kept.any():
        return out
    values = raw[kept]
    low, high = int(values.min()), int(values.max())
    if high == 0:
        out[kept] = MAX_NODE_SCORE
    else:
        out[kept] = MAX_NODE_SCORE * (high + low - values) // high
    return out
