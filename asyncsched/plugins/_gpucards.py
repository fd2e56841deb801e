"""The cards of a session's nodes as arrays, for gpufrag (kept from one session to the next).

The cards and what pods hold of them are the device model's (``NodeInfo.gpus`` and
``NodeInfo.gpu_use``, ``asyncsched.model.devices`` and ``gpu_use``), booked through
the Statement. This module only mirrors them as arrays over rows, in thousandths of a card
("milli": ten per free vGPU core, 0 for a card held whole, unhealthy or at its share
count), so that fragmentation is computed for many nodes at once; it follows the
session's nodes by identity (a snapshot hands out an unchanged NodeInfo again), so
only changed nodes are read again.

A pod's shape (``Demand``): a vGPU request of fewer than 100 cores on one card is a
share of ``cores x 10`` milli; 100 cores, or plain ``nvidia.com/gpu``, asks whole cards.
The models it accepts come from Volcano's ``nvidia.com/use-gputype`` annotation (a card
matches when its model contains one of the names, ignoring case, as Volcano checks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asyncsched.framework.hooks import BoolArray
from asyncsched.model import NodeInfo, NodeTable, TaskInfo
from asyncsched.model.devices import CARD_CORES, NO_PERCENTAGE
from asyncsched.model.gpu_claims import GpuRequest
from asyncsched.model.gpufrag import CARD, IntArray, PodShape, accepts_model
from asyncsched.model.resource import CPU

__all__ = ["USE_GPUTYPE", "CardBooks", "Demand", "demand_of"]

USE_GPUTYPE = "nvidia.com/use-gputype"


@dataclass(frozen=True)
class Demand:
    """A task's shape, and the model names it accepts as written (for matching cards)."""

    shape: PodShape
    wanted: tuple[str, ...]

    @property
    def gpus(self) -> int:
        return self.shape.gpus


def demand_of(cpu: int, request: GpuRequest | None, use_gputype: str) -> Demand:
    """The shape of a pod: its CPU and what it asks of cards (see the module docstring)."""
    wanted = tuple(t.strip() for t in use_gputype.split(",") if t.strip())
    if request is None:
        return Demand(PodShape(cpu), ())
    if request.vgpu:
        ask = request.vgpu[0]
        cores = ask.cores
        if not cores and ask.percentage != NO_PERCENTAGE:
            cores = ask.percentage  # memory share only: count the card that far
        number = sum(a.number for a in request.vgpu)
        if cores <= 0 or cores >= CARD_CORES or number > 1:
            return Demand(PodShape(cpu, CARD, number, wanted), wanted)
        return Demand(PodShape(cpu, cores * 10, 1, wanted), wanted)
    if request.model:  # a model pool's cards: only cards of its model will do
        wanted = (request.model,)
    whole = request.plain or request.share_number
    if whole:
        return Demand(PodShape(cpu, CARD, whole, wanted), wanted)
    return Demand(PodShape(cpu, CARD, 1, wanted), wanted)  # gpushare memory: one card


