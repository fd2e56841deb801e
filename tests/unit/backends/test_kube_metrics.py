"""The eviction metrics carry Volcano's names and the counts the core made."""

from __future__ import annotations

import pytest

from asyncsched.backends.kube.metrics import Metrics
from asyncsched.framework import SessionResult
from asyncsched.framework.results import Bind, PluginGauge, SessionTimings, TaskUnschedulable


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


VOLCANO_NAMES = {
    # pkg/scheduler/metrics/metrics.go of Volcano: the ones a session can tell.
    "volcano_e2e_scheduling_latency_milliseconds": "histogram",
    "volcano_open_session_duration_milliseconds": "histogram",
    "volcano_action_scheduling_latency_milliseconds": "histogram",
    "volcano_plugin_scheduling_latency_milliseconds": "histogram",
    "volcano_schedule_attempts_total": "counter",
    "volcano_unschedule_task_count": "gauge",
    "volcano_unschedule_job_count": "gauge",
    "volcano_pod_preemption_victims": "gauge",
    "volcano_total_preemption_attempts": "gauge",
    "volcano_eviction_transactions_total": "counter",
}


def _session(**extra: object) -> SessionResult:
    timings = SessionTimings(
        open_ms=3.0,
        e2e_ms=40.0,
        actions={"enqueue": 1.0, "allocate": 30.0},
        plugins={("gang", "OnSessionOpen"): 0.2, ("gang", "OnSessionClose"): 0.5},
    )
    return SessionResult(timings=timings, **extra)  # type: ignore[arg-type]


def test_volcanos_scheduler_metrics_carry_its_names_labels_and_buckets() -> None:
    metrics = Metrics()
    notes = [TaskUnschedulable(f"ns/p{i}", "ns", f"p{i}", "ns/job-a", "no room") for i in range(2)]
    notes.append(TaskUnschedulable("ns/q", "ns", "q", "ns/job-b", "no room"))
    metrics.observe_session(
        _session(binds=[Bind("ns/r", "ns", "r", "n1")], unschedulable=notes), snapshot_ms=5.0
    )
    text = metrics.exposition().decode()

    for name, kind in VOLCANO_NAMES.items():
        assert f"# TYPE {name} {kind}" in text, name
    assert "volcano_e2e_scheduling_latency_milliseconds_sum 45.0" in text
    assert "volcano_open_session_duration_milliseconds_sum 8.0" in text
    assert 'volcano_action_scheduling_latency_milliseconds_sum{action="allocate"} 30.0' in text
    assert (
        'volcano_plugin_scheduling_latency_milliseconds_sum{OnSession="OnSessionClose",'
        'plugin="gang"} 0.5'
    ) in text
    assert 'volcano_schedule_attempts_total{result="scheduled"} 1.0' in text
    assert 'volcano_schedule_attempts_total{result="unschedulable"} 3.0' in text
    assert 'volcano_unschedule_task_count{job_id="ns/job-a"} 2.0' in text
    assert "\nvolcano_unschedule_job_count 2.0\n" in text
    # Volcano's bucket range for sessions: 1 ms to 5 s in 20 steps.
    bounds = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("volcano_e2e_scheduling_latency_milliseconds_bucket")
    ]
    assert len(bounds) == 21 and bounds[-1] == "+Inf"
    assert float(bounds[0]) == 1.0 and abs(float(bounds[-2]) - 5000.0) < 1e-6

    metrics.observe_session(_session())
    text = metrics.exposition().decode()
    assert "volcano_unschedule_task_count{" not in text, "a job placed since is dropped"
    assert "\nvolcano_unschedule_job_count 0.0\n" in text


def test_volcanos_queue_metrics_come_from_the_queue_sharing_plugin() -> None:
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.framework import Registry, run_session
    from tests.builders import node, pod, podgroup, snapshot

    snap = snapshot(
        node("n1", cpu="4", gpu=2),
        podgroup("train", 2),
        pod("train-0", cpu="1", gpu=1, group="train"),
        pod("train-1", cpu="1", group="train"),
    )
    result, _ = run_session(snap, ConfigSource(Registry()).current, "s1")
    metrics = Metrics()
    metrics.observe_session(result)
    text = metrics.exposition().decode()

    assert 'volcano_queue_allocated_milli_cpu{queue_name="default"} 2000.0' in text
    gpus = (
        'volcano_queue_allocated_scalar_resources{queue_name="default",resource="nvidia.com/gpu"}'
    )
    assert f"{gpus} 1000.0" in text, "scalar resources in milli-units, as Volcano keeps them"
    assert 'volcano_queue_real_capacity_milli_cpu{queue_name="default"} 4000.0' in text
    assert 'volcano_queue_weight{queue_name="default"} 1.0' in text
    for name in ("request", "deserved", "inqueue"):
        assert f"# TYPE volcano_queue_{name}_milli_cpu gauge" in text
    assert "# TYPE volcano_queue_share gauge" in text
    assert "# TYPE volcano_queue_overused gauge" in text
