"""Why pods and jobs wait: what one session found out, each part written by one module.

The pending reasons users and autoscalers read (PodScheduled=False messages,
the PodGroup's Unschedulable condition, the simulator's waiting reasons) are
assembled from these at the end of the session. Each part names the only
module that writes it; everything else reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.api import Condition
from asyncsched.framework.results import FitErrors

__all__ = ["FitFailures", "GangAttempt", "PodGroupConditions", "UndoneGangs"]


@dataclass
class FitFailures:
    """Why each task tried this session fits no node, by task uid.

    Written only by ``asyncsched.actions.placement`` (``find_node``, and
    ``share_failure`` for a task whose role already failed). Read by allocate
    (a gang's first reason), the gang plugin's pending message, ``explain`` and
    the session's job report (each pod's PodScheduled message).
    """

    by_task: dict[str, FitErrors] = field(default_factory=dict)

    def record(self, task_uid: str, errors: FitErrors) -> None:
        self.by_task[task_uid] = errors

    def get(self, task_uid: str) -> FitErrors | None:
        return self.by_task.get(task_uid)


@dataclass
class GangAttempt:
    """How far allocate got with a job it had to give back: for the pending reason."""

    fitted: int
    needed: int
    fit_errors: FitErrors | None


@dataclass
class UndoneGangs:
    """The jobs allocate placed in part and then gave back, by job uid.

    Written only by ``asyncsched.actions.allocate``. Read by the gang plugin's
    pending message ("3/8 tasks in gang fit: ...").
    """

    by_job: dict[str, GangAttempt] = field(default_factory=dict)

    def record(self, job_uid: str, attempt: GangAttempt) -> None:
        self.by_job[job_uid] = attempt

    def get(self, job_uid: str) -> GangAttempt | None:
        return self.by_job.get(job_uid)


@dataclass
class PodGroupConditions:
    """The PodGroup condition each job should carry after the session, by job uid.

    Written only by ``asyncsched.plugins.gang`` when the session closes
    (Scheduled, or Unschedulable with the gang's reason). Read by the session's
    job report (``asyncsched.framework.cycle``): the PodGroup status, and the
    message of pods that have no fit error of their own.
    """

    by_job: dict[str, Condition] = field(default_factory=dict)

    def record(self, job_uid: str, condition: Condition) -> None:
        self.by_job[job_uid] = condition

    def get(self, job_uid: str) -> Condition | None:
        return self.by_job.get(job_uid)
