"""JobInfo: a gang of tasks that share a PodGroup (or a lone pod that is its own job)."""

from __future__ import annotations

from collections.abc import Iterable

from asyncsched.api import PodGroup
from asyncsched.model.journal import Journal, Tracked
from asyncsched.model.resource import EMPTY, Resource
from asyncsched.model.status import ALLOCATED, READY, TaskStatus
from asyncsched.model.task import TaskInfo
from asyncsched.model.timestamps import parse_timestamp

__all__ = ["JobInfo", "PodGroupPhase"]

# Statuses as module names: cheaper to read compiled (asyncsched.model.status).
_PENDING = TaskStatus.PENDING
_PIPELINED = TaskStatus.PIPELINED


class PodGroupPhase:
    """PodGroup phases as Volcano writes them."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class JobInfo(Tracked):
    """A job's tasks indexed by status, and the gang rules that come from its PodGroup.

    A session changes a job only through ``set_phase`` and the task methods
    (add_task, remove_task, update_task_status); each marks it touched (see
    ``asyncsched.model.journal``). The other fields are read-only.
    """

    __slots__ = (
        "_allocated_before",
        "allocated",
        "books_memo",
        "by_status",
        "creation",
        "min_available",
        "min_resources",
        "min_task_member",
        "n_allocated",
        "n_pending_best_effort",
        "n_pending_gated",
        "n_ready",
        "name",
        "namespace",
        "network_topology",
        "phase",
        "podgroup",
        "podgroup_in_sync",
        "priority",
        "priority_class",
        "queue",
        "settled_under",
        "share_memo",
        "tasks",
        "uid",
    )

    def __init__(
        self,
        *,
        uid: str,
        name: str,
        namespace: str,
        queue: str = "default",
        min_available: int = 1,
        min_task_member: dict[str, int] | None = None,
        min_resources: Resource | None = None,
        priority: int = 0,
        priority_class: str = "",
        phase: str = PodGroupPhase.PENDING,
        creation: float = 0.0,
        podgroup: PodGroup | None = None,
    ) -> None:
        self.uid = uid
        self.name = name
        self.namespace = namespace
        self.queue = queue
        self.min_available = min_available
        self.min_task_member = dict(min_task_member or {})
        self.min_resources = min_resources
        self.priority = priority
        self.priority_class = priority_class
        self.phase = phase
        self.creation = creation
        self.podgroup = podgroup
        self.network_topology = podgroup.spec.network_topology if podgroup else None
        self.tasks: dict[str, TaskInfo] = {}
        self.by_status: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        self._allocated_before = self.allocated
        self.n_ready = 0
        """Tasks in a READY status; kept by add_task/remove_task. Read, never write."""
        self.n_allocated = 0
        """Tasks in an ALLOCATED status (a subset of READY); kept like n_ready."""
        self.n_pending_best_effort = 0
        """Pending tasks that request nothing (BestEffort); kept like n_ready."""
        self.n_pending_gated = 0
        """Pending tasks that request something and carry scheduling gates; kept like
        n_ready, so that only jobs with some look for them (``gated_request``)."""
        self.touched = False
        self.journal: Journal | None = None
        self.settled_under: object | None = None
        """Memo, not state: the configuration under which the last session found this
        job settled (``asyncsched.model.snapshot``). Valid only for this object, which
        is handed out again only while nothing changes it; a copy starts without it."""
        self.books_memo: object | None = None
        """Memo, not state, like ``settled_under``: what this job adds to its queue's books
        (``asyncsched.model.queue_tree.queue_books``), taken while it was untouched and
        read only while it still is; a copy starts without it."""
        self.share_memo: tuple[Resource, Resource, object] | None = None
        """Memo, not state: the cluster total, what the job held, and the figure drf
        reported for its share (``asyncsched.plugins.drf``) from those two; read only
        while both are the same, so it survives a copy made current in place
        (``reset_to``); a copy starts without it."""
        self.podgroup_in_sync = False
        """Memo, not state, like ``settled_under``: a session that left this job untouched
        found its PodGroup status as it should be, with no condition or notice of a plugin
        to add (``asyncsched.framework.cycle``); a copy starts without it."""

    def touch(self) -> None:
        if not self.touched:
            self._allocated_before = self.allocated
        Tracked.touch(self)  # not super(): compiled, touch is a cpdef method (job.pxd)

    def reset_to(self, phase: str, podgroup: PodGroup | None) -> None:
        """Untouched, with this phase and PodGroup, as a fresh copy of the same tasks would
        be: for a snapshot that hands this object out again after a session changed only
        its phase (``asyncsched.cache.snapshot_jobs``). The memos that hold only while the
        job is untouched are dropped; drf's says what it was made from, and stays."""
        self.phase = phase
        self.podgroup = podgroup
        self.touched = False
        self._allocated_before = self.allocated
        self.settled_under = None
        self.books_memo = None
        self.podgroup_in_sync = False

    def allocated_at_open(self) -> Resource:
        """``allocated`` as the snapshot handed it out, before any change this session.

        Plugins that keep their own books of a job from session open (drf) can
        start them when first needed rather than for every job at open.
        """
        return self._allocated_before if self.touched else self.allocated

    def set_phase(self, value: str) -> None:
        """Change the phase; the job is marked touched (the only way to change it)."""
        self.phase = value
        if not self.touched:
            self.touch()

    @classmethod
    def from_podgroup(cls, podgroup: PodGroup, priority: int) -> JobInfo:
        meta = podgroup.metadata
        spec = podgroup.spec
        return cls(
            uid=f"{meta.namespace}/{meta.name}",
            name=meta.name,
            namespace=meta.namespace,
            queue=spec.queue or "default",
            min_available=spec.min_member,
            min_task_member=spec.min_task_member,
            min_resources=(
                Resource.from_quantities(spec.min_resources) if spec.min_resources else None
            ),
            priority=priority,
            priority_class=spec.priority_class_name,
            phase=podgroup.status.phase or PodGroupPhase.PENDING,
            creation=parse_timestamp(meta.creation_timestamp),
            podgroup=podgroup,
        )

    # -- membership --------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        if not self.touched:
            self.touch()
        self.tasks[task.uid] = task
        self._count_in(task)

    def remove_task(self, task: TaskInfo) -> None:
        existing = self.tasks.pop(task.uid, None)
        if existing is None:
            return
        if not self.touched:
            self.touch()
        self._count_out(existing)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task to a new status, keeping the index and allocated total true.

        The same as remove_task then add_task, except that a task moving between
        two allocated statuses leaves ``allocated`` as it is instead of taking its
        request off and adding it back.
        """
        uid = task.uid
        tasks, by_status = self.tasks, self.by_status
        existing = tasks.get(uid)
        before = task.status
        if existing is task and before in ALLOCATED and status in ALLOCATED:
            if not self.touched:
                self.touch()
            del tasks[uid]
            bucket = by_status.get(before)
            if bucket is not None:
                bucket.pop(uid, None)
            task.set_status(status)
            tasks[uid] = task
            bucket = by_status.get(status)
            if bucket is None:
                bucket = by_status[status] = {}
            bucket[uid] = task
            return
        # remove_task, set_status, add_task in one pass (each step as they take it: a
        # Statement moves every task it places this way)
        if existing is not None:
            del tasks[uid]
            if not self.touched:
                self.touch()
            self._count_out(existing)
        task.set_status(status)
        if not self.touched:
            self.touch()
        tasks[uid] = task
        self._count_in(task)

    def _count_in(self, task: TaskInfo) -> None:
        """Put a task just set in ``tasks`` into its status bucket and the counts."""
        status = task.status
        by_status = self.by_status
        bucket = by_status.get(status)
        if bucket is None:
            bucket = by_status[status] = {}
        bucket[task.uid] = task
        if status in READY:
            self.n_ready += 1
            if status in ALLOCATED:
                self.n_allocated += 1
                self.allocated = self.allocated + task.resreq
        elif status is _PENDING:
            if task.best_effort:
                self.n_pending_best_effort += 1
            elif task.pod.spec.scheduling_gates:
                self.n_pending_gated += 1

    def _count_out(self, existing: TaskInfo) -> None:
        """Take a task just popped from ``tasks`` out of its status bucket and the counts."""
        status = existing.status
        bucket = self.by_status.get(status)
        if bucket is not None:
            bucket.pop(existing.uid, None)
        if status in READY:
            self.n_ready -= 1
            if status in ALLOCATED:
                self.n_allocated -= 1
                self.allocated = self.allocated - existing.resreq
        elif status is _PENDING:
            if existing.best_effort:
                self.n_pending_best_effort -= 1
            elif self.n_pending_gated and existing.pod.spec.scheduling_gates:
                self.n_pending_gated -= 1

    def clone_empty(self, journal: Journal | None = None) -> JobInfo:
        """A copy with the same gang rules and no tasks (the snapshot re-adds cloned tasks).

        The copy is untouched and records its changes in ``journal``; adding its
        tasks marks it touched, so whoever fills it clears ``touched`` after.
        """
        # Every slot by name (a loop of getattr/setattr costs twice as much, once per job
        # copied per snapshot); tests/unit/model/test_copies.py checks none is left out.
        twin = JobInfo.__new__(JobInfo)
        twin.uid = self.uid
        twin.name = self.name
        twin.namespace = self.namespace
        twin.queue = self.queue
        twin.min_available = self.min_available
        twin.min_task_member = dict(self.min_task_member)
        twin.min_resources = self.min_resources
        twin.priority = self.priority
        twin.priority_class = self.priority_class
        twin.phase = self.phase
        twin.creation = self.creation
        twin.podgroup = self.podgroup
        twin.network_topology = self.network_topology
        twin.tasks = {}
        twin.by_status = {}
        twin.allocated = twin._allocated_before = Resource()
        twin.n_ready = 0
        twin.n_allocated = 0
        twin.n_pending_best_effort = 0
        twin.n_pending_gated = 0
        twin.touched = False
        twin.journal = journal
        twin.settled_under = None
        twin.books_memo = None
        twin.share_memo = None
        twin.podgroup_in_sync = False
        return twin

    # -- counting ----------------------------------------------------------

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        found: list[TaskInfo] = []
        for status in statuses:
            found.extend(self.by_status.get(status, {}).values())
        return found

    def count(self, statuses: Iterable[TaskStatus]) -> int:
        # A plain loop: this runs for every job in several per-session passes.
        by_status = self.by_status
        found = 0
        for status in statuses:
            bucket = by_status.get(status)
            if bucket:
                found += len(bucket)
        return found

    def ready_task_num(self) -> int:
        """Tasks in a READY status (kept as a running count by add_task/remove_task)."""
        return self.n_ready

    def pending_best_effort_num(self) -> int:
        """Pending tasks that request nothing (BestEffort), kept as a running count."""
        return self.n_pending_best_effort

    def gated_request(self) -> Resource:
        """What its pending tasks held back by a scheduling gate other than Volcano's own
        ask for, summed (``TaskInfo.gated_apart``; Volcano's ``GetSchGatedPodResources``)."""
        if not self.n_pending_gated:
            return EMPTY
        total = EMPTY
        for task in self.by_status.get(_PENDING, {}).values():
            if task.gated_apart:
                total = total + task.resreq
        return total

    def waiting_task_num(self) -> int:
        return len(self.by_status.get(_PIPELINED, ()))

    def valid_task_num(self) -> int:
        """Tasks that can still count toward the gang: all but Failed, Releasing and Unknown."""
        # READY is kept as a running count and is disjoint from Pending and Pipelined.
        by_status = self.by_status
        return self.n_ready + len(by_status.get(_PENDING, ())) + len(by_status.get(_PIPELINED, ()))

    def pending_tasks(self) -> list[TaskInfo]:
        return list(self.by_status.get(_PENDING, {}).values())

    def ungated_pending_tasks(self) -> list[TaskInfo]:
        """Pending tasks without scheduling gates: those a session may place or preempt for."""
        return [t for t in self.by_status.get(_PENDING, {}).values() if not t.gated]

    def is_ready(self) -> bool:
        return self.ready_task_num() >= self.min_available

    def is_pending(self) -> bool:
        """Volcano holds a job back from allocate until enqueue admits it."""
        return self.phase == PodGroupPhase.PENDING

    def total_request(self) -> Resource:
        total = Resource()
        for task in self.tasks.values():
            total = total + task.resreq
        return total

    def role_counts(self, statuses: Iterable[TaskStatus]) -> dict[str, int]:
        wanted = frozenset(statuses)
        counts: dict[str, int] = {}
        for task in self.tasks.values():
            if task.status in wanted:
                counts[task.role] = counts.get(task.role, 0) + 1
        return counts

    @property
    def key(self) -> str:
        return self.uid

    def shown_name(self) -> str:
        """``namespace/name`` as the job's owner knows it: the Volcano Job that made the
        PodGroup when one did (its PodGroup is named after it plus a uid), else the
        PodGroup's own name. For messages, never for lookups."""
        owners = self.podgroup.metadata.owner_references if self.podgroup is not None else []
        owner = next((r for r in owners if r.controller and r.kind == "Job"), None)
        return f"{self.namespace}/{owner.name if owner is not None else self.name}"

    def __repr__(self) -> str:
        tasks = len(self.tasks)
        return f"Job({self.uid}, queue={self.queue}, min={self.min_available}, tasks={tasks})"
