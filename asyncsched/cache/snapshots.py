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
"""

from __future__ import annotations

import logging
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from asyncsched.api import PodGroup, Queue
from asyncsched.cache.changes import Changes, JobEntry
from asyncsched.model import (
    ClusterSnapshot,
    DisruptionBudget,
    JobInfo,
    NodeFlags,
    NodeInfo,
    NodeTable,
    PodGroupPhase,
    QueueInfo,
    Resource,
    TaskInfo,
    kernels,
)
from asyncsched.model.books import SettledTotals
from asyncsched.model.hypernodes import HyperNodeTree
from asyncsched.model.journal import Journal
from asyncsched.model.snapshot import SnapshotReuseError, snapshot_differences
from asyncsched.model.status import ALLOCATED, READY, TaskStatus
from asyncsched.model.task import has_pod_rules

if TYPE_CHECKING:
    from asyncsched.cache.cluster_cache import ClusterCache

__all__ = ["CHECK_ENV", "QUEUE_NAME_ANNOTATION", "Snapshots"]

log = logging.getLogger(__name__)

QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
CHECK_ENV = "ASYNCSCHED_CHECK_SNAPSHOTS"


@dataclass
class _Template:
    """A PodGroup's parsed gang rules, kept while its spec and creation time stay.

    Equal, not identical: every watch event carries a freshly decoded copy, and a
    status update leaves the spec as it was, so the rules are parsed once per spec.
    """

    spec: object
    creation: str | None
    priority: int
    job: JobInfo


@dataclass
class _Handed:
    """What the last snapshot handed out, by key, and the journal its objects write to."""

    journal: Journal = field(default_factory=list)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    sources: dict[str, TaskInfo] = field(default_factory=dict)
    """The cache's task each of ``tasks`` was copied from."""
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    """In the cache's entry order (JobEntry.seq), as the snapshot lists them."""
    last_seq: int = 0
    seqs: dict[str, int] = field(default_factory=dict)
    """The cache entry each of ``jobs`` was built from, by its seq: an entry deleted and
    made again between two snapshots moves to the end of the cache's order."""
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    rows: list[int] = field(default_factory=list)
    """The cache table's row of each node, in snapshot row order."""
    positions: dict[str, int] = field(default_factory=dict)
    """Each node's row in the snapshot's table."""
    table: NodeTable | None = None
    flags: NodeFlags | None = None
    queue_infos: dict[str, tuple[Queue, QueueInfo]] = field(default_factory=dict)
    templates: dict[str, _Template] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    settled: dict[str, JobInfo] = field(default_factory=dict)
    totals: dict[str, SettledTotals] = field(default_factory=dict)
    counted: dict[str, SettledTotals] = field(default_factory=dict)
    """What each settled job added to ``totals`` when it settled: a session may change the
    job since (preempt evicting its tasks), and it must leave the totals as it came in."""
    token: object | None = None
    """The configuration every job in ``settled`` was found settled under."""
    budgets: tuple[DisruptionBudget, ...] | None = None
    tree: HyperNodeTree | None = None
    tree_labels: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """The node labels ``tree`` was built over."""
    ruled: dict[str, TaskInfo] = field(default_factory=dict)
    """Those of ``tasks`` whose pods have rules about other pods (``has_pod_rules``)."""


class Snapshots:
    """Builds a cache's snapshots, each from the one before."""

    def __init__(self) -> None:
        self.handed = _Handed()

    def take(self, cache: ClusterCache, now: float) -> ClusterSnapshot:
        changes = cache.changes
        handed = self.handed
        touched = list(handed.journal)
        handed.journal.clear()
        if changes.everything:
            handed = self.handed = _Handed(journal=handed.journal)
        snapshot = _Build(cache, handed, touched, now).run()
        cache.changes = changes.cleared()
        if os.environ.get(CHECK_ENV) == "1":
            fresh = _Build(cache, _Handed(), [], now).run(full=True)
            found = snapshot_differences(snapshot, fresh) + _totals_differences(snapshot)
            if found:
                raise SnapshotReuseError("; ".join(found[:5]))
            snapshot.reference = fresh
        return snapshot

    @staticmethod
    def fresh(cache: ClusterCache, now: float) -> ClusterSnapshot:
        """A snapshot built from scratch that shares nothing with the incremental ones and
        leaves the cache's change log alone: for trials that change it."""
        return _Build(cache, _Handed(), [], now).run(full=True)


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


