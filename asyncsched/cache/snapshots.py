"""Incremental snapshots: copy only what changed since the last one.

The rule (also in ``asyncsched.model.snapshot``): an object of the previous
snapshot is handed out again only when neither the cache nor the session that
ran on it changed it. The cache says what it changed (``ClusterCache.changes``);
the session's changes are in the journal every clone writes to when touched
(``asyncsched.model.journal``). A task copied again takes its job and its nodes
along, so a job or node handed out again holds only current task copies. A
task whose cache object is still the one it was copied from is made current
in place (``TaskInfo.reset_from``) rather than copied anew, and so is a node
(``NodeInfo.reset_from``) while the node set stays.

With ``ASYNCSCHED_CHECK_SNAPSHOTS=1`` in the environment every snapshot is also
built from scratch and compared with the incremental one; a difference raises
``SnapshotReuseError`` naming the object (the test suite turns this on).

This module holds the rule and the build's walk (what to copy again, the tasks, the
queues); the jobs are copied or refreshed in :mod:`~asyncsched.cache.snapshot_jobs`, the
nodes and their table in :mod:`~asyncsched.cache.snapshot_nodes`, and what the last
snapshot handed out is kept in :mod:`~asyncsched.cache.handed`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from asyncsched.cache.handed import Handed
from asyncsched.cache.snapshot_jobs import QUEUE_NAME_ANNOTATION, JobCopies, alive_lone_job
from asyncsched.cache.snapshot_nodes import NodeCopies
from asyncsched.model import (
    ClusterSnapshot,
    DisruptionBudget,
    JobInfo,
    NodeFlags,
    NodeInfo,
    QueueInfo,
    Resource,
    TaskInfo,
    kernels,
)
from asyncsched.model.books import SettledTotals
from asyncsched.model.journal import Journal
from asyncsched.model.snapshot import SnapshotReuseError, snapshot_differences
from asyncsched.model.task import TASK_PRIORITY_ANNOTATION, has_pod_rules, task_priority

if TYPE_CHECKING:
    from asyncsched.cache.cluster_cache import ClusterCache

__all__ = ["CHECK_ENV", "QUEUE_NAME_ANNOTATION", "Snapshots"]

CHECK_ENV = "ASYNCSCHED_CHECK_SNAPSHOTS"


class Snapshots:
    """Builds a cache's snapshots, each from the one before."""

    def __init__(self) -> None:
        self.handed = Handed()

    def take(
        self, cache: ClusterCache, now: float, configuration: object | None = None
    ) -> ClusterSnapshot:
        changes = cache.changes
        handed = self.handed
        touched = list(handed.journal)
        handed.journal.clear()
        if changes.everything:
            handed = self.handed = Handed(journal=handed.journal)
        snapshot = _Build(cache, handed, touched, now, configuration).run()
        cache.changes = changes.cleared()
        if os.environ.get(CHECK_ENV) == "1":
            fresh = _Build(cache, Handed(), [], now).run(full=True)
            found = snapshot_differences(snapshot, fresh) + _totals_differences(snapshot)
            if found:
                raise SnapshotReuseError("; ".join(found[:5]))
            snapshot.reference = fresh
        return snapshot

    @staticmethod
    def fresh(cache: ClusterCache, now: float) -> ClusterSnapshot:
        """A snapshot built from scratch that shares nothing with the incremental ones and
        leaves the cache's change log alone: for trials that change it."""
        return _Build(cache, Handed(), [], now).run(full=True)


def _totals_differences(snapshot: ClusterSnapshot) -> list[str]:
    """The settled totals must equal the sums over the settled jobs, added up afresh."""
    if snapshot.active is None:
        return []
    fresh: dict[str, SettledTotals] = {}
    for key, job in snapshot.jobs.items():
        if key not in snapshot.active:
            fresh.setdefault(job.queue, SettledTotals()).add(job)

    def plain(totals: dict[str, SettledTotals]) -> dict[str, tuple[object, ...]]:
        return {
            q: (
                t.jobs,
                Resource(t.allocated),
                Resource(t.elastic),
                Resource(t.reserved),
                Resource(t.reserved_whole),
            )
            for q, t in totals.items()
            if t.jobs
        }

    if plain(fresh) != plain(snapshot.settled_totals):
        return ["settled totals differ from the sums over the settled jobs"]
    return []


