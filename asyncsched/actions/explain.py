"""Why a pending pod waits, asked of the same plugins and placement the actions use.

``waiting_reason`` opens no new logic: it walks the checks allocate makes, in
its order (admitted by enqueue, job valid, queue not overused, a node that
fits, the queue allowing it), on a session where nothing else happened, and
says which one stops the pod. The simulator names stuck pods with it; it is
also the seed of ``asyncsched explain``.
"""

from __future__ import annotations

from asyncsched.actions.placement import find_node
from asyncsched.framework import Session
from asyncsched.framework.reasons import resources_text
from asyncsched.model import JobInfo, TaskInfo

__all__ = ["job_waiting_reason", "waiting_reason"]


def job_waiting_reason(ssn: Session, job: JobInfo) -> str:
    """Why the job as a whole is held back (not admitted, not valid, its queue...); '' when
    nothing at the job's level stops it."""
    queue = ssn.queue_of(job)
    if queue is None:
        return f"its queue {job.queue!r} does not exist"
    if job.is_pending() and "enqueue" in ssn.configuration.actions:
        if not queue.is_open():
            return f"queue {queue.name} is not open, so its PodGroup is not admitted"
        if job.min_resources is not None and not ssn.job_enqueueable(job):
            return (
                f"its PodGroup is not admitted: queue {queue.name} has no room for its "
                f"minResources {resources_text(job.min_resources)}"
            )
    verdict = ssn.job_valid(job)
    if verdict is not None and not verdict.passed:
        return verdict.message or verdict.reason
    if ssn.overused(queue):
        return f"queue {queue.name} is overused: it holds all it deserves while others wait"
    return ""


def waiting_reason(ssn: Session, task: TaskInfo) -> str:
    """One line: the first thing that keeps ``task`` from being placed now."""
    job = ssn.jobs.get(task.job)
    if job is None:
        return "it belongs to no job the scheduler can see (no PodGroup yet)"
    held = job_waiting_reason(ssn, job)
    if held:
        return held
    queue = ssn.queue_of(job)
    placement = find_node(ssn, task)
    if placement is None:
        errors = ssn.fit_failures.get(task.uid)
        return errors.message() if errors is not None else "it fits no node"
    if queue is not None and not ssn.allocatable(queue, task):
        return f"queue {queue.name} may not take it: it would go beyond what the queue deserves"
    if job.min_available > 1:
        return (
            f"it fits node {placement.node.name} alone, but its gang of {job.min_available} "
            "does not fit at once"
        )
    return f"it fits node {placement.node.name} now"
