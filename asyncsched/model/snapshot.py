"""ClusterSnapshot: what one session sees; the cache makes one, the session owns it.

The rule that lets snapshots be incremental
-------------------------------------------
A snapshot shares no mutable object with the cache: its TaskInfo, JobInfo and
NodeInfo are copies, its NodeTable is a copy, and api objects (Pod, Node,
PodGroup...) are never changed in place by anyone (a new version is a new
object). To avoid copying every object at every session, the cache hands out
an object of the previous snapshot again when

1. the cache did not change its source since (``ClusterCache.changes``), and
2. the session that ran on the previous snapshot did not touch it.

"Touched" is kept by the model objects themselves: a session changes a
TaskInfo only with ``set_status`` and ``set_node``, a JobInfo only with
``set_phase`` and its task methods, a NodeInfo only with its task methods, and
every one of those marks the object touched and writes it to the journal the
cache reads when it builds the next snapshot (``asyncsched.model.journal``).
The fields stay plain attributes for reading (the hot path reads them all the
time); assigning them directly is the one way around the rule, which the
check below catches, as does a test that scans the core's sources for it. A task copied again
takes along the job and nodes that hold it. Other fields are read-only inside
a session. Consequently the next snapshot may be taken only once the session
on the previous one has finished, as the scheduler loops do.

One exception to 2. saves re-adding every task of a job enqueue merely admitted:
a touched JobInfo none of whose tasks is copied again (so the session changed
none of them), with the same cache entry and gang rules, can differ from a fresh
copy only in its phase and PodGroup; the cache sets those, clears ``touched``
and the memos (``JobInfo.reset_to``), and hands the same object out again. So is a
job whose tasks were copied again when it still holds the very task copies (each made
current in place), under the cache's keys in the cache's order, all in one status bucket
in that order that matches each task's status now: a fresh copy would add the same
tasks in the same order to the same bucket; its counts are added up again over it.
Likewise a touched NodeInfo whose node is still there is made current in place
(``NodeInfo.reset_from``: every field from the cache's node, its table row copied
from the cache's, its task dict built again unless it holds the very task copies,
keys and order of a fresh one); the previous session is over, so nothing reads
the old state.

Settled jobs
------------
A job is *settled* when a session found that it has nothing to decide and
nothing to report, whatever the rest of the cluster does: no task Pending,
Pipelined or Allocated, its PodGroup not Pending, at least minAvailable tasks
ready (running, bound or succeeded), and the PodGroup status the session
computed equal to the one it has. That session writes its configuration on the
job (``JobInfo.settled_under``, a memo, not state). When the job is handed out
again unchanged, it stays in ``jobs`` but not in ``active``: sessions under
the same configuration iterate ``active`` only, and take the settled jobs'
part of the per-queue sums from ``settled_totals``
(``asyncsched.model.books.SettledTotals``). So finished and steadily running
jobs cost nothing per session. Any change to a settled job (from the cache or a
session) makes it a fresh, active copy again.

With ``ASYNCSCHED_CHECK_SNAPSHOTS=1`` the cache also builds every snapshot from
scratch and compares the two with ``snapshot_differences``; any difference
raises ``SnapshotReuseError``. The test suite runs with it on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asyncsched.model.books import SettledTotals
from asyncsched.model.disruption import DisruptionBudget
from asyncsched.model.hypernodes import EMPTY_TREE, HyperNodeTree
from asyncsched.model.job import JobInfo
from asyncsched.model.node import NodeFlags, NodeInfo
from asyncsched.model.node_table import NodeTable
from asyncsched.model.queue import QueueInfo
from asyncsched.model.task import TaskInfo

__all__ = ["ClusterSnapshot", "SnapshotReuseError", "snapshot_differences"]


@dataclass
class ClusterSnapshot:
    """Jobs, nodes, queues and disruption budgets that share no mutable object with the cache."""

    jobs: dict[str, JobInfo]
    nodes: dict[str, NodeInfo]
    queues: dict[str, QueueInfo]
    table: NodeTable
    priority_classes: dict[str, int] = field(default_factory=dict)
    now: float = 0.0
    node_flags: NodeFlags | None = None
    """Per-row flags of ``nodes`` (listed in row order); None: derived from the nodes."""
    active: dict[str, JobInfo] | None = None
    """The jobs a session must look at, in ``jobs`` order; None: all of them."""
    settled_totals: dict[str, SettledTotals] = field(default_factory=dict)
    """Per queue, the sums over the jobs in ``jobs`` but not in ``active``."""
    settled_under: object | None = None
    """The configuration the settled jobs were found settled under."""
    disruption_budgets: tuple[DisruptionBudget, ...] = ()
    """Every PodDisruptionBudget, by namespace and name (immutable, shared between
    snapshots while no budget changes)."""
    hypernodes: HyperNodeTree = EMPTY_TREE
    """The network tree (immutable, shared while no HyperNode, node or label changes)."""
    tasks_with_pod_rules: dict[str, TaskInfo] | None = None
    """Every task whose pod has rules about other pods (``has_pod_rules``: pod affinity or
    anti-affinity, topology spread, host ports), by uid, placed or not; None: derived from
    the jobs and nodes. Kept as tasks are copied, so a session learns without a pass over
    every pod whether any such rule is in play."""
    reference: ClusterSnapshot | None = None
    """Built from scratch for checking (ASYNCSCHED_CHECK_SNAPSHOTS=1): a session on it
    must decide and report exactly what the session on this one does."""


class SnapshotReuseError(AssertionError):
    """An incremental snapshot differs from one built from scratch: a reuse was unsafe."""


_TASK_FIELDS = (
    "uid",
    "name",
    "namespace",
    "job",
    "resreq",
    "init_resreq",
    "best_effort",
    "role",
    "priority",
    "status",
    "node_name",
    "creation",
    "preemptable",
    "gpu_claim",
    "touched",
)
_JOB_FIELDS = (
    "uid",
    "name",
    "namespace",
    "queue",
    "min_available",
    "min_task_member",
    "min_resources",
    "priority",
    "priority_class",
    "phase",
    "creation",
    "network_topology",
    "allocated",
    "n_ready",
    "n_allocated",
    "n_pending_best_effort",
    "n_pending_gated",
    "touched",
)
_NODE_FIELDS = (
    "name",
    "labels",
    "taints",
    "unschedulable",
    "ready",
    "max_pods",
    "gpus",
    "gpu_use",
    "row",
    "touched",
)
_TABLE_ARRAYS = ("allocatable", "idle", "releasing", "pipelined")


def snapshot_differences(mine: ClusterSnapshot, fresh: ClusterSnapshot) -> list[str]:
    """How ``mine`` differs from ``fresh`` (built from scratch), field by field; [] if equal."""
    found: list[str] = []
    if list(mine.jobs) != list(fresh.jobs):
        found.append("job keys or their order differ")
    if list(mine.nodes) != list(fresh.nodes):
        found.append("node names or their order differ")
    if list(mine.queues) != list(fresh.queues):
        found.append("queue names differ")
    if mine.disruption_budgets != fresh.disruption_budgets:
        found.append("disruption budgets differ")
    if mine.hypernodes != fresh.hypernodes:
        found.append("hypernode trees differ")
    if _rule_keys(mine) != _rule_keys(fresh):
        found.append("tasks with pod rules differ")
    flags, fresh_flags = mine.node_flags, fresh.node_flags
    if (flags is None) != (fresh_flags is None) or (
        flags is not None
        and fresh_flags is not None
        and (
            flags.tainted != fresh_flags.tainted
            or not np.array_equal(flags.ready, fresh_flags.ready)
            or not np.array_equal(flags.unschedulable, fresh_flags.unschedulable)
        )
    ):
        found.append("node flags differ")
    if mine.table.dimensions != fresh.table.dimensions or mine.table.size != fresh.table.size:
        found.append("node table shapes differ")
    else:
        for name in _TABLE_ARRAYS:
            a, b = getattr(mine.table, name), getattr(fresh.table, name)
            if not np.array_equal(a[: a.shape[0]], b[: a.shape[0]]):
                found.append(f"node table {name} differs")
    if found:
        return found
    tasks: dict[str, TaskInfo] = {}
    for key, job in mine.jobs.items():
        found += _differences(f"job {key}", job, fresh.jobs[key], _JOB_FIELDS)
        if job.podgroup is not fresh.jobs[key].podgroup:
            found.append(f"job {key}: podgroup is another object")
        found += _members(f"job {key}", job.tasks, fresh.jobs[key].tasks, tasks)
        mine_buckets = {s: list(b) for s, b in job.by_status.items() if b}
        fresh_buckets = {s: list(b) for s, b in fresh.jobs[key].by_status.items() if b}
        if mine_buckets != fresh_buckets:
            found.append(f"job {key}: tasks by status differ")
    for name, node in mine.nodes.items():
        other = fresh.nodes[name]
        found += _differences(f"node {name}", node, other, _NODE_FIELDS)
        if node.node is not other.node or node.table is not mine.table:
            found.append(f"node {name}: Node object or table is another object")
        found += _members(f"node {name}", node.tasks, other.tasks, tasks)
    fresh_tasks = {k: t for job in fresh.jobs.values() for k, t in job.tasks.items()}
    fresh_tasks.update((k, t) for node in fresh.nodes.values() for k, t in node.tasks.items())
    for key, task in tasks.items():
        found += _differences(f"task {key}", task, fresh_tasks[key], _TASK_FIELDS)
        if task.pod is not fresh_tasks[key].pod:
            found.append(f"task {key}: pod is another object")
    return found


def _rule_keys(snapshot: ClusterSnapshot) -> set[str] | None:
    found = snapshot.tasks_with_pod_rules
    return None if found is None else set(found)


def _differences(what: str, mine: Any, fresh: Any, fields: tuple[str, ...]) -> list[str]:
    return [
        f"{what}: {name} is {getattr(mine, name)!r}, from scratch {getattr(fresh, name)!r}"
        for name in fields
        if getattr(mine, name) != getattr(fresh, name)
    ]


def _members(
    what: str, mine: dict[str, TaskInfo], fresh: dict[str, TaskInfo], seen: dict[str, TaskInfo]
) -> list[str]:
    """Same task keys in the same order, and one copy of each task across the snapshot."""
    if list(mine) != list(fresh):
        return [f"{what}: task keys or their order differ"]
    found = []
    for key, task in mine.items():
        if seen.setdefault(key, task) is not task:
            found.append(f"{what}: holds another copy of task {key} than the rest")
    return found
