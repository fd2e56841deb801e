"""priority: higher-priority tasks and jobs go first and may preempt lower-priority ones.

Job priority comes from the PodGroup's priorityClassName, task priority from
the pod's; both are resolved when the snapshot is taken.
"""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import (
    JOB_ORDER,
    JOB_STARVING,
    PREEMPTABLE,
    TASK_ORDER,
    JobOrderFn,
    TaskOrderFn,
)
from asyncsched.framework.orderkeys import KeyOrder
from asyncsched.model import JobInfo, TaskInfo

__all__ = ["PriorityPlugin"]


def _task_key(task: TaskInfo) -> int:
    return -task.priority  # higher first


def _job_key(job: JobInfo) -> int:
    return -job.priority  # higher first


class PriorityPlugin:
    """Orders by priority; victims are only ever of strictly lower priority."""

    name: ClassVar[str] = "priority"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        task_order: TaskOrderFn = KeyOrder(_task_key, fixed=True)  # the pod's priority
        job_order: JobOrderFn = KeyOrder(_job_key)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
            # Between jobs the job priority decides; inside one job, the task priority.
            own = ssn.jobs.get(preemptor.job)
            if own is None:
                return []
            victims = []
            for task in preemptees:
                other = ssn.jobs.get(task.job)
                if other is None:
                    continue
                if other.uid != own.uid:
                    if other.priority < own.priority:
                        victims.append(task)
                elif task.priority < preemptor.priority:
                    victims.append(task)
            return victims

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add(TASK_ORDER, self.name, task_order)
        ssn.add(JOB_ORDER, self.name, job_order)
        ssn.add(PREEMPTABLE, self.name, preemptable)
        ssn.add(JOB_STARVING, self.name, starving)

    def on_session_close(self, ssn: Session) -> None:
        pass
