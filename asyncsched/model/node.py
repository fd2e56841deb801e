"""NodeInfo: a node's labels, taints and tasks; its resource books live in a NodeTable row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from asyncsched.api import Node
from asyncsched.api.core import Taint
from asyncsched.api.quantity import to_units
from asyncsched.model.devices import NodeGpus, node_gpus
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools
from asyncsched.model.gpu_use import GpuUse
from asyncsched.model.journal import Journal, Tracked
from asyncsched.model.node_table import DEFAULT_MAX_PODS, NodeTable
from asyncsched.model.resource import PODS, Resource
from asyncsched.model.status import OCCUPYING_NODE, TaskStatus
from asyncsched.model.task import TaskInfo

__all__ = ["NodeFlags", "NodeInfo", "booking_of", "node_allocatable"]


def node_allocatable(node: Node) -> tuple[Resource, int]:
    """(allocatable without pods, max pods); capacity stands in when allocatable is absent.
    The vGPU totals (``volcano.sh/vgpu-number``...) are the node's own, as the device
    plugin advertises them: the kubelet admits no pod beyond them."""
    source = dict(node.status.allocatable or node.status.capacity)
    pods_quantity = source.pop(PODS, None)
    max_pods = to_units(PODS, pods_quantity) if pods_quantity is not None else DEFAULT_MAX_PODS
    return Resource.from_quantities(source), max_pods


class NodeInfo(Tracked):
    """A node as the scheduler sees it.

    The amounts (idle, used, releasing, pipelined) are read from and written to
    the node's row in the shared NodeTable, so vectorised fit and score see
    exactly what per-node code sees. Its tasks change only through add_task,
    remove_task and requeue, which mark it touched (``asyncsched.model.journal``).
    """

    __slots__ = (
        "gpu_use",
        "gpus",
        "labels",
        "max_pods",
        "name",
        "node",
        "ready",
        "row",
        "table",
        "taints",
        "tasks",
        "unschedulable",
    )

    def __init__(self, node: Node, table: NodeTable, pools: GpuPools = NO_POOLS) -> None:
        self.gpus: NodeGpus | None = node_gpus(node, pools)
        """The node's cards (immutable), None if it declares none (``asyncsched.model.devices``)."""
        self.gpu_use: GpuUse | None = GpuUse(self.gpus) if self.gpus is not None else None
        """What the node's tasks hold of each card; changes only with the tasks."""
        allocatable, max_pods = node_allocatable(node)
        self.name = node.metadata.name
        self.node = node
        self.labels = node.metadata.labels
        self.taints: list[Taint] = node.spec.taints
        self.unschedulable = node.spec.unschedulable
        self.ready = _is_ready(node)
        self.max_pods = max_pods
        self.table = table
        self.row = table.add_row(allocatable, max_pods)
        self.tasks: dict[str, TaskInfo] = {}
        self.touched = False
        self.journal: Journal | None = None

    def update(self, node: Node, pools: GpuPools = NO_POOLS) -> None:
        """Take a newer version of the Node object (or the same with other GPU model
        pools), keeping the tasks on it."""
        gpus = node_gpus(node, pools)
        allocatable, max_pods = node_allocatable(node)
        self.touch()
        if gpus != self.gpus:
            self.gpus = gpus
            self.gpu_use = GpuUse(gpus) if gpus is not None else None
            for task in self.tasks.values():
                self._book_gpus(task)
        self.node = node
        self.labels = node.metadata.labels
        self.taints = node.spec.taints
        self.unschedulable = node.spec.unschedulable
        self.ready = _is_ready(node)
        self.max_pods = max_pods
        self.table.set_allocatable(self.row, allocatable, max_pods)

    def rebound(self, table: NodeTable, row: int, journal: Journal | None = None) -> NodeInfo:
        """A copy, without tasks and untouched, whose books are row ``row`` of ``table``
        (a snapshot's) and whose changes go to ``journal``."""
        twin = NodeInfo.__new__(NodeInfo)
        twin.reset_from(self, table, row)
        twin.tasks = {}
        twin.journal = journal
        return twin

    def reset_from(self, source: NodeInfo, table: NodeTable, row: int) -> None:
        """Make this copy of ``source`` equal to a fresh ``source.rebound(table, row)``,
        untouched and writing to the same journal, but for ``tasks``, which the caller
        makes current (it knows which task copies are still the ones this node holds).

        For a node a session touched: placing pods on nearly every node each session, the
        snapshot would otherwise make a new NodeInfo (and task dict) per node per session,
        all of which the cyclic collector then walks. Every slot by name (a loop of
        getattr/setattr cost a third of a snapshot's node copies);
        tests/unit/model/test_copies.py checks that no slot is left out.
        """
        self.gpus = source.gpus
        gpu_use = source.gpu_use
        self.gpu_use = gpu_use.copy() if gpu_use is not None else None
        self.labels = source.labels
        self.max_pods = source.max_pods
        self.name = source.name
        self.node = source.node
        self.ready = source.ready
        self.row = row
        self.table = table
        self.taints = source.taints
        self.unschedulable = source.unschedulable
        self.touched = False

    # -- amounts -----------------------------------------------------------

    @property
    def allocatable(self) -> Resource:
        return self.table.resource(self.table.allocatable[self.row])

    @property
    def idle(self) -> Resource:
        return self.table.resource(self.table.idle[self.row])

    @property
    def used(self) -> Resource:
        return self.table.resource(self.table.allocatable[self.row] - self.table.idle[self.row])

    @property
    def releasing(self) -> Resource:
        return self.table.resource(self.table.releasing[self.row])

    @property
    def pipelined(self) -> Resource:
        return self.table.resource(self.table.pipelined[self.row])

    @property
    def future_idle(self) -> Resource:
        return self.table.resource(self.table.future_idle(self.row))

    @property
    def pod_count(self) -> int:
        return int(self.table.allocatable[self.row, 0] - self.table.idle[self.row, 0])

    # -- tasks -------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        """Book a task on this node according to its status (Volcano's NodeInfo.AddTask)."""
        status = task.status
        if status not in OCCUPYING_NODE or task.uid in self.tasks:
            return
        if not self.touched:
            self.touch()
        table = self.table
        table.book(self.row, table.vector(task.resreq), +1, _BOOKING.get(status, 0))
        self.tasks[task.uid] = task
        if task.gpu_claim is not None:
            self._book_gpus(task)

    def _book_gpus(self, task: TaskInfo) -> None:
        if self.gpu_use is not None and task.gpu_claim is not None:
            self.gpu_use.book(task.uid, task.gpu_claim)

    def remove_task(self, task: TaskInfo) -> None:
        booked = self.tasks.pop(task.uid, None)
        if booked is None:
            return
        if not self.touched:
            self.touch()
        table = self.table
        table.book(self.row, table.vector(booked.resreq), -1, _BOOKING.get(booked.status, 0))
        if self.gpu_use is not None:
            self.gpu_use.release(booked.uid)

    def requeue(self, task: TaskInfo) -> None:
        """Move a booked task to the end of ``tasks`` (as remove then add would), leaving the
        books alone: for a change between two statuses booked alike."""
        if not self.touched:
            self.touch()
        del self.tasks[task.uid]
        self.tasks[task.uid] = task

    def __repr__(self) -> str:
        return f"Node({self.name}, idle={self.idle})"


