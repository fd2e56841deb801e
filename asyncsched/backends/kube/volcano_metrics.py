"""Volcano's scheduler metrics under Volcano's names, labels and buckets.

Volcano's Grafana dashboards and alerts read these; asyncsched fills them from what a
session reports (its timings, binds, pods it could not place, failures) and from what
the binder sees. Names, label names and bucket ranges follow pkg/scheduler/metrics of
Volcano; ``schedule_attempts`` is counted here, where Volcano registers it and never
increments it. Of the per-stage durations only ``Bind`` is measured (Volcano also times
``Predicate``, ``Scoring`` and ``PreBind`` inside its allocate; ours are in the action's
latency). Counters Volcano exposes without the ``_total`` suffix are gauges that only
grow, as a prometheus_client Counter would add the suffix.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from asyncsched.framework import SessionResult
from asyncsched.framework.results import UNSCHEDULABLE_REASON
from asyncsched.model import JobInfo

__all__ = ["PerJobGauges", "VolcanoMetrics", "exponential_range"]


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
        self.job_latency = Histogram(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "Time from a job's creation to each of its tasks being placed, in milliseconds",
            buckets=exponential_range(100, 120000, 30),
            registry=r,
        )
        self.per_job = PerJobGauges(registry)
        self.job_retries = Gauge(
            "volcano_job_retry_counts",
            "Sessions in which the job had tasks that could not be placed (only grows)",
            ["job_id"],
            registry=r,
        )
        self.task_latency = Histogram(
            "volcano_task_scheduling_latency_milliseconds",
            "Time from a pod's creation to a stage of its scheduling (Bound), in milliseconds",
            ["stage"],
            buckets=exponential_range(50, 60000, 30),
            registry=r,
        )
        self.stage = Histogram(
            "volcano_scheduling_stage_duration_milliseconds",
            "Duration of one scheduling stage for one pod (Bind: the API call), in milliseconds",
            ["stage"],
            buckets=exponential_range(0.1, 500, 20),
            registry=r,
        )
        self._placed_jobs: dict[str, tuple[str, str, str]] = {}
        self._retried: set[str] = set()
        # Observed once per bind: the labelled series looked up once (a lookup takes a lock).
        self._bound_latency = self.task_latency.labels("Bound")
        self._bind_stage = self.stage.labels("Bind")

    def jobs_placed(self, jobs: list[JobInfo], now: float) -> None:
        """One entry per task placed this session, by its job: Volcano observes the job's
        latency once per task placed and keeps the latest figures per job."""
        per_job = self.per_job
        for job in jobs:
            labels = (job.name, job.queue, job.namespace)
            waited_ms = max(0.0, now - job.creation) * 1000.0
            self.job_latency.observe(waited_ms)
            per_job.duration[labels] = waited_ms
            per_job.last[labels] = now
            if self._placed_jobs.get(job.uid) != labels:
                self._placed_jobs[job.uid] = labels
                per_job.start[labels] = job.creation

    def jobs_gone(self, alive: Container[str]) -> None:
        """Drop the per-job series of jobs no longer in the cluster (``alive``: the
        snapshot's jobs by uid, read as they are rather than copied)."""
        for uid in [uid for uid in self._placed_jobs if uid not in alive]:
            self.per_job.remove(self._placed_jobs.pop(uid))
        for job in [job for job in self._retried if job not in alive]:
            self._retried.discard(job)
            self.job_retries.remove(job)

    def task_bound(self, created: float, now: float, bind_ms: float) -> None:
        self._bound_latency.observe(max(0.0, now - created) * 1000.0)
        self._bind_stage.observe(bind_ms)

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
            if note.reason == UNSCHEDULABLE_REASON:  # not the pods that fit (Schedulable)
                per_job[note.job] = per_job.get(note.job, 0) + 1
        for job in self._jobs - set(per_job):
            self.unschedulable_tasks.remove(job)
        for job, count in per_job.items():
            self.unschedulable_tasks.labels(job).set(count)
        self._jobs = set(per_job)
        self.unschedulable_jobs.set(len(per_job))
        for job in per_job:
            self.job_retries.labels(job).inc()
            self._retried.add(job)


PER_JOB_LABELS = ("job_name", "queue", "job_namespace")


class PerJobGauges:
    """Volcano's three gauges per job placed, held as plain values and made into samples
    when scraped.

    A labelled prometheus_client Gauge makes a child object per series on first use; with
    one-pod jobs that is three per pod placed (30,000 for a burst of 10,000 plain pods,
    about 5% of the scheduler's CPU on the bed). A scrape reads the same series either way.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration: dict[tuple[str, str, str], float] = {}
        """Time from the job's creation to its latest task placed, in milliseconds."""
        self.start: dict[tuple[str, str, str], float] = {}
        """The job's creation time (Unix seconds)."""
        self.last: dict[tuple[str, str, str], float] = {}
        """When the job's latest task was placed (Unix seconds)."""
        registry.register(self)

    def remove(self, labels: tuple[str, str, str]) -> None:
        for series in (self.duration, self.start, self.last):
            series.pop(labels, None)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return self._families(with_samples=False)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._families(with_samples=True)

    def _families(self, with_samples: bool) -> Iterator[GaugeMetricFamily]:
        for name, help_text, series in (
            (
                "volcano_e2e_job_scheduling_duration",
                "Time from the job's creation to its latest task placed, in milliseconds",
                self.duration,
            ),
            (
                "volcano_e2e_job_scheduling_start_time",
                "The job's creation time (Unix seconds)",
                self.start,
            ),
            (
                "volcano_e2e_job_scheduling_last_time",
                "When the job's latest task was placed (Unix seconds)",
                self.last,
            ),
        ):
            family = GaugeMetricFamily(name, help_text, labels=PER_JOB_LABELS)
            if with_samples:
                for labels, value in list(series.items()):
                    family.add_metric(labels, value)
            yield family
