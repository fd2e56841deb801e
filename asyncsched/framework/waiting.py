"""Why pods and jobs wait: what one session found out, each part written by one module.

The pending reasons users and autoscalers read (PodScheduled=False messages,
the PodGroup's Unschedulable condition, the simulator's waiting reasons) are
assembled from these at the end of the session. Each part names the only
module that writes it; everything else reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from asyncsched.api import Condition
from asyncsched.framework.results import FitErrors

__all__ = [
    "FitFailures",
    "GangAttempt",
    "JobNotices",
    "LastPlacements",
    "PodGroupConditions",
    "QueuedBehind",
    "UndoneGangs",
    "WithheldVictims",
]

T = TypeVar("T")


class _ByUid(Generic[T]):
    """Values kept by the uid of the task or job they are about."""

    __slots__ = ("by_uid",)

    def __init__(self) -> None:
        self.by_uid: dict[str, T] = {}

    def record(self, uid: str, value: T) -> None:
        self.by_uid[uid] = value

    def get(self, uid: str) -> T | None:
        return self.by_uid.get(uid)


class FitFailures(_ByUid[FitErrors]):
    """Why each task tried this session fits no node, by task uid.

    Written only by ``asyncsched.actions.placement`` (``find_node``, and
    ``share_failure`` for a task whose role already failed). Read by allocate
    (a gang's first reason), the gang plugin's pending message, ``explain`` and
    the session's job report (each pod's PodScheduled message).
    """

    __slots__ = ()


@dataclass
class GangAttempt:
    """How far allocate got with a job it had to give back: for the pending reason."""

    fitted: int
    needed: int
    fit_errors: FitErrors | None
    where: str = ""
    """Where the gang was tried, when not the whole cluster (network topology)."""


class UndoneGangs(_ByUid[GangAttempt]):
    """The jobs allocate placed in part and then gave back, by job uid.

    Written only by ``asyncsched.actions.allocate``. Read by the gang plugin's
    pending message ("3/8 tasks in gang fit: ...").
    """

    __slots__ = ()


class LastPlacements(_ByUid[str]):
    """The node each task was last allocated to this session by an allocate then undone (a
    gang given back, a trial dropped), by task uid: Volcano's ``LastTransaction`` when it
    is an allocate.

    Written only by ``asyncsched.framework.statement`` when it undoes an allocate. Read by
    the session's job report: a pod that fitted in free room in a gang given back is told
    that it fits and waits for its gang (PodScheduled reason ``Schedulable``, as Volcano
    gives it). A pipeline undone (room that evictions or releasing pods would
    have made) is not kept: such a pod is told why it did not fit, with any victims kept
    back, rather than a node it cannot have now.
    """

    __slots__ = ()


class QueuedBehind(_ByUid[str]):
    """Jobs of a ``fifo`` queue that were not tried because a job ahead of them could not
    be placed (or admitted): job uid -> that job's ``namespace/name``.

    Written only by the actions that walk queues in order (allocate, enqueue). Read by
    the gang plugin's pending message, so a job held back says by which job.
    """

    __slots__ = ()

    def hold(self, jobs: list[str], head: str) -> None:
        for uid in jobs:
            self.by_uid.setdefault(uid, head)

    def reason(self, job_uid: str, queue: str) -> str:
        """Why the job was not tried, '' when it was not held back."""
        head = self.by_uid.get(job_uid)
        return f"queue {queue!r} is fifo: waiting behind job {head}" if head else ""


class JobNotices(_ByUid[list[Condition]]):
    """Conditions plugins post on a job's PodGroup beside the gang's, by job uid.

    An extension point for any plugin with something to tell the job's owner (a
    reservation held for it, a limit it is waiting on): ``post`` a condition whose type
    is the plugin's own (not ``Scheduled`` or ``Unschedulable``) in every session it
    holds. The session's job report writes it to the PodGroup; one of those types
    that was True and is no longer posted turns False there, so a notice ends without
    the plugin having to remember it.
    """

    __slots__ = ()

    def post(self, job_uid: str, condition: Condition) -> None:
        self.by_uid.setdefault(job_uid, []).append(condition)


class PodGroupConditions(_ByUid[Condition]):
    """The PodGroup condition each job should carry after the session, by job uid.

    Written only by ``asyncsched.plugins.gang`` when the session closes
    (Scheduled, or Unschedulable with the gang's reason). Read by the session's
    job report (``asyncsched.framework.cycle``): the PodGroup status, and the
    message of pods that have no fit error of their own.
    """

    __slots__ = ()


class WithheldVictims(_ByUid[dict[str, None]]):
    """Why pods were kept from a waiting task's victims, by the waiting task's uid.

    Written by plugins that answer ``preemptable`` or ``reclaimable`` and keep a pod
    back for a reason the user can act on (``asyncsched.plugins.pdb``: the budget that
    allows no more disruptions), through ``note``. Read by the session's job report,
    which adds them to the waiting pod's message after ``preemption:``, so that a pod
    waiting behind a PodDisruptionBudget says so rather than only "Insufficient cpu".
    """

    __slots__ = ()

    def note(self, uid: str, why: str) -> None:
        self.by_uid.setdefault(uid, {})[why] = None
