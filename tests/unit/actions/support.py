"""Small stand-in plugins and a session opener for the action tests.

They implement just enough of gang, predicates and node ordering to drive
the actions; the real plugins are tested in their own folders.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec
import numpy as np

from asyncsched.api import Pod
from asyncsched.framework import Session, parse_configuration
from asyncsched.framework.hooks import (
    BATCH_NODE_ORDER,
    BATCH_PREDICATE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_PIPELINED,
    JOB_READY,
    JOB_VALID,
    PREDICATE,
    BoolArray,
    FloatArray,
    IntArray,
    ValidateResult,
)
from asyncsched.framework.plugin import Plugin
from asyncsched.model import ClusterSnapshot, JobInfo, NodeInfo, TaskInfo


class Gang:
    """All-or-nothing: ready at minAvailable, pipelined when ready + waiting reach it."""

    name: ClassVar[str] = "gang"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(JOB_VALID, self.name, self.valid)
        ssn.add(JOB_READY, self.name, lambda job: job.ready_task_num() >= job.min_available)
        ssn.add(JOB_PIPELINED, self.name, self.pipelined)

    @staticmethod
    def valid(job: JobInfo) -> ValidateResult | None:
        if job.valid_task_num() < job.min_available:
            return ValidateResult(False, "NotEnoughPods", "too few pods")
        return None

    @staticmethod
    def pipelined(job: JobInfo) -> int:
        return 1 if job.ready_task_num() + job.waiting_task_num() >= job.min_available else -1

    def on_session_close(self, ssn: Session) -> None:
        pass


class Schedulable:
    """Batch predicate: cordoned nodes fail; per-node predicate: nodes labelled ``full``."""

    name: ClassVar[str] = "predicates"

    def __init__(self, per_node: bool = False) -> None:
        self.per_node = per_node

    def on_session_open(self, ssn: Session) -> None:
        cordoned = np.array([n.unschedulable for n in ssn.node_list], dtype=np.bool_)

        def batch(task: TaskInfo) -> list[tuple[str, BoolArray]]:
            return [("node(s) were unschedulable", cordoned)]

        ssn.add(BATCH_PREDICATE, self.name, batch)
        if self.per_node:
            ssn.add(PREDICATE, self.name, self.check)

    @staticmethod
    def check(task: TaskInfo, node: NodeInfo) -> str | None:
        return "node(s) were full" if "full" in node.labels else None

    def on_session_close(self, ssn: Session) -> None:
        pass


class MostIdleCpu:
    """Scores a node by its idle cpu, so spreading is visible in tests."""

    name: ClassVar[str] = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        column = ssn.table.index.get("cpu", 0)

        def scores(task: TaskInfo, nodes: IntArray) -> FloatArray:
            out: FloatArray = ssn.table.idle[nodes, column].astype(np.float64)
            return out

        ssn.add(BATCH_NODE_ORDER, self.name, scores)

    def on_session_close(self, ssn: Session) -> None:
        pass


class Admit:
    """Enqueueable only for jobs whose minResources cpu is at most ``limit`` millicores."""

    name: ClassVar[str] = "proportion"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.enqueued: list[str] = []

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(JOB_ENQUEUEABLE, self.name, self.vote)
        ssn.add(JOB_ENQUEUED, self.name, lambda job: self.enqueued.append(job.uid))

    def vote(self, job: JobInfo) -> int:
        wanted = job.min_resources.get("cpu") if job.min_resources else 0
        return 1 if wanted <= self.limit else -1

    def on_session_close(self, ssn: Session) -> None:
        pass


def configuration(actions: str, *plugins: str) -> str:
    names = "\n".join(f"  - name: {p}" for p in plugins) or "  - name: none"
    return f'actions: "{actions}"\ntiers:\n- plugins:\n{names}\n'


def open_session(
    snapshot: ClusterSnapshot, *plugins: Plugin, actions: str = "enqueue, allocate, backfill"
) -> Session:
    """A session with ``plugins`` in one tier, each already opened."""
    registered = {p.name: p for p in plugins}
    text = configuration(actions, *registered)
    ssn = Session(snapshot, parse_configuration(text), registered)
    for plugin in plugins:
        plugin.on_session_open(ssn)
    return ssn


def task_of(ssn: Session, uid: str) -> TaskInfo:
    for job in ssn.jobs.values():
        if uid in job.tasks:
            return job.tasks[uid]
    raise KeyError(uid)


def releasing(pod: Pod) -> Pod:
    """The pod being deleted: its resources count as releasing on its node."""
    meta = msgspec.structs.replace(pod.metadata, deletion_timestamp="2024-01-01T00:00:00Z")
    return msgspec.structs.replace(pod, metadata=meta)
