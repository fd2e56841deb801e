"""Inter-pod affinity and anti-affinity, as kube-scheduler's InterPodAffinity decides them.

Filter (``failures``), over every node at once, with kube-scheduler's reasons:

- required affinity: each term needs a pod it selects in the node's domain of
  the term's topology key (the nodes sharing the node's value of that label),
  and the node must have every term's key. A pod counts for the terms only if
  it is selected by all of them. When no pod anywhere is, and the incoming pod
  would be selected by all its own terms, any node having the keys passes: the
  first pod of a group that wants to be together is not kept waiting for itself.
- required anti-affinity: no node whose domain holds a pod a term selects.
- symmetry: no node whose domain holds a pod with a required anti-affinity term
  that selects the incoming pod.

Score (``raw_scores`` then ``normalize``): per node, the weights of the
incoming pod's preferred terms times the pods they select in the node's domain
(minus for anti-affinity), plus the weights of placed pods' preferred terms that
select the incoming pod, counted in those pods' domains; scaled to 0..100 over
the candidates. As in Volcano, which builds the plugin without defaulted
arguments, placed pods' required affinity adds nothing (hardPodAffinityWeight 0).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from asyncsched.framework.hooks import BoolArray
from asyncsched.model import TaskInfo
from asyncsched.plugins._nodematch import Codes
from asyncsched.plugins._placed import PlacedPods, by_value
from asyncsched.plugins._podterms import Term

__all__ = [
    "REASON_AFFINITY",
    "REASON_ANTI_AFFINITY",
    "REASON_EXISTING_ANTI_AFFINITY",
    "failures",
    "normalize",
    "raw_scores",
]

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
"""kube-scheduler's reasons, word for word, in the order it checks them."""

MAX_NODE_SCORE = 100
Scores = npt.NDArray[np.int64]


def failures(placed: PlacedPods, task: TaskInfo) -> list[tuple[str, BoolArray]]:
    """The nodes each rule keeps the task off (masks may overlap; empty ones are left out)."""
    terms = placed.terms(task)
    found: list[tuple[str, BoolArray]] = []
    if terms.affinity:
        found.append((REASON_AFFINITY, _unmet_affinity(placed, task, terms.affinity)))
    if terms.anti_affinity:
        found.append((REASON_ANTI_AFFINITY, _met_anti_affinity(placed, terms.anti_affinity)))
    existing = _existing_anti_affinity(placed, task)
    if existing is not None:
        found.append((REASON_EXISTING_ANTI_AFFINITY, existing))
    return [(reason, mask) for reason, mask in found if mask.any()]


def _at_nodes(by_value: BoolArray, codes: Codes) -> BoolArray:
    """Per node, ``by_value`` at the node's value of the label (False without the label)."""
    has = codes >= 0
    out: BoolArray = np.zeros(len(codes), dtype=np.bool_)
    out[has] = by_value[codes[has]]
    return out


def _unmet_affinity(placed: PlacedPods, task: TaskInfo, terms: tuple[Term, ...]) -> BoolArray:
    counts = placed.per_node(tuple(t.pods for t in terms))
    passed: BoolArray = np.ones(placed.size, dtype=np.bool_)
    has_keys: BoolArray = np.ones(placed.size, dtype=np.bool_)
    anywhere = False
    for term in terms:
        codes, vocabulary = placed.labels.codes(term.key)
        has_keys &= codes >= 0
        held = by_value(codes, counts, len(vocabulary)) > 0
        anywhere = anywhere or bool(held.any())
        passed &= _at_nodes(held, codes)
    if not anywhere and all(t.pods.has_task(task) for t in terms):
        return ~has_keys
    return ~passed


def _met_anti_affinity(placed: PlacedPods, terms: tuple[Term, ...]) -> BoolArray:
    """Nodes in a domain holding a pod that a term selects. As kube-scheduler counts them
    per (key, value), terms with the same key block each other's domains too."""
    blocked: dict[str, BoolArray] = {}
    for term in terms:
        counts = placed.per_node((term.pods,))
        codes, vocabulary = placed.labels.codes(term.key)
        held = by_value(codes, counts, len(vocabulary)) > 0
        before = blocked.get(term.key)
        blocked[term.key] = held if before is None else before | held
    failed: BoolArray = np.zeros(placed.size, dtype=np.bool_)
    for key, held in blocked.items():
        if held.any():
            failed |= _at_nodes(held, placed.labels.codes(key)[0])
    return failed


def _existing_anti_affinity(placed: PlacedPods, task: TaskInfo) -> BoolArray | None:
    """Nodes in a domain holding a pod whose required anti-affinity selects the task."""
    blocked: dict[str, set[int]] = {}
    for term, rows in placed.imposed().anti_affinity.selecting(task):
        codes = placed.labels.codes(term.key)[0]
        values = blocked.setdefault(term.key, set())
        values.update(int(codes[row]) for row in rows if codes[row] >= 0)
    if not any(blocked.values()):
        return None
    failed: BoolArray = np.zeros(placed.size, dtype=np.bool_)
    for key, values in blocked.items():
        if values:
            codes = placed.labels.codes(key)[0]
            failed |= np.isin(codes, np.fromiter(values, dtype=np.int64, count=len(values)))
    return failed


def raw_scores(placed: PlacedPods, task: TaskInfo) -> Scores | None:
    """Each node's summed term weights (see the module's docstring); None when no term
    applies, so the score is 0 on every node (kube-scheduler skips the plugin)."""
    terms = placed.terms(task)
    by_key: dict[str, Scores] = {}

    def values_of(key: str) -> Scores:
        found = by_key.get(key)
        if found is None:
            size = len(placed.labels.codes(key)[1])
            found = by_key[key] = np.zeros(size, dtype=np.int64)
        return found

    for sign, group in ((1, terms.preferred_affinity), (-1, terms.preferred_anti_affinity)):
        for term in group:
            counts = placed.per_node((term.pods,))
            codes, vocabulary = placed.labels.codes(term.key)
            values_of(term.key)[:] += sign * term.weight * by_value(codes, counts, len(vocabulary))
    for (term, sign), rows in placed.imposed().preferred.selecting(task):
        codes = placed.labels.codes(term.key)[0]
        values = values_of(term.key)
        for row, count in rows.items():
            if codes[row] >= 0:
                values[codes[row]] += sign * term.weight * count
    if not by_key:
        return None
    raw: Scores = np.zeros(placed.size, dtype=np.int64)
    for key, values in by_key.items():
        if values.any():
            codes = placed.labels.codes(key)[0]
            has = codes >= 0
            raw[has] += values[codes[has]]
    return raw


def normalize(raw: Scores) -> Scores:
    """kube-scheduler's InterPodAffinity normalization over the candidates' raw scores:
    the lowest becomes 0, the highest 100; all equal, all 0."""
    if not len(raw):
        return np.zeros(0, dtype=np.int64)
    low, high = int(raw.min()), int(raw.max())
    if high == low:
        return np.zeros(len(raw), dtype=np.int64)
    scaled: Scores = (MAX_NODE_SCORE * ((raw - low) / (high - low))).astype(np.int64)
    return scaled
