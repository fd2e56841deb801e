"""Statement: tentative decisions inside a session, committed together or undone.

Allocate, pipeline and evict change the session's picture at once (so the
next task sees the node as used) and are logged; ``discard`` undoes them in
reverse order, ``commit`` turns them into binds, evictions and nominations for
the shell. This is how a gang is tried and backed out; ``mark`` and
``undo_to`` back out only the tail (one node's evictions in preempt).
"""

from __future__ import annotations

from asyncsched.framework.results import Bind, Eviction, Nomination
from asyncsched.framework.session import Session
from asyncsched.model.gpu_claims import GpuClaim, claim_annotations
from asyncsched.model.node import NodeInfo  # from its own module: statement.pxd cimports it
from asyncsched.model.status import TaskStatus
from asyncsched.model.task import TaskInfo

__all__ = ["Statement"]


# The kinds of logged step, and the statuses a step moves a task to, as module names:
# compiled, a module name is read from a cache, while an Enum member is read through
# EnumType's __getattr__ slot, at ~850 instructions a read, several times per task placed.
_ALLOCATE = "allocate"
_PIPELINE = "pipeline"
_EVICT = "evict"
_ALLOCATED = TaskStatus.ALLOCATED
_PIPELINED = TaskStatus.PIPELINED
_RELEASING = TaskStatus.RELEASING
_BINDING = TaskStatus.BINDING


class _Operation:
    """One logged step. A plain class rather than a dataclass: compiled, its ``__init__`` is
    compiled too (a dataclass's is generated at import and interpreted), and one is made
    for every task placed."""

    __slots__ = ("claim", "node", "nominate", "op", "preemptor", "previous", "reason", "task")

    def __init__(
        self,
        op: str,
        task: TaskInfo,
        node: NodeInfo,
        previous: TaskStatus,
        reason: str = "",
        preemptor: str = "",
        nominate: bool = False,
        claim: GpuClaim | None = None,
    ) -> None:
        self.op = op
        self.task = task
        self.node = node
        self.previous = previous
        self.reason = reason
        self.preemptor = preemptor
        """For an eviction, the task (``namespace/name``) it makes room for."""
        self.nominate = nominate
        """For a pipeline made room for by evictions: nominate the pod to the node."""
        self.claim = claim
        """For an allocate or pipeline, the cards the task held before (put back on undo)."""


class Statement:
    """An operation log over one session."""

    __slots__ = ("operations", "ssn")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[_Operation] = []

    def __len__(self) -> int:
        return len(self.operations)

    def _move(
        self, task: TaskInfo, node: NodeInfo, status: TaskStatus, place: bool = False
    ) -> None:
        if task.uid in node.tasks:  # remove_task of a task not on the node does nothing
            node.remove_task(task)
        self.ssn.jobs[task.job].update_task_status(task, status)
        task.set_node(node.name)
        if place and task.gpu_request is not None:
            task.set_gpu_claim(self.ssn.choose_gpus(task, node))
        node.add_task(task)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place a pending task on a node with room for it now (and on the cards the
        session chooses, ``Session.choose_gpus``)."""
        # positional: a keyword costs the call a third more, once for every pod placed
        op = _Operation(_ALLOCATE, task, node, task.status, "", "", False, task.gpu_claim)
        self.operations.append(op)
        self._move(task, node, _ALLOCATED, True)
        self.ssn.fire_allocate(task)

    def pipeline(self, task: TaskInfo, node: NodeInfo, nominate: bool = False) -> None:
        """Promise a task the room that releasing tasks on the node will free; ``nominate``
        (the room comes from evictions made for it) sets the pod's nominated node at commit."""
        op = _Operation(_PIPELINE, task, node, task.status, nominate=nominate, claim=task.gpu_claim)
        self.operations.append(op)
        self._move(task, node, _PIPELINED, place=True)
        self.ssn.fire_allocate(task)

    def evict(self, task: TaskInfo, reason: str, preemptor: TaskInfo | None = None) -> None:
        """Mark a running task for eviction; its resources become releasing."""
        node = self.ssn.nodes[task.node_name]
        by = preemptor.key if preemptor is not None else ""
        self.operations.append(_Operation(_EVICT, task, node, task.status, reason, by))
        self._move(task, node, _RELEASING)
        self.ssn.fire_deallocate(task)

    def evictions(self) -> int:
        """How many evictions the statement holds."""
        return sum(1 for op in self.operations if op.op is _EVICT)

    def mark(self) -> int:
        """A point to come back to with ``undo_to``."""
        return len(self.operations)

    def undo_to(self, mark: int) -> None:
        """Undo the operations made since ``mark``, newest first."""
        while len(self.operations) > mark:
            op = self.operations.pop()
            task, node = op.task, op.node
            node.remove_task(task)
            self.ssn.jobs[task.job].update_task_status(task, op.previous)
            if op.op is _EVICT:
                node.add_task(task)
                self.ssn.fire_allocate(task)
            else:
                if op.op is _ALLOCATE:
                    self.ssn.last_placements.record(task.uid, node.name)
                if task.gpu_claim is not op.claim:
                    task.set_gpu_claim(op.claim)
                # as Volcano's unallocate: the handlers still see the node the task leaves
                self.ssn.fire_deallocate(task)
                task.set_node("")

    def discard(self) -> None:
        """Undo every operation, newest first."""
        self.undo_to(0)

    def commit(self) -> None:
        """Turn allocations into binds and evictions into Eviction requests.

        Pipelined tasks stay promised for this session only; a later session
        allocates them once the room is really free. One that waits for evictions
        is nominated to its node (``status.nominatedNodeName``), as Volcano does.
        """
        result = self.ssn.result
        jobs, binds = self.ssn.jobs, result.binds
        for op in self.operations:
            task = op.task
            if op.op is _ALLOCATE:
                node = op.node
                if task.status is _ALLOCATED and node.tasks.get(task.uid) is task:
                    # Allocated and Binding sit on the node's books alike: move the
                    # task to the end of node.tasks (as remove/add would) without
                    # booking the same amounts out and in again.
                    jobs[task.job].update_task_status(task, _BINDING)
                    node.requeue(task)
                else:
                    node.remove_task(task)
                    jobs[task.job].update_task_status(task, _BINDING)
                    node.add_task(task)
                if task.gpu_claim is None:
                    binds.append(Bind(task.uid, task.namespace, task.name, node.name))
                else:
                    binds.append(self._bind(task, node))
            elif op.op is _EVICT:
                self.ssn.evicted_from.add(task.job)
                result.evictions.append(
                    Eviction(task.uid, task.namespace, task.name, op.reason, op.preemptor)
                )
            elif op.nominate:
                result.nominations.append(
                    Nomination(task.uid, task.namespace, task.name, op.node.name)
                )
        self.operations.clear()

    def _bind(self, task: TaskInfo, node: NodeInfo) -> Bind:
        claim, gpus = task.gpu_claim, node.gpus
        if claim is None or gpus is None:
            return Bind(task.uid, task.namespace, task.name, node.name)
        notes = claim_annotations(claim, gpus, node.name, int(self.ssn.now))
        return Bind(
            task.uid, task.namespace, task.name, node.name, tuple(sorted(notes.items())), claim
        )
