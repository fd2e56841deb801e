"""Prometheus metrics and the /metrics, /healthz and /readyz endpoints.

Each scheduler has its own registry, so several can live in one process
(tests) without clashing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from operator import attrgetter
from typing import Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from asyncsched.backends.kube.gpu_models import MODEL_LABEL, allocated_by_model
from asyncsched.backends.kube.pending_reasons import count_reasons
from asyncsched.backends.kube.volcano_metrics import VolcanoMetrics
from asyncsched.framework import SessionResult
from asyncsched.framework.results import PluginGauge
from asyncsched.model import ClusterSnapshot

__all__ = ["Exposition", "Metrics", "serve_http"]

log = logging.getLogger(__name__)

_NAME = attrgetter("name")
"""A figure's gauge name (read for every figure of every session: drf reports one per job)."""


class Exposition(Protocol):
    """Anything with a Prometheus text exposition (the scheduler's or the controllers' metrics)."""

    def exposition(self) -> bytes: ...


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.sessions = Counter("asyncsched_sessions", "Scheduling sessions run", registry=r)
        self.session_seconds = Histogram(
            "asyncsched_session_duration_seconds",
            "Time one session takes",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
            registry=r,
        )
        self.binds = Counter("asyncsched_binds", "Pods bound", registry=r)
        self.bind_failures = Counter("asyncsched_bind_failures", "Binds refused", registry=r)
        self.unschedulable = Counter(
            "asyncsched_unschedulable_pods", "Pending pods reported unschedulable", registry=r
        )
        self.decode_errors = Counter(
            "asyncsched_skipped_objects",
            "Objects skipped because they could not be read",
            ["kind"],
            registry=r,
        )
        self.plugin_failures = Counter(
            "asyncsched_plugin_failures", "Plugin callbacks that raised", ["plugin"], registry=r
        )
        self.events_dropped = Counter(
            "asyncsched_events_dropped",
            "Events not sent because 1,000 were already waiting (as client-go drops them)",
            registry=r,
        )
        self.session_causes = Counter(
            "asyncsched_session_causes",
            "Sessions by what woke the loop for them (one woken by several counts under each;"
            " period: nothing did)",
            ["cause"],
            registry=r,
        )
        self.stale_echoes = Counter(
            "asyncsched_podgroup_stale_echoes",
            "Watch echoes of a PodGroup status this scheduler had already written past",
            registry=r,
        )
        self.config_reloads = Counter(
            "asyncsched_config_reloads", "Configurations taken into use", registry=r
        )
        self.config_rejections = Counter(
            "asyncsched_config_rejections", "Configurations refused as invalid", registry=r
        )
        self.leader = Gauge("asyncsched_leader", "1 while this replica holds the lease", registry=r)
        self.pending = Gauge("asyncsched_pending_pods", "Pods waiting to be placed", registry=r)
        self.pending_reasons = Gauge(
            "asyncsched_unschedulable_tasks",
            "Pods the last session could not place, by reason (a pod kept off nodes for "
            "two reasons counts under both)",
            ["reason"],
            registry=r,
        )
        self._reasons: set[str] = set()
        self.devices_by_model = Gauge(
            "asyncsched_queue_allocated_devices",
            "Devices (extended resources: GPUs...) the queue's placed pods hold, by the GPU "
            f"model of their nodes (label {MODEL_LABEL}; unknown without it)",
            ["queue_name", "resource", "model"],
            registry=r,
        )
        self._device_series: set[tuple[str, str, str]] = set()
        self._devices_at = float("-inf")
        # Volcano's own names, so its dashboards and alerts keep working.
        self.preemption_victims = Gauge(
            "volcano_pod_preemption_victims",
            "Victims the plugins allowed on the last node preempt examined",
            registry=r,
        )
        # A gauge that only grows: a Counter would be exposed as ..._total, and Volcano's
        # counter has no such suffix.
        self.preemption_attempts = Gauge(
            "volcano_total_preemption_attempts",
            "Nodes on which preempt tried to make room (only grows)",
            registry=r,
        )
        self.eviction_transactions = Counter(
            "volcano_eviction_transactions",
            "Committed decisions that evicted at least one pod",
            ["action"],
            registry=r,
        )

        self.volcano = VolcanoMetrics(r)
        """Volcano's own scheduler metrics, so its dashboards and alerts keep working."""
        self._plugin_gauges: dict[str, tuple[Gauge, tuple[str, ...]]] = {}
        self._plugin_series: dict[str, dict[tuple[str, ...], float]] = {}
        """Per plugin gauge, the label values of each series it has and the value last set."""
        self._kept_figures: dict[int, tuple[str, tuple[str, ...]]] = {}
        """By identity, the figure whose value each series took last session: a plugin
        reporting that frozen object again (``Session.report_again``) costs a lookup, not
        a reading of its labels."""
        self._kept_alive: list[PluginGauge] = []
        self._refused: set[str] = set()
        self._gauges_due: list[PluginGauge] | None = None
        """The plugins' gauges of the last session, not yet set (``exposition`` sets them)."""

    def observe_session(self, result: SessionResult, snapshot_ms: float = 0.0) -> None:
        """The eviction figures the core counted in one session, its latencies and
        attempts as Volcano counts them, and the plugins' gauges. ``snapshot_ms``: the
        cache snapshot the session was opened on (Volcano counts it in opening)."""
        self.volcano.observe(result, snapshot_ms)
        self._observe_reasons([note.message for note in result.unschedulable])
        if result.preemption_victims is not None:
            self.preemption_victims.set(result.preemption_victims)
        if result.preemption_attempts:
            self.preemption_attempts.inc(result.preemption_attempts)
        for action, count in result.eviction_transactions.items():
            self.eviction_transactions.labels(action).inc(count)
        self._gauges_due = result.plugin_gauges
        known, refused = self._plugin_gauges, self._refused
        if any(n not in known and n not in refused for n in set(map(_NAME, result.plugin_gauges))):
            self._set_gauges_due()  # a new gauge is made, or refused with a warning, at once

    def _set_gauges_due(self) -> None:
        """The plugins' gauges are set when read, from the last session's figures.

        They are state, not counts: what a scrape sees is the same whether the sessions
        between two scrapes set them or not, and drf reports a share for every job holding
        resources (10,000 one-pod jobs on the bed) every session, about a second apart."""
        if self._gauges_due is not None:
            due, self._gauges_due = self._gauges_due, None
            self._observe_plugin_gauges(due)

    def observe_devices(self, snapshot: ClusterSnapshot, now: float, every: float = 5.0) -> None:
        """Devices held per queue and GPU model, from a session's snapshot; at most once
        every ``every`` seconds (it looks into every job holding a device)."""
        if now - self._devices_at < every:
            return
        self._devices_at = now
        held = allocated_by_model(snapshot)
        for key in self._device_series - set(held):
            self.devices_by_model.remove(*key)
        for key, amount in held.items():
            self.devices_by_model.labels(*key).set(amount)
        self._device_series = set(held)

    def _observe_reasons(self, messages: list[str]) -> None:
        counts = count_reasons(messages)
        for reason in self._reasons - set(counts):
            self.pending_reasons.remove(reason)
        for reason, count in counts.items():
            self.pending_reasons.labels(reason).set(count)
        self._reasons = set(counts)

    def _observe_plugin_gauges(self, reported: list[PluginGauge]) -> None:
        """Set what was reported; remove the series of earlier sessions not reported now.

        A series whose value is the one set last is left alone: ``labels()`` costs
        microseconds, and drf reports a share for every job holding resources in every
        session, most of them unchanged."""
        seen: dict[str, dict[tuple[str, ...], float]] = {}
        before = self._plugin_series
        kept = self._kept_figures
        holders: dict[tuple[str, tuple[str, ...]], PluginGauge] = {}
        """The figure whose value each series holds now (the last one reported for it)."""
        for figure in reported:
            found = kept.get(id(figure))
            if found is not None:  # the very figure that set its series last session
                now = seen.setdefault(found[0], {})
                if found[1] not in now:  # (a series reported twice takes the slow way)
                    now[found[1]] = figure.value
                    holders[found] = figure
                    continue
            names = tuple(key for key, _ in figure.labels)
            values = tuple(value for _, value in figure.labels)
            known = self._plugin_gauges.get(figure.name)
            now = seen.setdefault(figure.name, {})
            last = now[values] if values in now else before.get(figure.name, {}).get(values)
            if known is not None and known[1] == names and last == figure.value:
                now[values] = figure.value
                holders[(figure.name, values)] = figure
                continue
            gauge = self._plugin_gauge(figure, names)
            if gauge is None:
                continue
            if names:
                gauge.labels(*values).set(figure.value)
            else:
                gauge.set(figure.value)
            now[values] = figure.value
            holders[(figure.name, values)] = figure
        for name, series in before.items():
            if not series:
                continue  # refused (only a gauge made holds series)
            gauge, names = self._plugin_gauges[name]
            now = seen.get(name, {})
            for values in series.keys() - now.keys():
                if names:
                    gauge.remove(*values)
                else:
                    gauge.set(0)  # a gauge without labels cannot vanish
        self._plugin_series = seen
        self._kept_figures = {id(figure): key for key, figure in holders.items()}
        self._kept_alive = list(holders.values())  # so the ids stay theirs while kept

    def _plugin_gauge(self, figure: PluginGauge, names: tuple[str, ...]) -> Gauge | None:
        known = self._plugin_gauges.get(figure.name)
        if known is not None:
            if known[1] == names:
                return known[0]
            problem = f"labels {list(names)} where it first had {list(known[1])}"
        else:
            try:
                gauge = Gauge(figure.name, figure.help, list(names), registry=self.registry)
            except ValueError as exc:  # a bad or taken name, bad label names
                problem = str(exc)
            else:
                self._plugin_gauges[figure.name] = (gauge, names)
                return gauge
        if figure.name not in self._refused:
            self._refused.add(figure.name)
            log.warning("plugin gauge %s not exported: %s", figure.name, problem)
        return None

    def exposition(self) -> bytes:
        self._set_gauges_due()
        return generate_latest(self.registry)


async def serve_http(
    metrics: Exposition, ready: Callable[[], bool], host: str, port: int
) -> web.AppRunner:
    """Start the HTTP endpoints; the caller cleans up the returned runner."""

    async def metrics_view(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), content_type="text/plain")

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="informers not synced")

    app = web.Application()
    app.add_routes(
        [
            web.get("/metrics", metrics_view),
            web.get("/healthz", healthz),
            web.get("/readyz", readyz),
        ]
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
