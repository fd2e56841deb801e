"""Volcano's scheduler metrics under Volcano's names, labels and buckets.

Volcano's Grafana dashboards and alerts read these; asyncsched fills them from what a
session reports (its timings, binds, pods it could not place, failures). Names, label
names and bucket ranges follow pkg/scheduler/metrics of Volcano; ``schedule_attempts``
is counted here, where Volcano registers it and never increments it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from asyncsched.framework import SessionResult

__all__ = ["VolcanoMetrics", "exponential_range"]


def exponential_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """``count`` buckets from ``low`` to ``high``, each a fixed factor above the last
    (Prometheus' ExponentialBucketsRange)."""
    factor = (high / low) ** (1.0 / (count - 1))
    return tuple(low * factor**i for i in range(count))


class VolcanoMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        session = exponential_range(1, 5000, 20)
        self.e2e = Histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "Duration of one scheduling session, open to close, in milliseconds",
            buckets=session,
            registry=r,
        )
        self.open_session = Histogram(
            "volcano_open_session_duration_milliseconds",
            "Duration of opening a scheduling session (cache snapshot and plugins' "
            "OnSessionOpen) in milliseconds",
            buckets=session,
            registry=r,
        )
        self.action = Histogram(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            ["action"],
            buckets=exponential_range(1, 2000, 20),
            registry=r,
        )
        self.plugin = Histogram(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"],
            buckets=exponential_range(0.1, 100, 15),
            registry=r,
        )
        self.attempts = Counter(
            "volcano_schedule_attempts",
            "Attempts to schedule pods by result: scheduled (bound), unschedulable (no "
            "node this session), error (a plugin or action failed)",
            ["result"],
            registry=r,
        )
        self.unschedulable_tasks = Gauge(
            "volcano_unschedule_task_count",
            "Tasks of each job that could not be scheduled in the last session",
            ["job_id"],
            registry=r,
        )
        self.unschedulable_jobs = Gauge(
            "volcano_unschedule_job_count",
            "Jobs with tasks that could not be scheduled in the last session",
            registry=r,
        )
        self._jobs: set[str] = set()

    def observe(self, result: SessionResult, snapshot_ms: float) -> None:
        timings = result.timings
        if timings is not None:
            self.e2e.observe(timings.e2e_ms + snapshot_ms)
            self.open_session.observe(timings.open_ms + snapshot_ms)
            for action, ms in timings.actions.items():
                self.action.labels(action).observe(ms)
            for (plugin, when), ms in timings.plugins.items():
                self.plugin.labels(plugin, when).observe(ms)
        if result.binds:
            self.attempts.labels("scheduled").inc(len(result.binds))
        if result.unschedulable:
            self.attempts.labels("unschedulable").inc(len(result.unschedulable))
        if result.failures:
            self.attempts.labels("error").inc(len(result.failures))
        per_job: dict[str, int] = {}
        for note in result.unschedulable:
            per_job[note.job] = per_job.get(note.job, 0) + 1
        for job in self._jobs - set(per_job):
            self.unschedulable_tasks.remove(job)
        for job, count in per_job.items():
            self.unschedulable_tasks.labels(job).set(count)
        self._jobs = set(per_job)
        self.unschedulable_jobs.set(len(per_job))
