"""What gpufrag keeps from one session to the next, and its answers from it.

``FragMemory`` holds the cards as arrays (``CardBooks``), the workload learned from
arrivals and, per pod shape, the fragmentation each node would have after placing it
(``ShapeAnswers``), refreshed for the nodes that changed only. ``FragScorer`` reads a
shape's scores for every node at once (a RowScorer). The plugin, its arguments and
policies are :mod:`asyncsched.plugins.gpufrag`.
"""

from __future__ import annotations

import zlib
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from asyncsched.framework import Session
from asyncsched.framework.hooks import BoolArray, FloatArray, IntArray
from asyncsched.model import NodeInfo, TaskInfo, TaskStatus
from asyncsched.model.devices import CARD_CORES
from asyncsched.model.gpu_claims import CardShare, GpuClaim
from asyncsched.model.gpufrag import (
    CARD,
    Classes,
    PodShape,
    Workload,
    node_fragmentation,
    placement_deltas,
    stranded_gpu,
)
from asyncsched.model.resource import CPU
from asyncsched.plugins._cards import BINPACK, Fit, fit_cards
from asyncsched.plugins._gpucards import CardBooks, Demand

if TYPE_CHECKING:
    from asyncsched.plugins.gpufrag import GpuFragPlugin

__all__ = ["NO_CARD_MODEL", "NO_CARD_ROOM", "FragMemory", "FragScorer"]


NO_CARD_MODEL = "no GPU card of a model the pod accepts"


NO_CARD_ROOM = "not enough room on the node's GPU cards"


_UNFIT = -1e15


_MOVED = 0.05
"""A learned workload is replaced when the new one differs by more than this (total
variation): every per-shape answer is computed again then, so not for noise."""


def _moved(old: Workload, new: Workload) -> float:
    """Total variation distance between two workloads' shape distributions."""
    a = dict(zip(old.shapes, old.weights, strict=True))
    b = dict(zip(new.shapes, new.weights, strict=True))
    return 0.5 * sum(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in a.keys() | b.keys())


