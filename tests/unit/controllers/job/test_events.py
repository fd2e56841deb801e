"""Which event a pod or PodGroup change raises for its Job, as Volcano's handlers say."""

from __future__ import annotations

import msgspec

from asyncsched.api import Pod, PodGroup
from asyncsched.api.core import ContainerStatus
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.controllers.job import TaskTally, pod_request, podgroup_request
from tests.unit.controllers.job.support import Cluster, job_yaml, load_job, task_yaml


def _running_pod(max_retry: str = "") -> tuple[Cluster, Pod]:
    extra = f"    maxRetry: {max_retry}" if max_retry else ""
    cluster = Cluster(load_job(job_yaml(task_yaml("worker", 2, extra))))
    cluster.enqueue()
    cluster.run_all()
    return cluster, cluster.pods["demo-worker-0"]


def _with(pod: Pod, *, phase: str = "", restarts: int = 0, init_restarts: int = 0) -> Pod:
    status = msgspec.structs.replace(
        pod.status,
        phase=phase or pod.status.phase,
        container_statuses=[ContainerStatus(name="main", restart_count=restarts)],
        init_container_statuses=[ContainerStatus(name="init", restart_count=init_restarts)],
    )
    return msgspec.structs.replace(pod, status=status)


def _event(cluster: Cluster, old: Pod | None, new: Pod | None) -> str:
    pods = {**cluster.pods}
    if new is not None:
        pods[new.metadata.name] = new
    request = pod_request(old, new, cluster.job, TaskTally.of(pods.values()))
    assert request is not None
    return request.event


def test_task_failed_once_the_tasks_restarts_reach_its_max_retry() -> None:
    cluster, pod = _running_pod()  # the task's maxRetry unset counts as 3
    assert _event(cluster, pod, _with(pod, restarts=2)) == "OutOfSync"
    assert _event(cluster, pod, _with(pod, restarts=2, init_restarts=1)) == "TaskFailed"
    pending = _with(pod, phase="Pending")
    assert _event(cluster, pending, _with(pod, restarts=3)) == "PodRunning", (
        "a phase move is the event, as in Volcano"
    )


def test_task_failed_follows_the_tasks_own_max_retry_and_minus_one_is_no_limit() -> None:
    cluster, pod = _running_pod("1")
    assert _event(cluster, pod, _with(pod, restarts=1)) == "TaskFailed"
    cluster, pod = _running_pod("-1")
    assert _event(cluster, pod, _with(pod, restarts=50)) == "OutOfSync"


def test_a_pod_marked_out_of_sync_raises_no_policy_event() -> None:
    cluster, pod = _running_pod()
    assert _event(cluster, pod, None) == "PodEvicted"
    notes = {**pod.metadata.annotations, "volcano.sh/controller-out-of-sync": "true"}
    marked = msgspec.structs.replace(
        pod, metadata=msgspec.structs.replace(pod.metadata, annotations=notes)
    )
    assert _event(cluster, pod, marked) == "OutOfSync"
    assert _event(cluster, marked, None) == "OutOfSync"
    failed = _with(marked, phase="Failed")
    assert _event(cluster, marked, failed) == "OutOfSync"


def test_a_podgroup_turning_unknown_is_the_jobs_unknown_event() -> None:
    def group(phase: str) -> PodGroup:
        return PodGroup(status=PodGroupStatus(phase=phase))

    unknown = podgroup_request(group("Running"), group("Unknown"))
    assert unknown is not None and (unknown.event, unknown.job_version) == ("Unknown", 0)
    moved = podgroup_request(group("Pending"), group("Inqueue"))
    assert moved is not None and moved.event == "OutOfSync"
    assert podgroup_request(group("Running"), group("Running")) is None
    assert podgroup_request(None, group("Unknown")) is None
