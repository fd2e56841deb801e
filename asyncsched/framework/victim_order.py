"""The order in which victims give way, as Volcano's victim queue orders them.

The task that would be scheduled last goes first: across queues the queue
``victim_queue_order`` names first (by default the queue served last), within a
queue the job ordered last, within a job the task placed last. Preempt and
reclaim choose victims in this order, and the queue-share plugins weigh them in
it (what a queue gives back is counted victim by victim).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from asyncsched.framework.session import Session
from asyncsched.model import TaskInfo

__all__ = ["victim_key"]


def victim_key(ssn: Session, preemptor: TaskInfo) -> Callable[[TaskInfo], Any]:
    """A sort key putting the victims of ``preemptor`` in the order they give way.

    A task whose job has left the session goes first; ties end on the uid, so the
    order never depends on the order the victims were offered in."""
    own = ssn.jobs.get(preemptor.job)
    own_queue = ssn.queues.get(own.queue) if own is not None else None

    def compare(left: TaskInfo, right: TaskInfo) -> int:
        lj, rj = ssn.jobs.get(left.job), ssn.jobs.get(right.job)
        if lj is not rj:
            if lj is None or rj is None:
                return -1 if lj is None else 1
            lq, rq = ssn.queues.get(lj.queue), ssn.queues.get(rj.queue)
            if own_queue is not None and lq is not None and rq is not None and lq is not rq:
                if ssn.victim_queue_order(lq, rq, own_queue):
                    return -1
                if ssn.victim_queue_order(rq, lq, own_queue):
                    return 1
            if ssn.job_order(rj, lj):
                return -1
            if ssn.job_order(lj, rj):
                return 1
        if ssn.task_order(right, left):
            return -1
        if ssn.task_order(left, right):
            return 1
        return (left.uid > right.uid) - (left.uid < right.uid)

    return functools.cmp_to_key(compare)
