"""The eviction metrics carry Volcano's names and the counts the core made."""

from __future__ import annotations

from asyncsched.backends.kube.metrics import Metrics
from asyncsched.framework import SessionResult


def test_volcanos_eviction_metrics_follow_the_session_results() -> None:
    metrics = Metrics()
    metrics.observe_session(
        SessionResult(
            preemption_victims=3,
            preemption_attempts=2,
            eviction_transactions={"preempt": 1, "reclaim": 2},
        )
    )
    metrics.observe_session(SessionResult(preemption_attempts=1))
    text = metrics.exposition().decode()

    assert "\nvolcano_pod_preemption_victims 3.0\n" in text
    assert "\nvolcano_total_preemption_attempts 3.0\n" in text
    assert 'volcano_eviction_transactions_total{action="preempt"} 1.0' in text
    assert 'volcano_eviction_transactions_total{action="reclaim"} 2.0' in text
