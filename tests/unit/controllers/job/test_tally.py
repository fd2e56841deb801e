"""A Job's task sums kept as pods change equal the sums Volcano takes over all its pods."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api.core import ContainerStatus, Pod, PodStatus
from asyncsched.api.meta import ObjectMeta
from asyncsched.backends.kube.controllers.store import PodStore
from asyncsched.controllers.job import TaskTally
from asyncsched.controllers.job.keys import JOB_NAME, TASK_SPEC

TASKS = ("master", "worker", "")  # "": a pod without the task annotation
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def made_pod(name: str, job: str, task: str, phase: str, restarts: int, init: int) -> Pod:
    notes = {JOB_NAME: job, **({TASK_SPEC: task} if task else {})}
    status = PodStatus(
        phase=phase,
        container_statuses=[ContainerStatus(name="main", restart_count=restarts)],
        init_container_statuses=[ContainerStatus(name="init", restart_count=init)],
    )
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", annotations=notes), status=status)


def volcano_restarts(pods: Iterable[Pod], task: str) -> int:
    """Volcano's rule, summed afresh: restarts of the task's pending and running pods."""
    return sum(
        s.restart_count
        for p in pods
        if p.metadata.annotations.get(TASK_SPEC) == task
        and p.status.phase in ("Running", "Pending")
        for s in (*p.status.init_container_statuses, *p.status.container_statuses)
    )


def volcano_succeeded(pods: Iterable[Pod], task: str) -> int:
    return sum(
        1
        for p in pods
        if p.metadata.annotations.get(TASK_SPEC) == task and p.status.phase == "Succeeded"
    )


changes = st.lists(
    st.tuples(
        st.sampled_from(("a", "b", "c", "d")),  # pod name
        st.sampled_from(("job-1", "job-2")),
        st.sampled_from(TASKS),
        st.sampled_from((*PHASES, "DELETED")),
        st.integers(0, 4),
        st.integers(0, 2),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(changes)
def test_the_kept_sums_are_the_sums_over_the_pods_held(steps: list[tuple[Any, ...]]) -> None:
    held: dict[str, Pod] = {}
    tally = TaskTally()
    store = PodStore()
    for name, job, task, phase, restarts, init in steps:
        before = held.get(name)
        if phase == "DELETED":
            held.pop(name, None)
            tally.move(before, None)
            store.delete("ns", name)
        else:
            pod = made_pod(name, job, task, phase, restarts, init)
            held[name] = pod
            tally.move(before, pod)
            store.upsert(pod)
        for t in TASKS[:2]:
            assert tally.restarts(t) == volcano_restarts(held.values(), t)
            assert tally.succeeded(t) == volcano_succeeded(held.values(), t)
            for j in ("job-1", "job-2"):
                of_job = [p for p in held.values() if p.metadata.annotations[JOB_NAME] == j]
                kept = store.tally("ns", j)
                assert kept.restarts(t) == volcano_restarts(of_job, t), (j, t)
                assert kept.succeeded(t) == volcano_succeeded(of_job, t), (j, t)
    fresh = TaskTally.of(held.values())
    for t in TASKS[:2]:
        assert fresh.restarts(t) == tally.restarts(t)
        assert fresh.succeeded(t) == tally.succeeded(t)
    if not held:
        assert not store.tallies, "a Job whose pods are all gone keeps no sums"
