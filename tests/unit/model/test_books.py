"""What an admitted job reserves in its queue, less its pods behind an outside gate."""

from __future__ import annotations

from asyncsched.api.core import PodSchedulingGate
from asyncsched.model import JobInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.books import deduct_gated, reserved_for_job
from asyncsched.model.task import QUEUE_ALLOCATION_GATE
from tests.builders import pod, podgroup

GI = 1024**3


def job_with(*gates: list[str], phase: str = "Inqueue", gpu: int = 0) -> JobInfo:
    """A job asking 8 cpu / 8Gi (and ``gpu`` GPUs) at least, one pending 2-cpu pod per
    entry of ``gates`` (the gates that pod carries)."""
    minimum: dict[str, str | int | float] = {"cpu": "8", "memory": "8Gi"}
    if gpu:
        minimum["nvidia.com/gpu"] = gpu
    job = JobInfo.from_podgroup(podgroup("j", 4, phase=phase, min_resources=minimum), 0)
    for i, names in enumerate(gates):
        spec = pod(
            f"j-{i}",
            cpu="2",
            memory="1Gi",
            scheduling_gates=[PodSchedulingGate(name=n) for n in names],
        )
        job.add_task(TaskInfo.from_pod(spec, job.uid, 0))
    return job


def test_pods_behind_an_outside_gate_are_taken_off_the_reserve() -> None:
    job = job_with(["example.com/quota"], ["example.com/quota"], [])
    assert job.n_pending_gated == 2
    assert job.gated_request() == Resource({"cpu": 4000, "memory": 2 * GI})
    want = Resource({"cpu": 4000, "memory": 6 * GI})
    assert reserved_for_job(job, whole_minimum_when_inqueue=True) == want
    assert reserved_for_job(job, whole_minimum_when_inqueue=False) == want


def test_the_reserve_never_goes_below_zero_and_keeps_what_gated_pods_do_not_ask() -> None:
    job = job_with(*[["example.com/quota"]] * 5, gpu=2)  # 10 cpu gated against 8 reserved
    assert deduct_gated(job, Resource({"cpu": 8000, "memory": 8 * GI, "nvidia.com/gpu": 2})) == (
        Resource({"memory": 3 * GI, "nvidia.com/gpu": 2})
    )


def test_volcanos_own_gate_alone_leaves_the_reserve_whole() -> None:
    alone = job_with([QUEUE_ALLOCATION_GATE])
    assert alone.gated_request() == Resource()
    assert reserved_for_job(alone, True) == Resource({"cpu": 8000, "memory": 8 * GI})
    beside = job_with([QUEUE_ALLOCATION_GATE, "example.com/quota"])
    assert beside.gated_request() == Resource({"cpu": 2000, "memory": GI})


def test_a_gated_pod_no_longer_pending_counts_no_more() -> None:
    job = job_with(["example.com/quota"])
    task = next(iter(job.tasks.values()))
    job.update_task_status(task, TaskStatus.FAILED)
    assert job.n_pending_gated == 0
    assert reserved_for_job(job, True) == Resource({"cpu": 8000, "memory": 8 * GI})
    job.remove_task(task)
    assert job.n_pending_gated == 0
