"""Which Job event a pod change raises, as Volcano's pod handlers classify it.

The shells see pods change (watch events, the simulator's kubelet); this turns
an old/new pair into the Request that ``reconcile`` acts on.
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncsched.api.batch import Job
from asyncsched.api.core import Pod
from asyncsched.controllers.job import keys
from asyncsched.controllers.job.actions import Request

__all__ = ["exit_code_of", "owning_job", "pod_request"]


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
    job_pods: Iterable[Pod],
    *,
    exit_code: int = 0,
) -> Request | None:
    """The Request for a pod added (``old`` None), changed, or deleted (``new`` None).

    ``job_pods`` are the Job's pods after the change (TaskCompleted needs them);
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
        elif (
            phase == "Succeeded" and before != "Succeeded" and _task_completed(job, task, job_pods)
        ):
            event = "TaskCompleted"
        elif phase == "Running" and before != "Running":
            event = "PodRunning"
        elif phase == "Pending" and before != "Pending":
            event = "PodPending"
    return Request(
        event=event,
        task=task,
        pod=pod.metadata.name,
        exit_code=code,
        job_version=version,
        job_uid=owner[1],
    )


def _task_completed(job: Job, task: str, pods: Iterable[Pod]) -> bool:
    replicas = next((t.replicas for t in job.spec.tasks if t.name == task), 0)
    if replicas <= 0:
        return False
    done = sum(
        1
        for p in pods
        if p.metadata.annotations.get(keys.TASK_SPEC) == task and p.status.phase == "Succeeded"
    )
    return done >= replicas


def exit_code_of(pod: Pod) -> int:
    """The first non-zero exit code among the pod's terminated containers (0 when none)."""
    for status in pod.status.container_statuses:
        terminated = status.state.terminated
        if terminated is not None and terminated.exit_code:
            return terminated.exit_code
    return 0
