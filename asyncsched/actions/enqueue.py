"""Enqueue: admit Pending PodGroups to Inqueue, so allocate considers them.

Admission is what keeps a flood of jobs from fragmenting the cluster: a job
whose PodGroup declares minResources only moves on when the plugins agree
(``job_enqueueable``: proportion, capacity, overcommit...) that the room for
its whole gang is there. A job without minResources is admitted at once.

As Volcano does, queues take turns: one job from the queue first in queue
order, then that queue goes back into the ordering, so every queue's head
job is considered before a queue's second job. Volcano does not consult
``overused`` here; the plugins' enqueueable votes carry the queue limits.
A ``fifo`` queue (``spec.dequeueStrategy``) admits no job behind one it could
not admit, unless a plugin holds room for that one (``job_reserved``).
Unlike Volcano, a queue that is not Open admits nothing (Volcano leaves that
to the proportion and capacity votes, which a job without minResources never
reaches, so its PodGroup would turn Inqueue in a closed queue).
"""

from __future__ import annotations

from typing import ClassVar

from asyncsched.actions.walk import Walk
from asyncsched.framework import Arguments, Session
from asyncsched.model import PodGroupPhase

__all__ = ["EnqueueAction"]


class EnqueueAction:
    name: ClassVar[str] = "enqueue"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        walk = Walk(ssn)
        for job in ssn.active_jobs.values():
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            walk.add_queue(queue)
            if job.is_pending():
                walk.push_job(job)

        while walk:
            turn = walk.pop_queue()
            head = walk.pop_job(turn)
            if head is None:
                continue
            if turn.is_open() and (head.min_resources is None or ssn.job_enqueueable(head)):
                ssn.job_enqueued(head)
                head.set_phase(PodGroupPhase.INQUEUE)
                ssn.result.enqueued.append(head.uid)
            elif turn.is_fifo() and not ssn.job_reserved(head):
                ssn.queued_behind.hold([j.uid for j in walk.waiting_jobs(turn)], head.shown_name())
                continue
            walk.push_queue(turn)