class CardBooks:
    """Per row of the session's node list: CPU left, each card's milli left, model."""

    def __init__(self) -> None:
        self.nodes: list[NodeInfo] = []
        self.names: list[str] = []
        self.cpu_left: IntArray = np.zeros(0, dtype=np.int64)
        self.cards: IntArray = np.zeros((0, 1), dtype=np.int64)
        self.count: IntArray = np.zeros(0, dtype=np.int64)
        self.model: IntArray = np.zeros(0, dtype=np.int64)
        self.whole: BoolArray = np.zeros(0, dtype=np.bool_)
        """Per row, its cards are only ever taken whole (``nvidia.com/gpu`` or a model pool's
        resource): their room is the node's count of the resource."""
        self.models: list[str] = [""]
        """Card models by index; 0 is "no GPU"."""
        self.version: IntArray = np.zeros(0, dtype=np.int64)
        """Per row, bumped whenever the row's CPU or cards change."""
        self.cpu_max = 1
        """The largest node's allocatable CPU (millicores): best fit's yardstick."""
        self.gpu_max = CARD
        """The largest node's cards, in milli."""
        self.epoch = 0
        """Bumped when rows are renumbered or widened: every cache starts over."""
        self._demands: dict[tuple[int, GpuRequest | None, str], Demand] = {}
        self._flags: object = None
        self._idle: IntArray = np.zeros((0, 0), dtype=np.int64)
        self._clock = 0

    def demand(self, task: TaskInfo) -> Demand:
        types = task.pod.metadata.annotations.get(USE_GPUTYPE, "")
        key = (task.resreq.get(CPU), task.gpu_request, types)
        found = self._demands.get(key)
        if found is None:
            if len(self._demands) > 4096:
                self._demands.clear()
            found = self._demands[key] = demand_of(key[0], task.gpu_request, types)
        return found

    def accepts(self, demand: Demand) -> BoolArray:
        """Per model index: may the demand use cards of that model?"""
        ok = np.zeros(len(self.models), dtype=np.bool_)
        for i, model in enumerate(self.models):
            if i:
                ok[i] = accepts_model(demand.wanted, model)
        return ok

    def sync(self, nodes: list[NodeInfo], table: NodeTable, flags: object) -> None:
        """Bring the rows up to date with the session's nodes, reading again only those
        that changed. ``flags`` is the snapshot's NodeFlags: the cache makes a new one
        whenever a Node object changes, so while it stays the same only the nodes' tasks
        changed, and those rows are the ones whose amounts in ``table`` moved; otherwise
        each NodeInfo is compared with the one seen last (unchanged ones are handed out
        again)."""
        n = len(nodes)
        idle = table.idle[:n]
        column = table.index.get(CPU)
        cpu_idle = idle[:, column] if column is not None else np.zeros(n, dtype=np.int64)
        width = self.cards.shape[1]
        seen = self.nodes
        if n != len(seen):
            self._rebuild(nodes, cpu_idle)
        elif flags is self._flags and idle.shape == self._idle.shape:
            for row in np.flatnonzero((idle != self._idle).any(axis=1)).tolist():
                seen[row] = nodes[row]
                self.refresh(row, int(cpu_idle[row]))
        else:
            changed = [r for r, (a, b) in enumerate(zip(nodes, seen, strict=True)) if a is not b]
            for row in changed:
                node = nodes[row]
                if node.name != self.names[row] or (
                    node.gpus is not None and len(node.gpus.cards) > width
                ):
                    self._rebuild(nodes, cpu_idle)
                    break
            else:
                for row in changed:
                    seen[row] = nodes[row]
                    self.refresh(row, int(cpu_idle[row]))
        self._flags = flags
        self._idle = idle.copy()

    def _rebuild(self, nodes: list[NodeInfo], cpu_idle: IntArray) -> None:
        width = max(1, max((len(n.gpus.cards) for n in nodes if n.gpus is not None), default=1))
        n = len(nodes)
        self.nodes = list(nodes)
        self.names = [node.name for node in nodes]
        self.cpu_left = np.zeros(n, dtype=np.int64)
        self.cards = np.zeros((n, width), dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.model = np.zeros(n, dtype=np.int64)
        self.whole = np.zeros(n, dtype=np.bool_)
        self.version = np.zeros(n, dtype=np.int64)
        self.epoch += 1
        if nodes:
            table = nodes[0].table
            column = table.index.get(CPU)
            if column is not None:
                self.cpu_max = max(1, int(table.allocatable[:n, column].max()))
        self.gpu_max = width * CARD
        for row in range(n):
            self.refresh(row, int(cpu_idle[row]))

    def refresh(self, row: int, cpu_left: int, node: NodeInfo | None = None) -> None:
        """Read the row's node again (``node``: the session's, after a placement in it)."""
        if node is not None:
            self.nodes[row] = node
        node = self.nodes[row]
        self.cpu_left[row] = cpu_left
        gpus, use = node.gpus, node.gpu_use
        if gpus is None or use is None or not gpus.cards:
            self.count[row] = 0
            self.model[row] = 0
            self.whole[row] = False
            self.cards[row] = 0
        else:
            free = use.free_milli()
            self.count[row] = len(free)
            self.model[row] = self._model_index(gpus.cards[0].model)
            self.whole[row] = gpus.source == "plain"
            self.cards[row] = 0
            self.cards[row, : len(free)] = free
        self._clock += 1
        self.version[row] = self._clock

    def _model_index(self, name: str) -> int:
        try:
            return self.models.index(name)
        except ValueError:
            self.models.append(name)
            return len(self.models) - 1
