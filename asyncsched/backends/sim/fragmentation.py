"""GPU allocation and fragmentation over a run, in FGD's sense, for the summary and report.

Fragmentation is the measure of Fragmentation Gradient Descent (Weng et al., ATC'23;
``asyncsched.model.gpufrag``): the share of the cluster's idle GPU that the typical pods
could not use. For a node and a pod shape, all of the node's idle GPU is a fragment
when the shape cannot run there (no card of a model it accepts, too little CPU left,
too few cards with room), otherwise the cards with less room than the shape asks of
one card; a node's fragment is the mean over the typical pods, weighted by how many of
each came; the cluster's is the sum over nodes, shown as a share of its idle GPU (0
when nothing is idle).

The typical pods are the workload the simulation has seen so far, as FGD takes it from
the workload: the GPU requests (with their CPU and the card models they accept) of the
pods of ours that arrived, the most popular shapes that make up 95% of them. The
distribution is taken again when the arrivals have grown by 5% since it was last
taken (at every arrival for the first twenty), so a long run reads every node again a
few hundred times, not once per pod. CPU-only pods are left out: every idle card is a
fragment for them wherever pods go (FGD and ``benchmarks/openb.py`` count them), so
they would measure the workload's mix, not how well its GPU pods were packed.

Amounts are thousandths of a card: a card held whole is 1000, a vGPU share of ``c``
cores ``10 c``. What pods hold is what the running pods hold (the ``GpuMeter``'s books,
read from the allocation the scheduler wrote on the bind); a node's CPU left is its
allocatable CPU less the requests of its running pods. Allocation is the share of the
healthy cards' thousandths held. Values are computed once per instant, after every
change at that instant.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from asyncsched.api import Node, Pod
from asyncsched.backends.sim.gpu_meter import GpuMeter
from asyncsched.model.devices import CARD_CORES
from asyncsched.model.gpu_claims import pod_gpu_request
from asyncsched.model.gpu_use import GpuUse
from asyncsched.model.gpufrag import (
    CARD,
    Classes,
    FloatArray,
    PodShape,
    Workload,
    node_fragmentation,
)
from asyncsched.model.node import node_allocatable
from asyncsched.model.resource import CPU
from asyncsched.model.task import pod_requests
from asyncsched.plugins._gpucards import USE_GPUTYPE, demand_of

__all__ = ["COVERAGE", "FragMeter", "FragPoint", "FragSummary"]

COVERAGE = 0.95
"""Share of the arrived GPU pods the typical shapes must cover (FGD's)."""
_GROWTH = 0.05
_ALWAYS = 20
"""The first arrivals each take the distribution again."""


@dataclass(frozen=True, slots=True)
class FragPoint:
    time: float
    allocation: float
    """Share of the cluster's GPU held by running pods."""
    fragmentation: float | None
    """Share of the idle GPU the typical pods could not use (None: no GPU pod came yet)."""


@dataclass(frozen=True)
class FragSummary:
    """The run's GPU allocation and fragmentation, at the end and on average."""

    allocation: float
    mean_allocation: float
    """Over the whole run."""
    fragmentation: float
    mean_fragmentation: float
    """Since the first GPU pod arrived."""
    idle_gpus: float
    """Idle GPU at the end, in cards."""
    typical_shapes: int
    """Pod shapes in the typical workload at the end."""


@dataclass
class _Rows:
    """Per node with cards: CPU left, each card's milli left, card model (index)."""

    names: dict[str, int] = field(default_factory=dict)
    cpu: list[int] = field(default_factory=list)
    cards: list[tuple[int, ...]] = field(default_factory=list)
    model: list[int] = field(default_factory=list)
    idle: list[int] = field(default_factory=list)
    """Milli left on the cards."""
    held: list[int] = field(default_factory=list)
    """Milli held by pods."""
    frag: list[float] = field(default_factory=list)
    models: list[str] = field(default_factory=lambda: [""])


class FragMeter:
    """Fed by the recorder (nodes, arrivals, pods starting and stopping); reads the card
    books of ``gpus`` after each change."""

    def __init__(self, gpus: GpuMeter) -> None:
        self.gpus = gpus
        self.rows = _Rows()
        self.capacity = 0
        """Milli of the healthy cards."""
        self.points: list[FragPoint] | None = None
        """Every instant's values, when a plotted report asks for them."""
        self._cpu: dict[str, tuple[str, int]] = {}
        """Node and CPU request of each running pod on a node with cards."""
        self._counts: Counter[PodShape] = Counter()
        self._arrived = 0
        self._taken = 0
        """Arrivals counted when the distribution was last taken."""
        self._workload = Workload((), ())
        """The typical pods as they came (models as the pods name them)."""
        self._classes: Classes | None = None
        """The same against the cluster's card models (None: to be made again)."""
        self._stale: set[int] = set()
        self._all_stale = False
        self._pending: float | None = None
        """The instant whose changes are not computed yet."""
        self._last: tuple[float, float, float | None] = (0.0, 0.0, None)
        """(time, allocation, fragmentation) of the last instant computed."""
        self._idle = 0
        self._held = 0
        self._frag_total = 0.0
        self._integral_alloc = 0.0
        self._integral_frag = 0.0
        self._frag_since: float | None = None

    # -- what the recorder tells ------------------------------------------------------

    def add_node(self, node: Node, now: float) -> None:
        use = self.gpus.books.get(node.metadata.name)
        if use is None or not use.gpus.cards or node.metadata.name in self.rows.names:
            return
        self._at(now)
        rows = self.rows
        row = rows.names[node.metadata.name] = len(rows.cpu)
        rows.cpu.append(node_allocatable(node)[0].get(CPU))
        rows.cards.append(())
        rows.idle.append(0)
        rows.held.append(0)
        rows.frag.append(0.0)
        model = use.gpus.cards[0].model
        if model not in rows.models:
            rows.models.append(model)
            self._classes = None  # shapes' accepted models are matched against the cards
        rows.model.append(rows.models.index(model))
        self.capacity += CARD * sum(1 for card in use.gpus.cards if card.healthy)
        self._read(row, use)

    def arrived(self, pod: Pod, now: float) -> None:
        """A pod of ours came: its GPU request joins the workload."""
        requests = pod_requests(pod)[0]
        request = pod_gpu_request(pod, requests.names())
        if request is None or request.error:
            return
        annotations = pod.metadata.annotations
        shape = demand_of(requests.get(CPU), request, annotations.get(USE_GPUTYPE, "")).shape
        self._at(now)
        self._counts[shape] += 1
        self._arrived += 1

    def start(self, key: str, pod: Pod, now: float) -> None:
        row = self.rows.names.get(pod.spec.node_name)
        if row is None:
            return
        self._at(now)
        cpu = pod_requests(pod)[0].get(CPU)
        self._cpu[key] = (pod.spec.node_name, cpu)
        self.rows.cpu[row] -= cpu
        self._read(row, self.gpus.books[pod.spec.node_name])

    def stop(self, key: str, now: float) -> None:
        found = self._cpu.pop(key, None)
        if found is None:
            return
        self._at(now)
        node, cpu = found
        row = self.rows.names[node]
        self.rows.cpu[row] += cpu
        self._read(row, self.gpus.books[node])

    # -- reading ----------------------------------------------------------------------

    def summary(self, end: float) -> FragSummary | None:
        """The figures at ``end`` (None on a cluster without cards)."""
        if not self.capacity:
            return None
        self._settle()
        time, allocation, fragmentation = self._last
        span = max(end - time, 0.0)
        alloc_integral = self._integral_alloc + allocation * span
        frag_integral = self._integral_frag + (fragmentation or 0.0) * span
        since = self._frag_since
        frag_span = end - since if since is not None else 0.0
        return FragSummary(
            allocation=allocation,
            mean_allocation=alloc_integral / end if end > 0 else allocation,
            fragmentation=fragmentation or 0.0,
            mean_fragmentation=(
                frag_integral / frag_span if frag_span > 0 else fragmentation or 0.0
            ),
            idle_gpus=self._idle / CARD,
            typical_shapes=len(self._classes) if self._classes is not None else 0,
        )

    # -- inside -----------------------------------------------------------------------

    def _read(self, row: int, use: GpuUse) -> None:
        rows = self.rows
        rows.cards[row] = use.free_milli()
        idle = sum(rows.cards[row])
        held = sum(
            CARD if use.whole[i] else min(use.cores[i], CARD_CORES) * (CARD // CARD_CORES)
            for i, card in enumerate(use.gpus.cards)
            if card.healthy
        )
        self._idle += idle - rows.idle[row]
        self._held += held - rows.held[row]
        rows.idle[row], rows.held[row] = idle, held
        self._stale.add(row)

    def _at(self, now: float) -> None:
        """A change at ``now``: compute the instant before it first, if it is earlier."""
        if self._pending is not None and now > self._pending:
            self._settle()
        self._pending = now

    def _settle(self) -> None:
        """Compute the pending instant: the distribution taken again if due, stale rows
        read again, the point recorded and the time since the last one integrated."""
        now = self._pending
        if now is None:
            return
        self._pending = None
        rows = self.rows
        due = self._arrived - self._taken
        if due and (self._arrived <= _ALWAYS or due >= _GROWTH * self._taken):
            workload = Workload.of_counts(self._counts, COVERAGE)
            self._taken = self._arrived
            if workload != self._workload:
                self._classes = None
                self._workload = workload
        if self._classes is None and self._taken:
            self._classes = Classes(self._workload, rows.models)
            self._all_stale = True
        stale = list(range(len(rows.cpu))) if self._all_stale else sorted(self._stale)
        if self._classes is not None and stale:
            found = self._fragments(stale, self._classes).tolist()
            if self._all_stale:
                rows.frag = found
                self._frag_total = sum(found)
            else:
                for row, value in zip(stale, found, strict=True):
                    self._frag_total += value - rows.frag[row]
                    rows.frag[row] = value
        self._stale.clear()
        self._all_stale = False
        allocation = self._held / self.capacity if self.capacity else 0.0
        fragmentation: float | None = None
        if self._classes is not None:
            fragmentation = max(self._frag_total, 0.0) / self._idle if self._idle else 0.0
            if self._frag_since is None:
                self._frag_since = now
        time, last_alloc, last_frag = self._last
        span = now - time
        if span > 0:
            self._integral_alloc += last_alloc * span
            self._integral_frag += (last_frag or 0.0) * span
        self._last = (now, allocation, fragmentation)
        if self.points is not None and self.capacity:
            point = FragPoint(now, allocation, fragmentation)
            if self.points and self.points[-1].time == now:
                self.points[-1] = point
            else:
                self.points.append(point)

    def _fragments(self, rows: list[int], classes: Classes) -> FloatArray:
        """Each row's expected fragment (milli) over the classes."""
        table = self.rows
        width = max(1, *(len(table.cards[r]) for r in rows)) if rows else 1
        cards = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            cards[i, : len(table.cards[r])] = table.cards[r]
        cpu = np.array([table.cpu[r] for r in rows], dtype=np.int64)
        model = np.array([table.model[r] for r in rows], dtype=np.int64)
        return node_fragmentation(cpu, cards, model, classes)