_BOOKING = {TaskStatus.RELEASING: 1, TaskStatus.PIPELINED: 2}
"""How a status books a task on its node (``NodeTable.book``'s kind; others: 0, idle)."""


def booking_of(status: TaskStatus) -> int | None:
    """How a task of this status sits on its node's books (``NodeTable.book``'s kind), or
    None when it sits on none: two statuses with the same answer book a task alike."""
    return _BOOKING.get(status, 0) if status in OCCUPYING_NODE else None


@dataclass(frozen=True)
class NodeFlags:
    """Facts of a snapshot's nodes that change only with the Node object, by row.

    Plugins read these at every session open instead of looping over the nodes;
    the cache keeps them from one snapshot to the next. The arrays are read-only.
    """

    ready: npt.NDArray[np.bool_]
    unschedulable: npt.NDArray[np.bool_]
    tainted: tuple[int, ...]
    """Rows of the nodes that have any taint, in order."""

    @classmethod
    def of(cls, nodes: Sequence[NodeInfo]) -> NodeFlags:
        """The flags of nodes listed in row order."""
        ready = np.array([n.ready for n in nodes], dtype=np.bool_)
        unschedulable = np.array([n.unschedulable for n in nodes], dtype=np.bool_)
        ready.setflags(write=False)
        unschedulable.setflags(write=False)
        return cls(ready, unschedulable, tuple(i for i, n in enumerate(nodes) if n.taints))


def _is_ready(node: Node) -> bool:
    for condition in node.status.conditions:
        if condition.type == "Ready":
            return condition.status == "True"
    return True
