"""GPU fragmentation against a workload, and its gradient for a placement (pure math).

The measure is the one of Fragmentation Gradient Descent (Weng et al., ATC'23): a
node's idle GPU capacity is a *fragment* for a kind of pod when that pod could not
use it. For one pod shape ``m`` and a node:

- a CPU-only pod uses no GPU: all the node's idle GPU is a fragment for it;
- the node has no card of a model the pod accepts, or too little CPU left for it, or
  fewer than ``gpus`` cards with ``gpu_milli`` left each: all idle GPU is a fragment;
- otherwise only the cards with less than ``gpu_milli`` left are fragments (the pod
  could use the others).

A node's fragmentation for a workload is the expectation over its pod shapes,
weighted by their popularity; the cluster's is the sum over nodes, and the
*fragmentation rate* is that sum over the cluster's idle GPU. The gradient of a
placement is how much the node's fragmentation grows when the pod lands on it (on
the cards it would take): FGD places each pod where that growth is least.

Amounts are integers: CPU in millicores, GPU in thousandths of a card ("milli"), 1000
a whole card. Node state comes as arrays over rows (one row per node): CPU left,
each card's milli left (cards a node does not have are 0) and a model index (0: no
GPU). Everything here is vectorised over rows, so a scorer can refresh only the
nodes that changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "CARD",
    "Classes",
    "PodShape",
    "Workload",
    "accepts_model",
    "class_fragmentation",
    "node_fragmentation",
    "placement_deltas",
    "shape_fragmentation",
    "stranded_gpu",
]

CARD = 1000
"""Milli of one whole card."""

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, order=True)
class PodShape:
    """What a pod asks, as far as fragmentation goes.

    ``gpu_milli`` is per card: below 1000 with ``gpus == 1`` for a shared card, 1000
    for whole cards, 0 for a CPU-only pod. ``models`` are the card models it accepts
    (empty: any).
    """

    cpu: int
    gpu_milli: int = 0
    gpus: int = 0
    models: tuple[str, ...] = ()

    @property
    def gpu_total(self) -> int:
        """Milli of GPU the pod takes in all."""
        return self.gpu_milli * self.gpus

    @property
    def shares(self) -> bool:
        """Does it take part of one card (so which card matters)?"""
        return self.gpus == 1 and 0 < self.gpu_milli < CARD


@dataclass(frozen=True)
class Workload:
    """Pod shapes and their popularity (weights summing to 1)."""

    shapes: tuple[PodShape, ...]
    weights: tuple[float, ...]

    @classmethod
    def of(cls, shapes: Iterable[PodShape], coverage: float = 1.0) -> Workload:
        """The distribution of ``shapes`` (one per pod), keeping the most popular until
        they account for ``coverage`` of the pods (FGD's "typical pods": 0.95), then
        normalised again. Ties in popularity go by shape order, so it is deterministic."""
        return cls.of_counts(Counter(shapes), coverage)

    @classmethod
    def of_counts(cls, counts: Mapping[PodShape, int], coverage: float = 1.0) -> Workload:
        """``of`` from how many pods of each shape came (kept up to date by a caller that
        sees pods arrive one at a time, so each refresh costs the shapes, not the pods)."""
        if not counts:
            return cls((), ())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        total = sum(counts.values())
        kept: list[tuple[PodShape, int]] = []
        covered = 0
        for shape, n in ranked:
            if covered >= coverage * total:
                break
            kept.append((shape, n))
            covered += n
        return cls(tuple(s for s, _ in kept), tuple(n / covered for _, n in kept))

    def __len__(self) -> int:
        return len(self.shapes)


def accepts_model(wanted: Sequence[str], model: str) -> bool:
    """May a pod that names ``wanted`` card models use a card of ``model``? Volcano's rule
    for ``nvidia.com/use-gputype``: the card's model contains one of the names, case
    ignored (``V100M32`` accepts ``NVIDIA-V100M32``); naming none accepts any."""
    if not wanted:
        return True
    upper = model.upper()
    return any(w.upper() in upper for w in wanted)


class Classes:
    """A workload as arrays, against the card models of a cluster (index 0: no GPU)."""

    def __init__(self, workload: Workload, models: Sequence[str]) -> None:
        self.workload = workload
        self.models = list(models)
        shapes = workload.shapes
        self.cpu: IntArray = np.array([s.cpu for s in shapes], dtype=np.int64)
        self.milli: IntArray = np.array([s.gpu_milli for s in shapes], dtype=np.int64)
        self.gpus: IntArray = np.array([s.gpus for s in shapes], dtype=np.int64)
        self.weight: FloatArray = np.array(workload.weights, dtype=np.float64)
        access = np.zeros((len(shapes), max(len(self.models), 1)), dtype=np.bool_)
        for c, shape in enumerate(shapes):
            if shape.gpus == 0:
                continue  # a CPU-only pod uses no card: every card is a fragment for it
            for i, model in enumerate(self.models[1:], start=1):
                access[c, i] = accepts_model(shape.models, model)
        self.access: BoolArray = access
        gpu = self.milli * self.gpus
        share = float(self.weight @ gpu)
        self.cpu_per_milli = (
            float(self.weight @ np.where(gpu > 0, self.cpu, 0)) / share if (share > 0) else 0.0
        )
        """The CPU (millicores) the workload's GPU pods ask per milli of GPU."""

    def __len__(self) -> int:
        return len(self.workload)


def shape_fragmentation(cpu_left: int, cards: Sequence[int], model: str, shape: PodShape) -> int:
    """Milli of the node's idle GPU that ``shape`` could not use (the definition, one node
    at a time; the arrays below compute the same for many)."""
    idle = sum(cards)
    if shape.gpus == 0 or not cards or not model:
        return idle
    if not accepts_model(shape.models, model):
        return idle
    if cpu_left < shape.cpu:
        return idle
    usable = sum(1 for left in cards if left >= shape.gpu_milli)
    if usable < shape.gpus:
        return idle
    return sum(left for left in cards if left < shape.gpu_milli)


def class_fragmentation(
    cpu_left: IntArray, cards: IntArray, model: IntArray, classes: Classes
) -> FloatArray:
    """[classes, rows]: each shape's fragmentation of each row (milli)."""
    idle = cards.sum(axis=1)  # [R]
    milli = classes.milli[:, None, None]  # [C,1,1]
    enough = cards[None, :, :] >= milli  # [C,R,G]
    usable = enough.sum(axis=2)  # [C,R]
    unusable = np.where(enough, 0, cards[None, :, :]).sum(axis=2)  # [C,R]
    fits = (
        classes.access[:, model]
        & (cpu_left[None, :] >= classes.cpu[:, None])
        & (usable >= classes.gpus[:, None])
    )
    out: FloatArray = np.where(fits, unusable, idle[None, :]).astype(np.float64)
    return out


def node_fragmentation(
    cpu_left: IntArray, cards: IntArray, model: IntArray, classes: Classes
) -> FloatArray:
    """[rows]: each row's expected fragmentation over the workload (milli)."""
    if not len(classes):
        return np.zeros(len(cpu_left), dtype=np.float64)
    found: FloatArray = classes.weight @ class_fragmentation(cpu_left, cards, model, classes)
    return found


def placement_deltas(
    cpu_left: IntArray,
    cards: IntArray,
    model: IntArray,
    classes: Classes,
    pod: PodShape,
    before: FloatArray | None = None,
) -> tuple[FloatArray, IntArray]:
    """The gradient of placing ``pod`` on each row, and the card it would take there.

    Returns (delta [R], card [R]): fragmentation after minus before, for the best
    choice of card on that row (a shared pod tries each card with room; whole cards
    are taken among the free ones, which are alike); ``card`` is that card (-1 for a
    CPU-only pod or whole cards, +inf delta where the pod's GPU does not fit). CPU is
    not checked here: the caller's fit test rules out rows without room.
    ``before`` is ``node_fragmentation`` of the rows when the caller has it.
    """
    rows = cards.shape[0]
    if before is None:
        before = node_fragmentation(cpu_left, cards, model, classes)
    cpu_after = cpu_left - pod.cpu
    choice: IntArray = np.full(rows, -1, dtype=np.int64)
    if pod.gpus == 0:
        after = node_fragmentation(cpu_after, cards, model, classes)
        delta: FloatArray = after - before
        return delta, choice
    if pod.shares:
        return _share_deltas(cpu_after, cards, model, classes, pod, before)
    free = cards >= CARD
    enough = free.sum(axis=1) >= pod.gpus
    # Take the first ``gpus`` free cards (free cards are alike for the measure).
    order = np.cumsum(free, axis=1)
    take = free & (order <= pod.gpus)
    after = node_fragmentation(cpu_after, cards - take * CARD, model, classes)
    delta = np.where(enough, after - before, np.inf)
    return delta, choice


def _share_deltas(
    cpu_after: IntArray,
    cards: IntArray,
    model: IntArray,
    classes: Classes,
    pod: PodShape,
    before: FloatArray,
) -> tuple[FloatArray, IntArray]:
    """placement_deltas for a share: each card with room tried in turn. Only that card
    changes, so each shape's count of usable cards and sum of unusable ones are updated
    from the node's, not recounted ([classes, rows, cards] work, not times the cards)."""
    rows = cards.shape[0]
    milli = classes.milli[:, None, None]  # [C,1,1]
    enough = cards[None, :, :] >= milli  # [C,R,G]
    usable = enough.sum(axis=2)[:, :, None]  # [C,R,1]
    unusable = np.where(enough, 0, cards[None, :, :]).sum(axis=2)[:, :, None]
    left = cards - pod.gpu_milli  # [R,G]: each card after taking the share
    was = enough
    now = left[None, :, :] >= milli
    usable_after = usable - was + now
    unusable_after = (
        unusable - np.where(was, 0, cards[None, :, :]) + np.where(now, 0, left[None, :, :])
    )
    idle_after = cards.sum(axis=1) - pod.gpu_milli  # [R]
    fits = (
        classes.access[:, model][:, :, None]
        & (cpu_after[None, :, None] >= classes.cpu[:, None, None])
        & (usable_after >= classes.gpus[:, None, None])
    )
    frag = np.where(fits, unusable_after, idle_after[None, :, None])  # [C,R,G]
    after = (
        np.tensordot(classes.weight, frag, axes=1)
        if len(classes)
        else np.zeros(cards.shape, dtype=np.float64)
    )
    after = np.where(cards >= pod.gpu_milli, after, np.inf)
    best = np.argmin(after, axis=1)
    chosen = after[np.arange(rows), best]
    choice: IntArray = np.where(np.isfinite(chosen), best, -1).astype(np.int64)
    delta: FloatArray = chosen - before
    return delta, choice


def stranded_gpu(cpu_left: IntArray, cards: IntArray, cpu_per_milli: float) -> FloatArray:
    """[rows]: idle GPU (milli) the row's CPU could not feed if the workload's GPU pods,
    asking ``cpu_per_milli`` each, filled it: what CPU-hungry placements strand."""
    idle = cards.sum(axis=1).astype(np.float64)
    if cpu_per_milli <= 0:
        return np.zeros(len(idle), dtype=np.float64)
    fed = np.maximum(cpu_left, 0) / cpu_per_milli
    found: FloatArray = np.maximum(idle - fed, 0.0)
    return found
