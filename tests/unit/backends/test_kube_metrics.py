"""The eviction metrics carry Volcano's names and the counts the core made."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

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


def test_a_series_reported_again_unchanged_or_after_vanishing_shows_its_value() -> None:
    metrics = Metrics()
    ml, a = _gauge(8, queue="ml"), _gauge(2, queue="a")
    for reported in ([ml, a], [ml, a], [ml], [ml, a], [ml, _gauge(3, queue="a"), a]):
        metrics.observe_session(SessionResult(plugin_gauges=reported))
    text = metrics.exposition().decode()
    assert 'asyncsched_test_held{queue="ml"} 8.0' in text
    assert 'asyncsched_test_held{queue="a"} 2.0' in text  # the last one reported wins


def test_a_figure_reported_again_as_the_same_object_keeps_its_series_right() -> None:
    """A plugin may report last session's figure object again (``Session.report_again``);
    the series shows the value of the last figure reported for it in each session."""
    metrics = Metrics()
    a, a3, ml = _gauge(2, queue="a"), _gauge(3, queue="a"), _gauge(8, queue="ml")
    for reported in ([a, ml], [a, ml], [a, a3], [a], [ml], [a]):
        metrics.observe_session(SessionResult(plugin_gauges=reported))
        text = metrics.exposition().decode()
        value = reported[-1].value if reported[-1].labels == a.labels else 2.0
        shown = f'asyncsched_test_held{{queue="a"}} {value}' in text
        assert shown == (a in reported), reported
        assert (ml in reported) == ('asyncsched_test_held{queue="ml"} 8.0' in text)


def test_gauges_are_set_when_read_from_the_last_session_and_a_new_one_is_made_at_once() -> None:
    """Sessions between two scrapes need not set the plugins' gauges: a scrape shows the
    last session's figures, as if every session had set them; a new gauge appears at once."""
    metrics = Metrics()
    metrics.observe_session(
        SessionResult(plugin_gauges=[_gauge(8, queue="ml"), _gauge(2, queue="a")])
    )
    made = generate_latest(metrics.registry).decode()
    assert "# HELP asyncsched_test_held" in made and 'queue="ml"} 8.0' in made
    for reported in ([_gauge(5, queue="ml")], [_gauge(6, queue="ml"), _gauge(1, queue="b")]):
        metrics.observe_session(SessionResult(plugin_gauges=reported))
    assert 'queue="ml"} 8.0' in generate_latest(metrics.registry).decode()  # set when read
    text = metrics.exposition().decode()
    assert 'asyncsched_test_held{queue="ml"} 6.0' in text
    assert 'asyncsched_test_held{queue="b"} 1.0' in text
    assert 'queue="a"' not in text


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
    from tests.builders import node, pod, podgroup, queue, snapshot

    snap = snapshot(
        node("n1", cpu="4", gpu=2),
        queue("default", capability={"cpu": "8", "memory": "8Gi", "nvidia.com/gpu": 2}),
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


CAPACITY_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: capacity
"""


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_a_capability_of_zero_gpus_is_reported_as_zero_not_left_out(plugin: str) -> None:
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.framework import Registry, load_configuration, run_session
    from tests.builders import node, pod, podgroup, queue, snapshot

    snap = snapshot(
        node("n1", cpu="4", gpu=2),
        queue("default", capability={"cpu": "8", "nvidia.com/gpu": "0"}),
        podgroup("train", 1),
        pod("train-0", cpu="1", gpu=1, group="train"),
    )
    loaded = ConfigSource(Registry()).current
    if plugin == "capacity":
        loaded = load_configuration(CAPACITY_CONF, Registry(), "capacity.yaml")
    result, _ = run_session(snap, loaded, "s1")
    metrics = Metrics()
    metrics.observe_session(result)
    text = metrics.exposition().decode()

    assert not result.binds, "a queue given 0 GPUs runs no GPU pod"
    gpus = 'volcano_queue_capacity_scalar_resources{queue_name="default",resource="nvidia.com/gpu"}'
    assert f"{gpus} 0.0" in text, "a bound of 0 is a bound, and is shown"
    assert 'volcano_queue_capacity_milli_cpu{queue_name="default"} 8000.0' in text
    assert "volcano_queue_capacity_memory_bytes{" not in text, "memory is not bounded"


# Every metric of pkg/scheduler/metrics in Volcano (metrics.go, queue.go, job.go,
# namespace.go), as exposed. The namespace_* gauges are registered there and never set by
# any of Volcano's code, so neither Volcano nor asyncsched exports a series for them.
VOLCANO_ALL = {
    "volcano_action_scheduling_latency_milliseconds": ("histogram", {"action"}),
    "volcano_e2e_job_scheduling_duration": ("gauge", {"job_name", "queue", "job_namespace"}),
    "volcano_e2e_job_scheduling_last_time": ("gauge", {"job_name", "queue", "job_namespace"}),
    "volcano_e2e_job_scheduling_latency_milliseconds": ("histogram", set()),
    "volcano_e2e_job_scheduling_start_time": ("gauge", {"job_name", "queue", "job_namespace"}),
    "volcano_e2e_scheduling_latency_milliseconds": ("histogram", set()),
    "volcano_eviction_transactions_total": ("counter", {"action"}),
    "volcano_job_retry_counts": ("gauge", {"job_id"}),
    "volcano_job_share": ("gauge", {"job_ns", "job_id"}),
    "volcano_open_session_duration_milliseconds": ("histogram", set()),
    "volcano_plugin_scheduling_latency_milliseconds": ("histogram", {"plugin", "OnSession"}),
    "volcano_pod_preemption_victims": ("gauge", set()),
    "volcano_schedule_attempts_total": ("counter", {"result"}),
    "volcano_scheduling_stage_duration_milliseconds": ("histogram", {"stage"}),
    "volcano_task_scheduling_latency_milliseconds": ("histogram", {"stage"}),
    "volcano_total_preemption_attempts": ("gauge", set()),
    "volcano_unschedule_job_count": ("gauge", set()),
    "volcano_unschedule_task_count": ("gauge", {"job_id"}),
    "volcano_queue_share": ("gauge", {"queue_name"}),
    "volcano_queue_weight": ("gauge", {"queue_name"}),
    "volcano_queue_overused": ("gauge", {"queue_name"}),
}
for _kind in ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue"):
    VOLCANO_ALL[f"volcano_queue_{_kind}_milli_cpu"] = ("gauge", {"queue_name"})
    VOLCANO_ALL[f"volcano_queue_{_kind}_memory_bytes"] = ("gauge", {"queue_name"})
    VOLCANO_ALL[f"volcano_queue_{_kind}_scalar_resources"] = ("gauge", {"queue_name", "resource"})


def _series_labels(text: str, name: str) -> set[str]:
    """Label names of the first sample of ``name`` (or of its buckets, for histograms)."""
    for line in text.splitlines():
        head = line.split(" ")[0]
        base = head.split("{")[0]
        if base in (name, f"{name}_bucket"):
            if "{" not in head:
                return set()
            pairs = head.split("{", 1)[1].rstrip("}").split('",')
            return {pair.split("=")[0] for pair in pairs} - {"le"}
    raise AssertionError(f"no series of {name}")


def test_every_volcano_scheduler_metric_is_exported_with_its_labels() -> None:
    """A run that places a gang, leaves a pod out, binds and reports: every metric Volcano's
    dashboards can chart has a series, under Volcano's type and label names."""
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.framework import Registry, run_session
    from tests.builders import node, pod, podgroup, queue, snapshot

    snap = snapshot(
        node("n1", cpu="4", gpu=2),
        queue("default", capability={"cpu": "8", "memory": "8Gi", "nvidia.com/gpu": 2}),
        podgroup("train", 2),
        pod("train-0", cpu="1", gpu=1, group="train"),
        pod("train-1", cpu="1", group="train"),
        pod("huge", cpu="64"),
        podgroup("waits", 1, min_resources={"cpu": "1", "nvidia.com/gpu": 2}),
        pod("waits-0", cpu="1", gpu=2, group="waits"),
    )
    result, _ = run_session(snap, ConfigSource(Registry()).current, "s1", lambda: 0.0)
    metrics = Metrics()
    metrics.observe_session(result, snapshot_ms=1.0)
    job = next(j for j in snap.jobs.values() if j.name == "train")
    placed = [job for _ in result.binds]
    metrics.volcano.jobs_placed(placed, now=job.creation + 2.5)
    metrics.volcano.task_bound(created=job.creation, now=job.creation + 3.0, bind_ms=4.0)
    metrics.preemption_victims.set(0)
    metrics.eviction_transactions.labels("preempt").inc(0)
    text = metrics.exposition().decode()

    for name, (kind, labels) in VOLCANO_ALL.items():
        assert f"# TYPE {name} {kind}" in text, name
        assert _series_labels(text, name) == labels, name
    assert len(result.binds) == 2
    assert (
        'volcano_e2e_job_scheduling_duration{job_name="train",job_namespace="default",'
        'queue="default"} 2500.0'
    ) in text
    assert "volcano_e2e_job_scheduling_latency_milliseconds_count 2.0" in text
    assert 'volcano_task_scheduling_latency_milliseconds_sum{stage="Bound"} 3000.0' in text
    assert 'volcano_scheduling_stage_duration_milliseconds_sum{stage="Bind"} 4.0' in text
    assert 'volcano_job_share{job_id="train",job_ns="default"} 0.5' in text, "1 of 2 GPUs"
    assert 'volcano_job_retry_counts{job_id="default/huge"} 1.0' in text


def test_per_job_series_go_when_the_job_does() -> None:
    from tests.builders import node, pod, snapshot

    snap = snapshot(node("n1", cpu="4"), pod("lone", cpu="1"))
    job = next(iter(snap.jobs.values()))
    metrics = Metrics()
    metrics.volcano.jobs_placed([job], now=job.creation + 1.0)
    metrics.observe_session(
        SessionResult(unschedulable=[TaskUnschedulable(job.uid, "default", "lone", job.uid, "x")])
    )
    text = metrics.exposition().decode()
    assert 'volcano_e2e_job_scheduling_start_time{job_name="lone"' in text
    assert f'volcano_job_retry_counts{{job_id="{job.uid}"}} 1.0' in text

    metrics.volcano.jobs_gone(alive=set())
    text = metrics.exposition().decode()
    assert "volcano_e2e_job_scheduling_start_time{" not in text
    assert "volcano_e2e_job_scheduling_duration{" not in text
    assert "volcano_job_retry_counts{" not in text


def test_a_session_for_a_shell_without_metrics_reports_no_gauges() -> None:
    """The simulator exports no metrics: its sessions skip drf's per-job shares and every
    plugin's gauges, and decide the same."""
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.framework import Registry, run_session
    from tests.builders import node, pod, podgroup, snapshot

    def objects() -> list[object]:
        return [
            node("n1", cpu="4"),
            podgroup("train", 2),
            pod("train-0", cpu="1", group="train"),
            pod("train-1", cpu="1", group="train"),
        ]

    loaded = ConfigSource(Registry()).current
    exported, _ = run_session(snapshot(*objects()), loaded, "s1")
    silent, _ = run_session(snapshot(*objects()), loaded, "s1", gauges=False)
    assert {g.name for g in exported.plugin_gauges} >= {"volcano_job_share", "volcano_queue_share"}
    assert silent.plugin_gauges == []
    assert silent.binds == exported.binds and silent.podgroups == exported.podgroups


def test_pods_that_fitted_in_a_gang_given_back_are_not_counted_unschedulable() -> None:
    metrics = Metrics()
    notes = [
        TaskUnschedulable("u0", "default", "g-0", "default/g", "fits a node; ...", "Schedulable"),
        TaskUnschedulable("u1", "default", "g-1", "default/g", "0/1 nodes are unavailable: ..."),
    ]
    metrics.observe_session(SessionResult(unschedulable=notes))
    text = metrics.exposition().decode()
    assert 'volcano_unschedule_task_count{job_id="default/g"} 1.0' in text
