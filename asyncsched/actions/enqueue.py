"""Enqueue: admit Pending PodGroups to Inqueue, so allocate considers them.

Admission is what keeps a flood of jobs from fragmenting the cluster: a job
whose PodGroup declares minResources only moves on when the plugins agree
(``job_enqueueable``: proportion, capacity, overcommit...) that the room for
its whole gang is there. A job without minResources is admitted at once.

As Volcano does, queues take turns: one job from the queue first in queue
order, then that queue goes back into the ordering, so every queue's head
job is considered before a queue's second job. Volcano does not consult
``overused`` here; the plugins' enqueueable votes carry the queue limits.
Unlike Volcano, a queue that is not Open admits nothing (Volcano leaves that
to the proportion and capacity votes, which a job without minResources never
reaches, so its PodGroup would turn Inqueue in a closed queue).
"""

from __future__ import annotations

import heapq
import itertools
from typing import ClassVar

from asyncsched.framework import Arguments, Session
from asyncsched.framework.session import HeapEntry
from asyncsched.model import JobInfo, PodGroupPhase, QueueInfo

__all__ = ["EnqueueAction"]


class EnqueueAction:
    name: ClassVar[str] = "enqueue"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        queue_key, job_key = ssn.queue_key(), ssn.job_key()
        counter = itertools.count()
        queues: list[HeapEntry] = []
        pending: dict[str, list[HeapEntry]] = {}
        for job in ssn.active_jobs.values():
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            if queue.name not in pending:
                pending[queue.name] = []
                heapq.heappush(queues, HeapEntry(queue_key(queue), next(counter), queue))
            if job.is_pending():
                heapq.heappush(pending[queue.name], HeapEntry(job_key(job), next(counter), job))

        while queues:
            turn: QueueInfo = heapq.heappop(queues).item
            jobs = pending[turn.name]
            if not jobs:
                continue
            head: JobInfo = heapq.heappop(jobs).item
            if turn.is_open() and (head.min_resources is None or ssn.job_enqueueable(head)):
                ssn.job_enqueued(head)
                head.set_phase(PodGroupPhase.INQUEUE)
                ssn.result.enqueued.append(head.uid)
            heapq.heappush(queues, HeapEntry(queue_key(turn), next(counter), turn))
