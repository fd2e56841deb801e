"""Volcano's Job state machine: for a phase and an action, what to kill or sync and the next phase.

Each entry says whether to sync the Job (create missing pods, count them) or
kill pods (all, or one task's or one pod's), and how the counted status moves
the phase. The effects themselves live in ``reconcile``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from asyncsched.api.batch import Job, JobStatus

__all__ = [
    "FINISHED",
    "RETAIN_NONE",
    "RETAIN_SOFT",
    "Step",
    "UpdateFn",
    "step_for",
    "total_replicas",
]

UpdateFn = Callable[[JobStatus], bool]
"""Moves the phase given freshly counted pods; True when the phase changed."""

RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT = frozenset({"Succeeded", "Failed"})
FINISHED = frozenset({"Completed", "Failed", "Terminated"})
_RESTART_TARGETS = frozenset({"RestartTask", "RestartPod", "RestartPartition"})


@dataclass(frozen=True)
class Step:
    kind: str
    """``sync``, ``kill`` (whole job) or ``kill_target`` (a task's or a pod's pods)."""
    update: UpdateFn | None = None
    retain: frozenset[str] = RETAIN_SOFT


def total_replicas(job: Job) -> int:
    return sum(t.replicas for t in job.spec.tasks)


def _to(phase: str, *, retry: bool = False) -> UpdateFn:
    def update(status: JobStatus) -> bool:
        status.state.phase = phase
        if retry:
            status.retry_count += 1
        return True

    return update


def _alive_then(phase: str) -> UpdateFn:
    def update(status: JobStatus) -> bool:
        if status.terminating or status.pending or status.running:
            return False
        status.state.phase = phase
        return True

    return update


def _pending_sync(job: Job) -> UpdateFn:
    def update(status: JobStatus) -> bool:
        if job.spec.min_available <= status.running + status.succeeded + status.failed:
            status.state.phase = "Running"
            return True
        return False

    return update


def _running_sync(job: Job) -> UpdateFn:
    def update(status: JobStatus) -> bool:
        replicas = total_replicas(job)
        if replicas == 0:
            return False
        min_success = job.spec.min_success
        if min_success is not None and status.succeeded >= min_success:
            status.state.phase = "Completed"
            return True
        if status.succeeded + status.failed == replicas:
            total_min = sum(
                t.min_available if t.min_available is not None else t.replicas
                for t in job.spec.tasks
            )
            if job.spec.min_available >= total_min:
                for task in job.spec.tasks:
                    if task.min_available is None:
                        continue
                    counted = status.task_status_count.get(task.name)
                    if (
                        counted is not None
                        and counted.phase.get("Succeeded", 0) < task.min_available
                    ):
                        status.state.phase = "Failed"
                        return True
            if min_success is not None and status.succeeded < min_success:
                status.state.phase = "Failed"
            elif status.succeeded >= job.spec.min_available:
                status.state.phase = "Completed"
            else:
                status.state.phase = "Failed"
            return True
        if status.pending > replicas - job.spec.min_available:
            status.state.phase = "Pending"
            return True
        return False

    return update


def _restarting(job: Job) -> UpdateFn:
    def update(status: JobStatus) -> bool:
        if status.retry_count >= job.spec.max_retry:
            status.state.phase = "Failed"
            return True
        if total_replicas(job) - status.terminating >= status.min_available:
            status.state.phase = "Pending"
            return True
        return False

    return update


def step_for(job: Job, action: str) -> Step:
    """What ``action`` does to ``job`` in its current phase (Volcano's state/*.go)."""
    phase = job.status.state.phase or "Pending"
    if phase in ("Pending", "Running"):
        if action == "RestartJob":
            return Step("kill", _to("Restarting", retry=True), RETAIN_NONE)
        if action in _RESTART_TARGETS:
            return Step("kill_target", _to("Restarting", retry=True))
        if action == "AbortJob":
            return Step("kill", _to("Aborting"))
        if action == "CompleteJob":
            return Step("kill", _to("Completing"))
        if action == "TerminateJob":
            return Step("kill", _to("Terminating"))
        return Step("sync", _pending_sync(job) if phase == "Pending" else _running_sync(job))
    if phase == "Restarting":
        if action == "SyncJob":
            return Step("sync", _restarting(job))
        if action in _RESTART_TARGETS:
            return Step("kill_target", _restarting(job))
        return Step("kill", _restarting(job), RETAIN_NONE)
    if phase == "Completing":
        return Step("kill", _alive_then("Completed"))
    if phase == "Terminating":
        return Step("kill", _alive_then("Terminated"))
    if phase in ("Aborting", "Aborted"):
        if action == "ResumeJob":
            return Step("kill", _to("Restarting", retry=True))
        return Step("kill", _alive_then("Aborted") if phase == "Aborting" else None)
    return Step("kill", None)