class _Build(JobCopies, NodeCopies):
    """One snapshot: what to copy again, then the copies, then the lists in cache order."""

    def __init__(
        self,
        cache: ClusterCache,
        handed: Handed,
        touched: Journal,
        now: float,
        configuration: object | None = None,
    ) -> None:
        self.cache = cache
        self.configuration = configuration
        self.handed = handed
        self.touched = touched
        self.now = now
        self.priorities = {name: pc.value for name, pc in cache.priority_classes.items()}
        self.default_priority = next(
            (pc.value for pc in cache.priority_classes.values() if pc.global_default), 0
        )
        self.replaced: set[str] = set()
        """Nodes that held (in the last snapshot, after its session) a task copy this build
        drops or replaces with a new copy: their task dicts are built again."""
        self.replaced_jobs: set[str] = set()
        """Jobs that held a task copy this build drops or replaces: never made current in
        place (``_resorted``)."""

    def run(self, full: bool = False) -> ClusterSnapshot:
        cache, handed, changes = self.cache, self.handed, self.cache.changes
        full = full or changes.everything
        if full:
            task_keys: set[str] | list[str] = list(cache.tasks)
            job_keys: set[str] | list[str] = list(cache.jobs)
            node_names: set[str] | list[str] = list(cache.nodes)
        else:
            task_keys, job_keys, node_names = self._to_copy()

        if full and not handed.tasks:
            self._first_tasks()
        else:
            self._copy_tasks(task_keys)

        queues = self._queues()
        added: dict[str, JobInfo] = {}
        still_settled: set[str] = set()
        current = self.configuration  # settled jobs under another get looked at again
        for key in job_keys:
            entry = cache.jobs.get(key)
            settled = handed.settled.get(key)
            under = settled.settled_under if settled is not None else None
            if entry is None:
                job = None
            elif full or (job := self._refreshed(key, entry, queues, task_keys)) is None:
                job = self._job(key, entry, queues)
            elif (
                job is settled and current is not None and under is current and alive_lone_job(job)
            ):
                job.settled_under = under  # made current in place, and still settled
                still_settled.add(key)
                continue
            self._unsettle(key)
            if job is None:
                handed.seqs.pop(key, None)
                if handed.jobs.pop(key, None) is not None:
                    handed.templates.pop(key, None)
            elif entry is not None and handed.seqs.get(key) == entry.seq and key in handed.jobs:
                handed.jobs[key] = job
            else:
                added[key] = job
        self._add_jobs(added)
        self._partition([key for key in job_keys if key not in still_settled])

        table = self._nodes(node_names, full or changes.node_set)
        if handed.flags is None or full or changes.node_objects or changes.node_set:
            handed.flags = NodeFlags.of(list(handed.nodes.values()))
        active = None
        if handed.settled:
            entries = cache.jobs
            ordered = kernels.by_seq(handed.active, entries)
            active = {k: handed.jobs[k] for k in ordered}
        return ClusterSnapshot(
            jobs=dict(handed.jobs),
            nodes=dict(handed.nodes),
            queues=queues,
            table=table,
            priority_classes=self.priorities,
            now=self.now,
            node_flags=handed.flags,
            active=active,
            settled_totals={q: t.copy() for q, t in handed.totals.items() if t.jobs},
            settled_under=handed.token if handed.settled else None,
            disruption_budgets=self._budgets(full or changes.budgets),
            hypernodes=self._tree(full or changes.hypernodes or changes.node_set, changes),
            tasks_with_pod_rules=dict(handed.ruled),
        )

    def _budgets(self, anew: bool) -> tuple[DisruptionBudget, ...]:
        """The budgets in ``namespace/name`` order; the last snapshot's while none changed."""
        handed = self.handed
        if anew or handed.budgets is None:
            found = self.cache.disruption_budgets
            handed.budgets = tuple(DisruptionBudget.of(found[k]) for k in sorted(found))
        return handed.budgets

    def _queues(self) -> dict[str, QueueInfo]:
        """QueueInfos, parsed again only for Queue objects that changed (they are read-only)."""
        known = self.handed.queue_infos
        queues = {}
        for name, queue in self.cache.queues.items():
            found = known.get(name)
            if found is None or found[0] is not queue:
                found = known[name] = (queue, QueueInfo.from_queue(queue))
            queues[name] = found[1]
        for name in [n for n in known if n not in queues]:
            del known[name]
        if "default" not in queues:
            queues["default"] = QueueInfo.default()
        return queues

    # -- what to copy again ----------------------------------------------------------

    def _to_copy(self) -> tuple[set[str], set[str], set[str]]:
        changes, handed = self.cache.changes, self.handed
        tasks = set(changes.tasks)
        jobs = set(changes.jobs)
        nodes = set(changes.nodes)
        for obj in self.touched:
            if isinstance(obj, TaskInfo):
                tasks.add(obj.uid)
            elif isinstance(obj, JobInfo):
                jobs.add(obj.uid)
            elif isinstance(obj, NodeInfo):
                nodes.add(obj.name)
        # A task copied again takes along the jobs and nodes holding its old or new copy.
        kernels.task_owners(tasks, handed.tasks, self.cache.tasks, jobs, nodes)
        return tasks, jobs, nodes

    # -- task copies -----------------------------------------------------------

    def _copy_tasks(self, task_keys: set[str] | list[str]) -> None:
        """Copy these tasks again (or drop those gone); a copy whose cache task is the one
        it was made from is made current in place."""
        cache, handed = self.cache, self.handed
        sources, ruled, replaced = handed.sources, handed.ruled, self.replaced
        replaced_jobs = self.replaced_jobs
        for key in task_keys:
            source = cache.tasks.get(key)
            old = handed.tasks.get(key)
            if source is None:
                if old is not None:
                    replaced.add(old.node_name)
                    replaced_jobs.add(old.job)
                handed.tasks.pop(key, None)
                sources.pop(key, None)
                ruled.pop(key, None)
                continue
            if old is not None and sources.get(key) is source:
                old.reset_from(source)  # the same pod: only what sessions change can differ
            else:
                if old is not None:
                    replaced.add(old.node_name)
                    replaced_jobs.add(old.job)
                twin = handed.tasks[key] = self._task(source)
                sources[key] = source
                if has_pod_rules(twin.pod):
                    ruled[key] = twin
                else:
                    ruled.pop(key, None)

    def _first_tasks(self) -> None:
        """Every task copied, when nothing was handed out before (a first snapshot, or one
        from scratch): ``_copy_tasks`` without its questions about earlier copies, and
        the priority read once per priority class rather than once per task."""
        handed = self.handed
        journal, tasks, sources, ruled = handed.journal, handed.tasks, handed.sources, handed.ruled
        priorities, default = self.priorities, self.default_priority
        by_class: dict[str, int] = {}
        for key, source in self.cache.tasks.items():
            twin = source.clone(journal)
            spec = source.pod.spec
            if spec.priority is not None:
                twin.priority = spec.priority
            else:
                name = spec.priority_class_name
                found = by_class.get(name)
                if found is None:
                    found = by_class[name] = priorities.get(name, default)
                twin.priority = found
            if TASK_PRIORITY_ANNOTATION in source.pod.metadata.annotations:
                twin.priority = task_priority(source.pod, twin.priority)
            tasks[key] = twin
            sources[key] = source
            if has_pod_rules(twin.pod):
                ruled[key] = twin

    def _priority_of_pod(self, task: TaskInfo) -> int:
        spec = task.pod.spec
        if spec.priority is not None:
            own = spec.priority
        else:
            own = self.priorities.get(spec.priority_class_name, self.default_priority)
        return task_priority(task.pod, own)

    def _task(self, source: TaskInfo) -> TaskInfo:
        twin = source.clone()
        twin.priority = self._priority_of_pod(source)
        twin.journal = self.handed.journal
        return twin