class _Build:
    """One snapshot: what to copy again, then the copies, then the lists in cache order."""

    def __init__(self, cache: ClusterCache, handed: _Handed, touched: Journal, now: float) -> None:
        self.cache = cache
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
        for key in job_keys:
            self._unsettle(key)
            entry = cache.jobs.get(key)
            if entry is None:
                job = None
            elif full or (job := self._refreshed(key, entry, queues, task_keys)) is None:
                job = self._job(key, entry, queues)
            if job is None:
                handed.seqs.pop(key, None)
                if handed.jobs.pop(key, None) is not None:
                    handed.templates.pop(key, None)
            elif entry is not None and handed.seqs.get(key) == entry.seq and key in handed.jobs:
                handed.jobs[key] = job
            else:
                added[key] = job
        self._add_jobs(added)
        self._partition(job_keys)

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

    def _tree(self, anew: bool, changes: Changes) -> HyperNodeTree:
        """The network tree; the last snapshot's while no HyperNode, node or label changed."""
        handed, cache = self.handed, self.cache
        # Labels matter only to HyperNodes (labelMatch): with none, a heartbeat's new Node
        # object costs no pass over the nodes.
        if not anew and handed.tree is not None and changes.node_objects and cache.hypernodes:
            anew = any(
                handed.tree_labels.get(name) != info.labels for name, info in cache.nodes.items()
            )
        if anew or handed.tree is None:
            handed.tree_labels = {name: info.labels for name, info in cache.nodes.items()}
            handed.tree = HyperNodeTree.build(cache.hypernodes.values(), handed.tree_labels)
        return handed.tree

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

    # -- settled jobs ------------------------------------------------------------

    def _unsettle(self, key: str) -> None:
        """A job copied again (or gone) is no longer counted among the settled."""
        handed = self.handed
        old = handed.settled.pop(key, None)
        if old is not None:
            handed.totals[old.queue].merge(handed.counted.pop(key), -1)

    def _partition(self, copied: set[str] | list[str]) -> None:
        """Jobs copied again are active; an active job handed out again unchanged becomes
        settled when the last session said so (under the same configuration as the rest)."""
        handed = self.handed
        copied = set(copied)
        active = {key for key in copied if key in handed.jobs}
        for key in handed.active:
            if key in copied or key not in handed.jobs:
                continue
            job = handed.jobs[key]
            memo = job.settled_under
            if memo is not None and (not handed.settled or memo is handed.token):
                handed.token = memo
                handed.settled[key] = job
                totals = handed.totals.get(job.queue)
                if totals is None:
                    totals = handed.totals[job.queue] = SettledTotals()
                part = handed.counted[key] = SettledTotals()
                part.add(job)
                totals.merge(part)
            else:
                active.add(key)
        handed.active = active

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

    # -- copies ----------------------------------------------------------------

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
            tasks[key] = twin
            sources[key] = source
            if has_pod_rules(twin.pod):
                ruled[key] = twin

    def _priority_of_pod(self, task: TaskInfo) -> int:
        spec = task.pod.spec
        if spec.priority is not None:
            return spec.priority
        return self.priorities.get(spec.priority_class_name, self.default_priority)

    def _task(self, source: TaskInfo) -> TaskInfo:
        twin = source.clone()
        twin.priority = self._priority_of_pod(source)
        twin.journal = self.handed.journal
        return twin

    def _job(self, key: str, entry: JobEntry, queues: dict[str, QueueInfo]) -> JobInfo | None:
        pg = entry.podgroup
        if pg is not None:
            job = self._template(key, pg).clone_empty()
            job.set_phase(pg.status.phase or PodGroupPhase.PENDING)
            job.podgroup = pg
        else:
            lone = self._lone_job(key, entry)
            if lone is None:
                return None
            job = lone
        if job.queue not in queues:
            log.warning("job %s names queue %r, which does not exist; skipped", key, job.queue)
            return None
        tasks = self.handed.tasks
        for task_key in entry.tasks:
            job.add_task(tasks[task_key])
        job.touched = False
        job.journal = self.handed.journal
        return job

    def _refreshed(
        self,
        key: str,
        entry: JobEntry,
        queues: dict[str, QueueInfo],
        task_keys: set[str] | list[str],
    ) -> JobInfo | None:
        """The last snapshot's JobInfo made current in place, when only its phase or
        PodGroup object can differ from a fresh copy: same entry, same gang rules, and none
        of its tasks copied again (a session changes a task only through setters that mark
        it touched, so every task it changed is copied again). Enqueue admitting a waiting
        job, and the status the shell writes for it, change nothing else; re-adding its
        tasks to an empty copy is most of what copying such a job costs. None: copy it."""
        handed = self.handed
        old = handed.jobs.get(key)
        pg = entry.podgroup
        if (
            old is None
            or pg is None
            or handed.seqs.get(key) != entry.seq
            or old.queue not in queues
            or len(old.tasks) != len(entry.tasks)
        ):
            return None
        kept = handed.templates.get(key)
        if kept is None or self._template(key, pg) is not kept.job:
            return None  # new gang rules (or a new priority): a copy from the new template
        if any(task_key in task_keys for task_key in entry.tasks) and not self._resorted(
            key, old, entry
        ):
            return None
        old.reset_to(pg.status.phase or PodGroupPhase.PENDING, pg)
        return old

    def _resorted(self, key: str, old: JobInfo, entry: JobEntry) -> bool:
        """Can a job whose tasks were copied again keep its books, as a fresh copy would
        build them? Yes when it still holds the very task copies (none dropped or replaced:
        those made current in place), under the cache entry's keys in the same order, and
        they all sit in one status bucket, in that order, with the status each has now: a
        fresh copy adds the same tasks in the same order to one bucket. Its counts are
        then added up again over that bucket as ``add_task`` adds them. The usual case: a
        gang placed whole, whose tasks the session and then the cache moved to Binding.
        """
        if key in self.replaced_jobs:
            return False
        held, same = old.tasks, operator.is_
        if not all(map(same, held, entry.tasks)):
            return False
        buckets = [(status, bucket) for status, bucket in old.by_status.items() if bucket]
        if len(buckets) != 1:
            return False
        status, bucket = buckets[0]
        if len(bucket) != len(held) or not all(map(same, bucket, held)):
            return False
        allocated, best_effort = Resource(), 0
        counts_allocated = status in ALLOCATED
        for task in bucket.values():
            if task.status is not status:
                return False
            if counts_allocated:
                allocated = allocated + task.resreq
            elif task.best_effort:
                best_effort += 1
        n = len(bucket)
        old.by_status = {status: bucket}
        old.allocated = allocated
        old.n_ready = n if status in READY else 0
        old.n_allocated = n if counts_allocated else 0
        old.n_pending_best_effort = best_effort if status is TaskStatus.PENDING else 0
        return True

    def _template(self, key: str, pg: PodGroup) -> JobInfo:
        priority = self.priorities.get(pg.spec.priority_class_name, self.default_priority)
        found = self.handed.templates.get(key)
        creation = pg.metadata.creation_timestamp
        if (
            found is None
            or found.priority != priority
            or found.creation != creation
            or (found.spec is not pg.spec and found.spec != pg.spec)
        ):
            found = _Template(pg.spec, creation, priority, JobInfo.from_podgroup(pg, priority))
            self.handed.templates[key] = found
        return found.job

    def _lone_job(self, key: str, entry: JobEntry) -> JobInfo | None:
        if not entry.lone_pod or not entry.tasks:
            return None
        task = next(iter(entry.tasks.values()))
        queue = task.pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")
        return JobInfo(
            uid=key,
            name=task.name,
            namespace=task.namespace,
            queue=queue,
            min_available=1,
            priority=self._priority_of_pod(task),
            priority_class=task.pod.spec.priority_class_name,
            phase=PodGroupPhase.INQUEUE,
            creation=task.creation,
        )

    def _add_jobs(self, added: dict[str, JobInfo]) -> None:
        """Add new jobs keeping ``handed.jobs`` in entry order: at the end when they are
        the newest entries (the usual case), else by listing the entries again.

        The dict is only ever appended to here (no pop and insert), so copying it for
        each snapshot stays a fast copy.
        """
        handed, entries = self.handed, self.cache.jobs
        if not added:
            return
        for key in added:
            handed.jobs.pop(key, None)  # its entry was made again: it moves to the end
            handed.seqs[key] = entries[key].seq
        seqs = sorted((entries[k].seq, k) for k in added)
        if seqs[0][0] > handed.last_seq:
            for _, key in seqs:
                handed.jobs[key] = added[key]
        else:
            jobs = handed.jobs
            handed.jobs = {k: jobs.get(k) or added[k] for k in entries if k in jobs or k in added}
        handed.last_seq = max(handed.last_seq, seqs[-1][0])

    def _nodes(self, names: set[str] | list[str], renumber: bool) -> NodeTable:
        """The nodes in cache order, node i on row i of the snapshot's table.

        While the node set stays, the table is the last snapshot's again with the
        rows of the nodes copied again refreshed from the cache (a session writes
        rows only through the NodeInfos it touches), so nothing here is O(nodes).
        """
        cache, handed = self.cache, self.handed
        renumber = renumber or any(n not in handed.nodes and n in cache.nodes for n in names)
        table = handed.table
        if renumber or table is None or table.dimensions != cache.table.dimensions:
            renumber = True
            handed.rows = [info.row for info in cache.nodes.values()]
            handed.positions = {n: i for i, n in enumerate(cache.nodes)}
            table = handed.table = cache.table.compact(handed.rows)
        # A node's copy made current in place keeps its task dict unless this build
        # replaced a task copy it held, or the cache node's keys differ (by identity: a
        # task's key object is its uid) from the copy's, in order. A session adds a task at
        # the end, and the cache does when the bind arrives, so this is the usual case.
        rows: list[int] = []
        ats: list[int] = []
        kernels.nodes_current(
            names,
            cache.nodes,
            handed.nodes,
            handed.positions,
            handed.tasks,
            self.replaced,
            table,
            handed.journal,
            renumber,
            rows,
            ats,
        )
        if rows:  # all rows at once: four row copies per node cost more than the rest
            source_table = cache.table
            table.allocatable[rows] = source_table.allocatable[ats]
            table.idle[rows] = source_table.idle[ats]
            table.releasing[rows] = source_table.releasing[ats]
            table.pipelined[rows] = source_table.pipelined[ats]
        if renumber:
            handed.nodes = {n: handed.nodes[n] for n in cache.nodes}
            for row, info in enumerate(handed.nodes.values()):
                info.table = table
                info.row = row
        return table
