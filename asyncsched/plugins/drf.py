"""drf: Dominant Resource Fairness between jobs.

A job's share is the largest fraction of any one cluster resource it holds;
the job with the smaller share is served first, so a CPU-hungry job and a
GPU-hungry job progress evenly. Shares follow every allocation and
deallocation within the session.

With ``enableHierarchy: true`` (hierarchical DRF, see ``_hdrf``) queues are
also ordered by their fair share down the tree their ``volcano.sh/hierarchy``
annotations draw, and a queue may reclaim from a queue that would then rank
behind it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar, cast

from asyncsched.framework import Arguments, EventHandler, Session
from asyncsched.framework.hooks import (
    JOB_ORDER,
    PREEMPTABLE,
    QUEUE_ORDER,
    RECLAIMABLE,
    JobOrderFn,
)
from asyncsched.framework.orderkeys import KeyOrder
from asyncsched.framework.results import PluginGauge
from asyncsched.model import JobInfo, QueueInfo, Resource, TaskInfo
from asyncsched.plugins._hdrf import HierarchicalShares
from asyncsched.plugins._resources import cluster_total, dominant_share

__all__ = ["SHARE_DELTA", "DrfPlugin"]

log = logging.getLogger(__name__)

SHARE_DELTA = 0.000001
"""Shares closer than this are equal (a preemptor may then take from its peer)."""


@dataclass
class _JobShare:
    allocated: Resource = field(default_factory=Resource)
    share: float = 0.0
    dominant: str = ""
    stale: bool = False
    """allocated changed since share was computed (it is recomputed when next read)."""


class DrfPlugin:
    name: ClassVar[str] = "drf"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.total = Resource()
        self.jobs: dict[str, _JobShare] = {}
        """Books of the jobs asked about this session (see _attr)."""
        self.session_jobs: dict[str, JobInfo] = {}
        self.hierarchy: HierarchicalShares | None = None

    def share_of(self, job_uid: str) -> float:
        """The job's dominant share now (0 for a job the session does not know)."""
        attr = self.jobs.get(job_uid)
        if attr is None:
            job = self.session_jobs.get(job_uid)
            if job is None or job.allocated_at_open().is_zero():
                return 0.0  # holds nothing (yet): no books needed to say so
            attr = self._attr(job_uid)
            if attr is None:
                return 0.0
        if attr.stale:
            self._update(attr)
        return attr.share

    def _attr(self, job_uid: str) -> _JobShare | None:
        """The job's books, made when first asked for: most jobs never are."""
        attr = self.jobs.get(job_uid)
        if attr is None:
            job = self.session_jobs.get(job_uid)
            if job is None:
                return None
            # Stale: the share is computed when first read, from allocated and total.
            attr = _JobShare(allocated=job.allocated_at_open(), stale=True)
            self.jobs[job_uid] = attr
        return attr

    def _update(self, attr: _JobShare) -> None:
        attr.dominant, attr.share = dominant_share(attr.allocated, self.total)
        attr.stale = False

    def on_session_open(self, ssn: Session) -> None:
        option = ssn.options.get(self.name)
        self.total = cluster_total(ssn)
        self.jobs = {}
        self.session_jobs = ssn.jobs
        self.hierarchy = None
        if option is not None and option.flags.get("enableHierarchy", False):
            self._open_hierarchy(ssn)

        def smaller_share_first(job: JobInfo) -> float:
            return self.share_of(job.uid)

        job_order: JobOrderFn = KeyOrder(smaller_share_first)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
            own = self._attr(preemptor.job)
            if own is None:
                return []
            _, mine = dominant_share(own.allocated + preemptor.resreq, self.total)
            remaining: dict[str, Resource] = {}
            victims = []
            for task in preemptees:
                other = self._attr(task.job)
                if other is None:
                    continue
                left = remaining.get(task.job, other.allocated) - task.resreq
                remaining[task.job] = left
                _, theirs = dominant_share(left, self.total)
                if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
                    victims.append(task)
            return victims

        def on_allocate(task: TaskInfo) -> None:
            attr = self._attr(task.job)
            if attr is not None:
                attr.allocated = attr.allocated + task.resreq
                attr.stale = True
            if self.hierarchy is not None:
                self.hierarchy.charge(task.job, task.resreq, 1)

        def on_deallocate(task: TaskInfo) -> None:
            attr = self._attr(task.job)
            if attr is not None:
                attr.allocated = attr.allocated - task.resreq
                attr.stale = True
            if self.hierarchy is not None:
                self.hierarchy.charge(task.job, task.resreq, -1)

        ssn.add(JOB_ORDER, self.name, job_order)
        ssn.add(PREEMPTABLE, self.name, preemptable)
        ssn.add_event_handler(self.name, EventHandler(on_allocate, on_deallocate))

    def _open_hierarchy(self, ssn: Session) -> None:
        """Hierarchical DRF: every job below its queue's path; queue order and reclaim."""
        tree = self.hierarchy = HierarchicalShares(self.total)
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is not None:
                tree.place(job, queue, job.allocated_at_open())

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            found = tree.compare(left, right)
            return -1 if found < 0 else (1 if found > 0 else 0)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
            """Each task alone: would its queue rank behind the reclaimer's without it?"""
            job = ssn.jobs.get(reclaimer.job)
            mine = ssn.queues.get(job.queue) if job is not None else None
            if mine is None:
                return []
            trial = tree.copy()
            trial.charge(reclaimer.job, reclaimer.resreq, 1)
            victims = []
            for task in reclaimees:
                other = ssn.jobs.get(task.job)
                theirs = ssn.queues.get(other.queue) if other is not None else None
                if theirs is None:
                    continue
                trial.charge(task.job, task.resreq, -1)
                ahead = trial.compare(mine, theirs) < 0
                trial.charge(task.job, task.resreq, 1)
                if ahead:
                    victims.append(task)
            return victims

        ssn.add(QUEUE_ORDER, self.name, queue_order)
        ssn.add(RECLAIMABLE, self.name, reclaimable)

    def on_session_close(self, ssn: Session) -> None:
        """Volcano's ``volcano_job_share`` for every job holding resources; the books stay
        readable for other plugins' close."""
        if not ssn.gauges_wanted:
            return  # a share per job costs a pass over every job: only for a shell that exports
        total = self.total
        books = self.jobs
        again: list[object] = []
        same_total: Resource | None = None  # a memo's total found equal to this session's
        for job in self.session_jobs.values():
            attr = books.get(job.uid)
            held = job.allocated_at_open() if attr is None else attr.allocated
            if attr is None and held.is_zero():
                continue  # holds nothing and asked nothing: no share to show
            memo = job.share_memo
            if memo is not None:
                # Made from the same holding under the same total: the same share, and the
                # same figure object, which the shell passes over. A bind coming back or a
                # pod turning Running changes neither. Memos made in one session share its
                # total, so most are known by identity.
                made_under, made_from, figure = memo
                if (made_under is same_total or made_under == total) and (
                    made_from is held or made_from == held
                ):
                    same_total = made_under
                    again.append(figure)
                    continue
            if again:  # in job order, as a session on a fresh snapshot reports them
                ssn.report_again(*cast("list[PluginGauge]", again))
                again.clear()
            share = self.share_of(job.uid)
            figure = ssn.report_gauge(
                "volcano_job_share", "Share for one job", share,
                job_ns=job.namespace, job_id=job.name,
            )  # fmt: skip
            if figure is not None:
                job.share_memo = (total, held, figure)
        ssn.report_again(*cast("list[PluginGauge]", again))