class FragMemory:
    """Cards, the workload and per-shape answers, kept while the configuration stays."""

    def __init__(self, plugin: GpuFragPlugin) -> None:
        self.plugin = plugin
        self.books = CardBooks()
        self.arrived: deque[PodShape] = deque(maxlen=plugin.window)
        self.seen: set[str] = set()
        self.since_refresh = 0
        self.workload: Workload | None = plugin.fixed
        self.classes: Classes | None = None
        self.generation = 0
        """Bumped when the workload or the card layout changes: every answer is stale."""
        self.layout = (-1, 0)
        self.before: FloatArray = np.zeros(0)
        self.before_seen: IntArray = np.zeros(0, dtype=np.int64)
        self.shapes: dict[Demand, ShapeAnswers] = {}

    # -- the workload ---------------------------------------------------------------

    def observe(self, ssn: Session) -> None:
        """Count the pending pods not seen before as arrivals."""
        books = self.books
        for job in ssn.active_jobs.values():
            for task in job.tasks_in(TaskStatus.PENDING):
                if task.uid in self.seen:
                    continue
                self.seen.add(task.uid)
                self.arrived.append(books.demand(task).shape)
                self.since_refresh += 1
        if len(self.seen) > 4 * self.plugin.window:
            self.seen = set(list(self.seen)[-self.plugin.window :])
        if self.arrived and (self.workload is None or self.since_refresh >= self.plugin.refresh):
            fresh = Workload.of(self.arrived, self.plugin.coverage)
            self.since_refresh = 0
            if self.workload is None or _moved(self.workload, fresh) > _MOVED:
                self.workload = fresh
                self.classes = None

    def ensure_classes(self) -> None:
        books = self.books
        layout = (books.epoch, len(books.models))
        if self.classes is not None and layout == self.layout:
            return
        self.layout = layout
        self.classes = Classes(self.workload or Workload((), ()), books.models)
        self.generation += 1
        n = len(books.names)
        self.before = np.zeros(n, dtype=np.float64)
        self.before_seen = np.full(n, -1, dtype=np.int64)
        self.shapes = {}

    def fragmentation_before(self, rows: IntArray) -> FloatArray:
        """Each row's fragmentation now (refreshed where the row changed)."""
        books = self.books
        assert self.classes is not None
        stale = rows[self.before_seen[rows] != books.version[rows]]
        if stale.size:
            self.before[stale] = node_fragmentation(
                books.cpu_left[stale], books.cards[stale], books.model[stale], self.classes
            )
            self.before_seen[stale] = books.version[stale]
        return self.before

    # -- hooks ------------------------------------------------------------------------

    def answers(self, task: TaskInfo) -> ShapeAnswers:
        demand = self.books.demand(task)
        found = self.shapes.get(demand)
        if found is None:
            found = self.shapes[demand] = ShapeAnswers(self, demand)
        found.refresh()
        return found

    def failures(self, task: TaskInfo) -> list[tuple[str, BoolArray]]:
        demand = self.books.demand(task)
        if not demand.gpus:
            return []
        found = self.answers(task)
        return [(NO_CARD_MODEL, found.no_model), (NO_CARD_ROOM, found.no_room)]

    def moved(self, ssn: Session, task: TaskInfo) -> None:
        """A task was placed on or taken off a node in the session: read the node again."""
        node = ssn.nodes.get(task.node_name) if task.node_name else None
        if node is None or node.row >= len(self.books.names):
            return
        cpu = ssn.table.index.get(CPU)
        cpu_left = int(ssn.table.idle[node.row, cpu]) if cpu is not None else 0
        self.books.refresh(node.row, cpu_left, node)

    def choose(self, task: TaskInfo, node: NodeInfo) -> GpuClaim | None:
        """The cards the task gets on the node (``Session.gpu_chooser``): a share goes on
        the card the policy picks; anything else as Volcano's binpack order gives it."""
        request, gpus, use = task.gpu_request, node.gpus, node.gpu_use
        if request is None:
            return None
        annotations = task.pod.metadata.annotations
        demand = self.books.demand(task)
        position = -1
        if (
            demand.shape.shares
            and gpus is not None
            and use is not None
            and gpus.source == "vgpu"
            and len(request.vgpu) == 1
            and node.row < len(self.books.names)
        ):
            position = self.pick_card(task, node.row)
        if position >= 0 and gpus is not None:
            card = gpus.cards[position]
            ask = request.vgpu[0]
            share = CardShare(
                card.uuid, card.index, ask.memory_on(card), ask.cores, ask.cores >= CARD_CORES
            )
            allowed = annotations.get(_ONLY)
            if not allowed or card.uuid in allowed.split(","):
                alone = {**annotations, _ONLY: card.uuid}
                if isinstance(fit_cards(request, gpus, use, alone), Fit):
                    return GpuClaim("vgpu", (share,), 0, 1)
        found = fit_cards(request, gpus, use, annotations, BINPACK)
        return found.claim if isinstance(found, Fit) else None

    def pick_card(self, task: TaskInfo, row: int) -> int:
        """The card (position) a share takes on ``row`` under the policy, -1 for none."""
        books = self.books
        shape = books.demand(task).shape
        cards = books.cards[row]
        room = np.flatnonzero(cards >= shape.gpu_milli)
        if not room.size:
            return -1
        policy = self.plugin.policy
        if policy in ("packing", "fgd"):
            assert self.classes is not None
            rows = np.array([row])
            _, choice = placement_deltas(
                books.cpu_left[rows], books.cards[rows], books.model[rows], self.classes, shape
            )
            return int(choice[0])
        if policy == "random":
            rng = np.random.default_rng([self.plugin.seed, zlib.crc32(task.uid.encode())])
            return int(room[int(rng.integers(room.size))])
        return int(room[np.argmin(cards[room])])  # best fit: the fullest card with room


_ONLY = "volcano.sh/vgpu-use-gpuuuid"
"""Asking the card rules about one card: Volcano's annotation that limits a pod to it."""


