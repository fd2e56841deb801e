"""Many requests for one Job handled in one reconcile decide what handling each in turn does.

``reconcile`` walks the Job's pods once for a run of plain syncs, and once for a run of
whole-Job kills in a finished phase (each of which bumps the status's version, as
Volcano's does). Generated Jobs in every phase a Job reaches, with pods in mixed phases,
take generated runs of pod events and Commands; the Decision must equal the one from
walking the pods for every request.
"""

from __future__ import annotations

import importlib
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api.core import Pod
from asyncsched.controllers.job import Request
from asyncsched.controllers.job.keys import OUT_OF_SYNC
from tests.unit.controllers.job.support import Cluster, command, job_yaml, load_job, task_yaml

reconcile_module = importlib.import_module("asyncsched.controllers.job.reconcile")

POLICIES = (
    "",
    "  policies:\n  - event: PodEvicted\n    action: RestartJob\n",
    "  policies:\n  - event: PodFailed\n    action: AbortJob\n",
    "  policies:\n  - event: TaskCompleted\n    action: CompleteJob\n",
    "  policies:\n  - event: PodFailed\n    action: TerminateJob\n",
)
EVENTS = (
    "PodRunning", "PodPending", "OutOfSync", "PodFailed", "PodEvicted", "TaskCompleted", "Unknown",
)  # fmt: skip


@st.composite
def jobs_and_requests(draw: st.DrawFn) -> tuple[Cluster, list[Request], list[Any]]:
    extra = draw(st.sampled_from(POLICIES)) + draw(st.sampled_from(("", "  maxRetry: 2\n")))
    cluster = Cluster(load_job(job_yaml(task_yaml("worker", draw(st.integers(1, 4))), extra)))
    cluster.enqueue()
    for name in sorted(cluster.pods):
        phase = draw(st.sampled_from(("Pending", "Running", "Running", "Succeeded", "Failed")))
        if phase != "Pending" and name in cluster.pods:  # an earlier policy may have killed it
            cluster.set_phase(name, phase)
    names = sorted(cluster.pods) or ["demo-worker-0"]
    marked = draw(st.sampled_from(["", *sorted(cluster.pods)]))
    if marked:  # deleted by the controller a moment ago: marked, the deletion not yet seen
        pod = cluster.pods[marked]
        notes = {**pod.metadata.annotations, OUT_OF_SYNC: "true"}
        meta = msgspec.structs.replace(pod.metadata, annotations=notes)
        cluster.pods[marked] = msgspec.structs.replace(pod, metadata=meta)
    requests = [
        Request(
            event=draw(st.sampled_from(EVENTS)), task="worker", pod=draw(st.sampled_from(names))
        )
        for _ in range(draw(st.integers(0, 12)))
    ]
    commands = []
    if draw(st.integers(0, 5)) == 0:
        commands.append(command(cluster.job, draw(st.sampled_from(("AbortJob", "ResumeJob")))))
    return cluster, requests, commands


@settings(max_examples=300, deadline=None)
@given(jobs_and_requests())
def test_a_run_of_requests_decides_as_walking_the_pods_for_each(
    drawn: tuple[Cluster, list[Request], list[Any]],
) -> None:
    cluster, requests, commands = drawn
    batched = cluster.decide(requests, commands)
    handle = reconcile_module._handle
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reconcile_module, "_handle", lambda work, request, _: handle(work, request))
        walked = cluster.decide(requests, commands)
    assert msgspec.to_builtins(batched.status) == msgspec.to_builtins(walked.status)
    assert batched == walked


def _finished(phase_after: str) -> Cluster:
    cluster = Cluster(load_job(job_yaml(task_yaml("worker", 3))))
    cluster.enqueue()
    cluster.run_all()
    for name in sorted(cluster.pods):
        cluster.set_phase(name, phase_after)
    return cluster


def test_each_late_pod_event_of_a_finished_job_bumps_its_version_once() -> None:
    """Volcano kills a finished Job again at every request, bumping the version each time;
    handled in one reconcile, forty requests bump it forty times."""
    cluster = _finished("Succeeded")
    assert cluster.phase == "Completed"
    version = cluster.job.status.version
    pod: Pod = cluster.pods["demo-worker-0"]
    late = [Request(event="PodRunning", task="worker", pod=pod.metadata.name)] * 40
    decision = cluster.decide(late)
    assert decision.status.version == version + 40
    assert decision.status.state.phase == "Completed"


def test_a_sync_that_moved_the_phase_is_followed_by_another() -> None:
    """Two plain syncs in one batch: the first moves a Pending Job whose pods all succeeded
    to Running, the second (reading the Running phase) to Completed, as Volcano's two
    syncs would. The second reads another status, so it is not skipped."""
    cluster = _finished("Succeeded")
    state = msgspec.structs.replace(cluster.job.status.state, phase="Pending")
    cluster.job = msgspec.structs.replace(
        cluster.job, status=msgspec.structs.replace(cluster.job.status, state=state)
    )
    one = cluster.decide([Request(event="PodRunning", task="worker", pod="demo-worker-0")])
    assert one.status.state.phase == "Running"
    two = cluster.decide([Request(event="PodRunning", task="worker", pod="demo-worker-0")] * 2)
    assert two.status.state.phase == "Completed"
