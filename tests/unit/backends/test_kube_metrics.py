"""The eviction metrics carry Volcano's names and the counts the core made."""

from __future__ import annotations

import pytest

from asyncsched.backends.kube.metrics import Metrics
from asyncsched.framework import SessionResult
from asyncsched.framework.results import PluginGauge


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


def _gauge(value: float, **labels: str) -> PluginGauge:
    help_ = "Resources held for starving jobs"
    return PluginGauge("asyncsched_test_held", help_, tuple(sorted(labels.items())), value)


def test_a_plugins_gauge_is_exported_and_a_series_not_reported_again_vanishes() -> None:
    metrics = Metrics()
    metrics.observe_session(
        SessionResult(plugin_gauges=[_gauge(8, queue="ml", resource="cpu"), _gauge(2, queue="a")])
    )
    text = metrics.exposition().decode()
    assert 'asyncsched_test_held{queue="ml",resource="cpu"} 8.0' in text
    assert "# HELP asyncsched_test_held Resources held for starving jobs" in text

    metrics.observe_session(SessionResult(plugin_gauges=[_gauge(4, queue="ml", resource="cpu")]))
    text = metrics.exposition().decode()
    assert 'asyncsched_test_held{queue="ml",resource="cpu"} 4.0' in text

    metrics.observe_session(SessionResult())
    assert "asyncsched_test_held{" not in metrics.exposition().decode()


def test_a_gauge_whose_name_is_taken_is_refused_once_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    taken = PluginGauge("asyncsched_pending_pods", "mine", (), 1.0)
    for _ in range(2):
        metrics.observe_session(SessionResult(plugin_gauges=[taken]))
    warnings = [r.message for r in caplog.records if "not exported" in r.message]
    assert len(warnings) == 1 and "asyncsched_pending_pods" in warnings[0]
    assert "\nasyncsched_pending_pods 0.0\n" in metrics.exposition().decode()
