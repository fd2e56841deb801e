"""Which Job event a pod change raises, as Volcano's pod handlers classify it.

The shells see pods change (watch events, the simulator's kubelet); this turns
an old/new pair into the Request that ``reconcile`` acts on.
"""

from __future__ import annotations

from asyncsched.api.batch import Job
from asyncsched.api.core import Pod
from asyncsched.api.volcano import PodGroup
from asyncsched.controllers.job import keys
from asyncsched.controllers.job.actions import Request
from asyncsched.controllers.job.tally import TaskTally

__all__ = ["exit_code_of", "owning_job", "pod_request", "podgroup_request"]


def owning_job(pod: Pod) -> tuple[str, str] | None:
    """``(job name, job uid)`` when a batch.volcano.sh Job controls the pod."""
    for ref in pod.metadata.owner_references:
        if ref.controller and ref.kind == "Job" and ref.api_version == keys.JOB_API_VERSION:
            return ref.name, ref.uid
    return None


def pod_request(
    old: Pod | None,
    new: Pod | None,
    job: Job,
    tally: TaskTally,
    *,
    exit_code: int = 0,
) -> Request | None:
    """The Request for a pod added (``old`` None), changed, or deleted (``new`` None).

    ``tally`` sums the Job's pods after the change (TaskFailed and TaskCompleted read it);
    ``exit_code`` is the first container's exit code when the pod failed.
    None when the pod is not a Job's pod.
    """
    pod = new if new is not None else old
    if pod is None:
        return None
    owner = owning_job(pod)
    notes = pod.metadata.annotations
    if owner is None or keys.JOB_NAME not in notes or keys.TASK_SPEC not in notes:
        return None
    try:
        version = int(notes.get(keys.JOB_VERSION, ""))
    except ValueError:
        return None
    task = notes[keys.TASK_SPEC]
    event = "OutOfSync"
    code = 0
    if old is None:
        event = "PodPending"
    elif new is None:
        event = "PodEvicted"
    else:
        phase, before = new.status.phase, old.status.phase
        if phase == "Failed" and before != "Failed":
            event, code = "PodFailed", exit_code
        elif phase == "Succeeded":
            if before != "Succeeded" and _task_completed(job, task, tally):
                event = "TaskCompleted"
        elif phase in ("Running", "Pending"):
            if _task_failed(job, task, tally):
                event = "TaskFailed"
            if phase != before:
                event = "PodRunning" if phase == "Running" else "PodPending"
    if keys.OUT_OF_SYNC in notes:  # the controller is deleting it: no policy of its own
        event = "OutOfSync"
    return Request(
        event=event,
        task=task,
        pod=pod.metadata.name,
        exit_code=code,
        job_version=version,
        job_uid=owner[1],
        partition=pod.metadata.labels.get(keys.PARTITION_ID, ""),
    )


def podgroup_request(old: PodGroup | None, new: PodGroup) -> Request | None:
    """The Request for the Job owning a PodGroup whose phase changed, None otherwise.

    A move to Unknown (the scheduler found the gang broken among running pods)
    raises the Unknown event, with job version 0 as Volcano's handler leaves it: a
    Job restarted since (version above 0) only resyncs. Any other move resyncs.
    """
    if old is None or old.status.phase == new.status.phase:
        return None
    if new.status.phase == "Unknown":
        return Request(event="Unknown", job_version=0)
    return Request()


def _task_failed(job: Job, task: str, tally: TaskTally) -> bool:
    """Have the task's pending and running pods restarted their containers its maxRetry
    times in all (0 counts as 3, -1 as no limit)? Volcano's TaskFailed."""
    spec = next((t for t in job.spec.tasks if t.name == task), None)
    if spec is None or spec.replicas == 0 or spec.max_retry == -1:
        return False
    return tally.restarts(task) >= (spec.max_retry or 3)


def _task_completed(job: Job, task: str, tally: TaskTally) -> bool:
    replicas = next((t.replicas for t in job.spec.tasks if t.name == task), 0)
    return replicas > 0 and tally.succeeded(task) >= replicas


def exit_code_of(pod: Pod) -> int:
    """The first non-zero exit code among the pod's terminated containers (0 when none)."""
    for status in pod.status.container_statuses:
        terminated = status.state.terminated
        if terminated is not None and terminated.exit_code:
            return terminated.exit_code
    return 0
