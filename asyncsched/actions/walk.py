"""The queue -> job -> task walk every action shares.

Volcano's actions all visit the cluster the same way: the queue first in
queue order, within it the job first in job order, and that job's tasks in
task order; a queue (or job) that had its turn may go back into the ordering
with its new standing, so queues take turns as their plugins order them.
``Walk`` is that ordering, once: allocate and enqueue take turns through it,
backfill reads it in a fixed order (``ordered``), and preempt and reclaim use
it with their own rules for when a queue goes back.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

from asyncsched.framework import Session
from asyncsched.framework.orderkeys import HeapEntry
from asyncsched.model import JobInfo, QueueInfo, TaskInfo

__all__ = ["Walk", "admitted_queue", "ordered_tasks"]

log = logging.getLogger(__name__)


class Walk:
    """Queues in queue order, each queue's jobs in job order; an entry taken out may be
    put back (it is then ordered by its standing at that moment).

    With ``frozen`` (allocate, enqueue, backfill) a job's or queue's place is its standing
    when it entered the walk, which is exact because only the job taken out, and its
    queue, change; preempt and reclaim evict from jobs still in the walk, and compare
    standings as they are now (``asyncsched.framework.orderkeys``).
    """

    def __init__(self, ssn: Session, *, frozen: bool = True) -> None:
        queue_keyed = ssn.frozen_queue_key() if frozen else None
        self._queue_key: Callable[[QueueInfo], Any] = queue_keyed or ssn.queue_key(frozen=False)
        self._queue_tuples = queue_keyed is not None
        """Queue entries are (key, counter, queue) tuples, compared without calling back."""
        keyed = ssn.frozen_job_key() if frozen else None
        self._job_key: Callable[[JobInfo], Any] = keyed or ssn.job_key(frozen=False)
        self._tuples = keyed is not None
        """Job entries are (key, counter, job) tuples, compared without calling back."""
        self._counter = itertools.count()
        self._queues: list[Any] = []
        self.jobs: dict[str, list[Any]] = {}
        """Per queue name, its jobs still to visit (a heap)."""

    def __bool__(self) -> bool:
        return bool(self._queues)

    def add_queue(self, queue: QueueInfo) -> None:
        """Take a queue into the walk once (later calls do nothing)."""
        if queue.name not in self.jobs:
            self.jobs[queue.name] = []
            self.push_queue(queue)

    def add(self, queue: QueueInfo, job: JobInfo) -> None:
        """Take a job, and its queue if new, into the walk."""
        self.add_queue(queue)
        self.push_job(job)

    # push_queue and push_job make their entries alike, each inline: one more call per
    # push cost the sessions 0.16% of their instructions (callgrind).
    def push_queue(self, queue: QueueInfo) -> None:
        entry: Any
        key = self._queue_key(queue)
        if self._queue_tuples:
            entry = (key, next(self._counter), queue)
        else:
            entry = HeapEntry(key, next(self._counter), queue)
        heapq.heappush(self._queues, entry)

    def push_job(self, job: JobInfo) -> None:
        entry: Any
        key = self._job_key(job)
        if self._tuples:
            entry = (key, next(self._counter), job)
        else:
            entry = HeapEntry(key, next(self._counter), job)
        heapq.heappush(self.jobs[job.queue], entry)

    def pop_queue(self) -> QueueInfo:
        """The queue whose turn it is (it leaves the walk until pushed back)."""
        entry = heapq.heappop(self._queues)
        queue: QueueInfo = entry[2] if self._queue_tuples else entry.item
        return queue

    def pop_job(self, queue: QueueInfo) -> JobInfo | None:
        """The queue's job whose turn it is, or None when it has none left."""
        jobs = self.jobs.get(queue.name)
        if not jobs:
            return None
        entry = heapq.heappop(jobs)
        job: JobInfo = entry[2] if self._tuples else entry.item
        return job

    def waiting_jobs(self, queue: QueueInfo) -> list[JobInfo]:
        """The queue's jobs still to visit, in no particular order (they stay in the walk)."""
        jobs: list[JobInfo] = [
            e[2] if self._tuples else e.item for e in self.jobs.get(queue.name, ())
        ]
        return jobs

    def has_jobs(self, queue: QueueInfo) -> bool:
        return bool(self.jobs.get(queue.name))

    def remaining_jobs(self) -> Iterator[JobInfo]:
        """The jobs of the queues still in the walk, in no particular order."""
        for entry in self._queues:
            queue: QueueInfo = entry[2] if self._queue_tuples else entry.item
            for job_entry in self.jobs.get(queue.name, ()):
                yield job_entry[2] if self._tuples else job_entry.item

    def ordered(self) -> Iterator[tuple[QueueInfo, JobInfo]]:
        """Every job once, queue by queue, in the orders as they stand now (no turns)."""
        while self:
            queue = self.pop_queue()
            while (job := self.pop_job(queue)) is not None:
                yield queue, job


def admitted_queue(ssn: Session, job: JobInfo) -> QueueInfo | None:
    """The job's queue when the job may be acted on: admitted (not Pending), valid for its
    plugins (gang: enough valid tasks), and in a queue the session knows; else None."""
    if job.is_pending():
        return None
    verdict = ssn.job_valid(job)
    if verdict is not None and not verdict.passed:
        log.debug("job %s not valid: %s %s", job.uid, verdict.reason, verdict.message)
        return None
    return ssn.queue_of(job)


def ordered_tasks(ssn: Session, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """Tasks of one job in task order."""
    if len(tasks) < 2:
        return list(tasks)  # nothing to order (most jobs are one pod)
    return sorted(tasks, key=ssn.task_key())
