"""Pending pods counted by reason for the dashboards: the reasons of their message,
without counts or details, so the label stays bounded."""

from __future__ import annotations

from asyncsched.backends.kube.metrics import Metrics
from asyncsched.framework import SessionResult
from asyncsched.framework.cycle import PIPELINED_MESSAGE
from asyncsched.framework.results import TaskUnschedulable


def test_pending_pods_are_counted_by_reason_without_counts_or_details() -> None:
    from asyncsched.backends.kube.pending_reasons import reasons

    taint = (
        "0/6 nodes are unavailable: 2 Insufficient nvidia.com/gpu, 4 node(s) had untolerated "
        "taint {gpu: true}."
    )
    assert reasons(taint) == ["Insufficient nvidia.com/gpu", "node(s) had untolerated taint"]
    assert reasons("0/3 nodes are unavailable") == ["no nodes"]
    # what versions before Volcano's wording wrote, still read
    assert reasons("0/3 nodes are available: 3 Insufficient cpu.") == ["Insufficient cpu"]
    assert reasons("0/3 nodes are unavailable: 3 Insufficient cpu. preemption: none") == [
        "Insufficient cpu"
    ]
    assert reasons("3/4 tasks in gang fit: 0/6 nodes are unavailable: 6 Insufficient cpu.") == [
        "gang"
    ]
    assert reasons("waiting to be admitted to queue 'ml'") == ["queue"]
    # a member that fitted in a gang given back waits for its gang
    assert reasons("fits a node; waits for its gang (minAvailable 3)") == ["gang"]
    assert reasons(PIPELINED_MESSAGE) == ["releasing"]

    metrics = Metrics()
    notes = [
        TaskUnschedulable("ns/a", "ns", "a", "ns/j", taint),
        TaskUnschedulable(
            "ns/b", "ns", "b", "ns/j", "0/6 nodes are unavailable: 6 Insufficient cpu."
        ),
    ]
    metrics.observe_session(SessionResult(unschedulable=notes))
    text = metrics.exposition().decode()
    assert 'asyncsched_unschedulable_tasks{reason="Insufficient nvidia.com/gpu"} 1.0' in text
    assert 'asyncsched_unschedulable_tasks{reason="Insufficient cpu"} 1.0' in text
    metrics.observe_session(SessionResult(unschedulable=notes[1:]))
    text = metrics.exposition().decode()
    assert "Insufficient nvidia.com/gpu" not in text, "a reason no pod has any more vanishes"