class ShapeAnswers:
    """For one shape: which rows its GPU fits, its gradient and score on each, and the
    row versions they were computed at (only changed rows are computed again).

    A row where the shape cannot go (its cards, or its CPU) keeps its old score: no
    placement reads it (the masks, or the resource fit, rule the row out), and the row
    is scored once a change lets the shape in, since only a change can."""

    def __init__(self, memory: FragMemory, demand: Demand) -> None:
        self.memory = memory
        self.demand = demand
        n = len(memory.books.names)
        self.no_model: BoolArray = np.zeros(n, dtype=np.bool_)
        self.no_room: BoolArray = np.zeros(n, dtype=np.bool_)
        self.scores: FloatArray = np.zeros(n, dtype=np.float64)
        self.masked: IntArray = np.full(n, -1, dtype=np.int64)
        """Row versions the masks were computed at."""
        self.seen: IntArray = np.full(n, -1, dtype=np.int64)
        """Row versions the scores were computed at."""
        self.generation = memory.generation

    def refresh(self) -> None:
        memory, books = self.memory, self.memory.books
        if self.generation != memory.generation:
            self.__init__(memory, self.demand)  # type: ignore[misc]
        version = books.version
        shape = self.demand.shape
        if shape.gpus:
            stale = np.flatnonzero(self.masked != version)
            if stale.size:
                self.masked[stale] = version[stale]
                cards = books.cards[stale]
                model_ok = books.accepts(self.demand)[books.model[stale]]
                room = (cards >= shape.gpu_milli).sum(axis=1) >= shape.gpus
                if shape.gpu_milli >= CARD:
                    # Whole cards of a plain node: the node's count of the resource is their
                    # room, which the resource fit checks (with what evictions would free,
                    # so preempt and reclaim may try the node).
                    room |= books.whole[stale]
                no_model, no_room = ~model_ok, model_ok & ~room
                if (no_model != self.no_model[stale]).any():
                    self.no_model = self.no_model.copy()  # a new object: callers cache on ids
                    self.no_model[stale] = no_model
                if (no_room != self.no_room[stale]).any():
                    self.no_room = self.no_room.copy()
                    self.no_room[stale] = no_room
        stale = np.flatnonzero(self.seen != version)
        if not stale.size:
            return
        usable = books.cpu_left[stale] >= shape.cpu
        if shape.gpus:
            usable &= ~(self.no_model[stale] | self.no_room[stale])
        stale = stale[usable]
        if stale.size:
            self.seen[stale] = version[stale]
            self.scores[stale] = self._score(stale)

    def _score(self, rows: IntArray) -> FloatArray:
        memory, books, shape = self.memory, self.memory.books, self.demand.shape
        plugin = memory.plugin
        policy, weight = plugin.policy, plugin.weight
        if policy == "random":
            return np.zeros(len(rows), dtype=np.float64)
        if policy == "bestfit":
            found: FloatArray = -_left_after(books, rows, shape) * weight
            return found
        assert memory.classes is not None
        before = memory.fragmentation_before(rows)[rows]
        delta, _ = placement_deltas(
            books.cpu_left[rows],
            books.cards[rows],
            books.model[rows],
            memory.classes,
            shape,
            before,
        )
        finite = np.isfinite(delta)
        if policy == "fgd":
            with np.errstate(over="ignore"):
                sigmoid = 1.0 / (1.0 + np.exp(np.where(finite, delta, 1e9) / CARD))
            quantized: FloatArray = np.floor(sigmoid * 100.0)
            return np.where(finite, quantized, _UNFIT) * weight
        score = -delta - plugin.fit_weight * CARD * _left_after(books, rows, shape)
        if plugin.cpu_weight:
            ratio = memory.classes.cpu_per_milli
            cards = books.cards[rows]
            cpu = books.cpu_left[rows]
            stranded = stranded_gpu(cpu, cards, ratio)
            after = stranded_gpu(cpu - shape.cpu, cards, ratio) - shape.gpu_total
            score -= plugin.cpu_weight * (np.maximum(after, 0.0) - stranded)
        # Rounded: sums over shapes come out a hair apart depending on how many rows are
        # computed at once, and equal nodes must tie (the lowest index wins) regardless.
        return np.where(finite, np.round(score, 6), _UNFIT) * weight


def _left_after(books: CardBooks, rows: IntArray, shape: PodShape) -> FloatArray:
    """Best fit's measure: CPU and GPU left on the row after the pod, each relative to the
    largest node, weighed half and half (0: the pod fills the node; lower is tighter)."""
    gpu_left = books.cards[rows].sum(axis=1) - shape.gpu_total
    cpu_left = books.cpu_left[rows] - shape.cpu
    left: FloatArray = 0.5 * cpu_left / books.cpu_max + 0.5 * gpu_left / books.gpu_max
    return left


class FragScorer:
    """gpufrag's RowScorer for one session."""

    def __init__(self, memory: FragMemory, ssn: Session) -> None:
        self.memory = memory
        self.ssn = ssn

    def __call__(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        found: FloatArray = self.all_rows(task)[candidates]
        return found

    def all_rows(self, task: TaskInfo) -> FloatArray:
        memory = self.memory
        if memory.plugin.policy == "random":
            rng = np.random.default_rng([memory.plugin.seed, zlib.crc32(task.uid.encode())])
            noise: FloatArray = rng.random(len(memory.books.names)) * memory.plugin.weight
            return noise
        scores = memory.answers(task).scores
        if memory.plugin.policy == "fgd":
            # As FGD's scheduler plugin scores: an integer 0-100 (a sigmoid of the
            # gradient in cards), with ties broken at random (kube-scheduler's selectHost).
            rng = np.random.default_rng([memory.plugin.seed, zlib.crc32(task.uid.encode())])
            return scores + rng.random(len(scores)) * 0.999
        return scores
