"""Usage metrics for KWOK's fake nodes, which run no containers and so report none.

Pods (and nodes, for a baseline such as system daemons) declare what they use in the
annotation ``simulation.asyncsched.io/usage`` (``cpu=3,memory=8Gi``, Kubernetes
quantities), read as the simulator reads it: a pod without one (or with one that cannot be
read, which is logged once) uses what it requests. This exporter lists the bed's nodes and
pods and serves, for one node per scrape (``/metrics?node=NAME``), what a node_exporter
and the kubelet's cAdvisor would:

- ``node_cpu_seconds_total{cpu, mode="idle"|"user"}``: counters that grow at the rate the
  node's running pods (plus its baseline) keep its cpus busy, out of its cpu capacity;
- ``node_memory_MemTotal_bytes``, ``node_memory_MemAvailable_bytes``;
- ``container_cpu_usage_seconds_total{namespace, pod}`` and
  ``container_memory_usage_bytes`` / ``container_memory_working_set_bytes`` per running
  pod, without ``container`` and ``name`` labels, like cAdvisor's pod-level cgroup.

These are the series Volcano's descheduler queries. ``/targets`` lists one target per
node for Prometheus' HTTP discovery, which relabels ``instance`` to the node name (see
prometheus.py).

    python -m tests.e2e.usage_exporter --kubeconfig K --port P [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client

from asyncsched.api.quantity import parse_quantity, to_units
from asyncsched.backends.sim.fields import USAGE_ANNOTATION as USAGE
from asyncsched.backends.sim.fields import ManifestError, usage_in
from tests.e2e.kubeops import raw
from tests.e2e.testbed import new_client

__all__ = ["USAGE", "Usage", "declared", "requested", "serve"]
log = logging.getLogger("usage-exporter")


def declared(meta: Mapping[str, Any], where: str) -> dict[str, float] | None:
    """The usage annotation as cpu cores and memory bytes (the simulator's reading of it);
    None without one; ManifestError naming ``where`` if it cannot be read."""
    units = usage_in(meta.get("annotations") or {}, where)
    if units is None:
        return None
    return {
        name: value / 1000.0 if name == "cpu" else float(value) for name, value in units.items()
    }


def requested(pod: Mapping[str, Any]) -> dict[str, float]:
    """What the pod's containers request: its usage when it declares none, as in the
    simulator."""
    total = {"cpu": 0.0, "memory": 0.0}
    for container in pod.get("spec", {}).get("containers", []):
        requests = (container.get("resources") or {}).get("requests") or {}
        for name in total:
            if name in requests:
                total[name] += to_units(name, requests[name]) / (1000.0 if name == "cpu" else 1)
    return total


@dataclass
class Meter:
    """A seconds counter that grows at a rate which changes now and then."""

    since: float
    seconds: float = 0.0
    rate: float = 0.0

    def read(self, now: float) -> float:
        return self.seconds + self.rate * max(now - self.since, 0.0)

    def set_rate(self, now: float, rate: float) -> None:
        self.seconds, self.since, self.rate = self.read(now), now, rate


@dataclass
class PodUsage:
    namespace: str
    name: str
    node: str
    cpu: Meter
    memory: float


@dataclass
class NodeUsage:
    cpus: int
    memory_total: float
    idle: Meter
    user: Meter
    memory_used: float = 0.0


@dataclass
class Usage:
    """What the exporter knows: built from lists of nodes and pods (plain JSON dicts)."""

    nodes: dict[str, NodeUsage] = field(default_factory=dict)
    pods: dict[str, PodUsage] = field(default_factory=dict)  # by uid
    warned: set[str] = field(default_factory=set)

    def update(
        self, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], now: float
    ) -> None:
        running: dict[str, tuple[Mapping[str, Any], dict[str, float]]] = {}
        for pod in pods:
            meta, spec = pod["metadata"], pod.get("spec", {})
            if pod.get("status", {}).get("phase") != "Running" or not spec.get("nodeName"):
                continue
            usage = self._declared(meta, f"pod {meta.get('namespace')}/{meta['name']}")
            running[meta["uid"]] = (pod, requested(pod) if usage is None else usage)
        for uid in set(self.pods) - set(running):
            del self.pods[uid]
        for uid, (pod, usage) in running.items():
            meta = pod["metadata"]
            known = self.pods.get(uid)
            if known is None:
                known = self.pods[uid] = PodUsage(
                    meta["namespace"], meta["name"], pod["spec"]["nodeName"], Meter(now), 0.0
                )
            known.cpu.set_rate(now, usage.get("cpu", 0.0))
            known.memory = usage.get("memory", 0.0)

        busy: dict[str, list[float]] = {}
        for known in self.pods.values():
            total = busy.setdefault(known.node, [0.0, 0.0])
            total[0] += known.cpu.rate
            total[1] += known.memory
        seen = set()
        for node in nodes:
            meta = node["metadata"]
            name = meta["name"]
            seen.add(name)
            capacity = node.get("status", {}).get("capacity", {})
            cpus = max(math.ceil(float(parse_quantity(capacity.get("cpu", "1")))), 1)
            memory = float(parse_quantity(capacity.get("memory", "0")))
            known_node = self.nodes.get(name)
            if known_node is None:
                known_node = self.nodes[name] = NodeUsage(cpus, memory, Meter(now), Meter(now))
            known_node.cpus, known_node.memory_total = cpus, memory
            baseline = self._declared(meta, f"node {name}") or {}
            cpu_used, memory_used = busy.get(name, [0.0, 0.0])
            busy_share = min((cpu_used + baseline.get("cpu", 0.0)) / cpus, 1.0)
            known_node.user.set_rate(now, busy_share)
            known_node.idle.set_rate(now, 1.0 - busy_share)
            known_node.memory_used = min(memory_used + baseline.get("memory", 0.0), memory)
        for name in set(self.nodes) - seen:
            del self.nodes[name]

    def _declared(self, meta: Mapping[str, Any], where: str) -> dict[str, float] | None:
        """The annotation's usage; an unreadable one is ignored, with one warning."""
        try:
            return declared(meta, where)
        except ManifestError as exc:
            if where not in self.warned:
                self.warned.add(where)
                log.warning("%s (ignored)", exc)
            return None

    def exposition(self, node: str, now: float) -> str | None:
        """The text a scrape of ``node`` gets; None for a node not known."""
        known = self.nodes.get(node)
        if known is None:
            return None
        lines = [
            "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.",
            "# TYPE node_cpu_seconds_total counter",
        ]
        for mode, meter in (("idle", known.idle), ("user", known.user)):
            value = meter.read(now)
            for cpu in range(known.cpus):
                lines.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="{mode}"}} {value!r}')
        lines += [
            "# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.",
            "# TYPE node_memory_MemTotal_bytes gauge",
            f"node_memory_MemTotal_bytes {known.memory_total!r}",
            "# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.",
            "# TYPE node_memory_MemAvailable_bytes gauge",
            f"node_memory_MemAvailable_bytes {known.memory_total - known.memory_used!r}",
        ]
        pods = sorted(
            (p for p in self.pods.values() if p.node == node), key=lambda p: (p.namespace, p.name)
        )
        families = (
            ("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed"),
            ("container_memory_usage_bytes", "gauge", "Current memory usage"),
            ("container_memory_working_set_bytes", "gauge", "Current working set"),
        )
        for metric, kind, text in families:
            lines += [f"# HELP {metric} {text}.", f"# TYPE {metric} {kind}"]
            for pod in pods:
                value = pod.cpu.read(now) if kind == "counter" else pod.memory
                labels = f'namespace="{pod.namespace}",pod="{pod.name}"'
                lines.append(f"{metric}{{{labels}}} {value!r}")
        return "\n".join(lines) + "\n"


async def _raw_list(api: client.ApiClient, path: str) -> list[dict[str, Any]]:
    response = api.call_api(
        path, "GET", header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"], _preload_content=False,
    )  # fmt: skip
    return list((await raw(response))["items"])


async def serve(kubeconfig: Path, host: str, port: int, interval: float) -> None:
    usage = Usage()
    synced = asyncio.Event()

    async def refresh(api: client.ApiClient) -> None:
        while True:
            try:
                nodes = await _raw_list(api, "/api/v1/nodes")
                pods = await _raw_list(api, "/api/v1/pods")
            except Exception as exc:  # the API server restarts in some tests: keep going
                log.warning("listing nodes and pods failed (%s); keeping what was known", exc)
            else:
                usage.update(nodes, pods, time.time())
                synced.set()
            await asyncio.sleep(interval)

    async def metrics(request: web.Request) -> web.Response:
        node = request.query.get("node", "")
        text = usage.exposition(node, time.time())
        if text is None:
            return web.Response(status=404, text=f"no node {node!r}\n")
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    async def targets(request: web.Request) -> web.Response:
        """Prometheus' HTTP discovery: one target per node, this exporter's address."""
        address = f"{host}:{port}"
        groups = [
            {"targets": [address], "labels": {"__meta_node_name": name}}
            for name in sorted(usage.nodes)
        ]
        return web.json_response(groups)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok") if synced.is_set() else web.Response(status=503)

    app = web.Application()
    app.add_routes(
        [web.get("/metrics", metrics), web.get("/targets", targets), web.get("/healthz", healthz)]
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    async with await new_client(kubeconfig) as api:
        task = asyncio.create_task(refresh(api))
        try:
            await web.TCPSite(runner, host, port).start()
            log.info("serving on %s:%d", host, port)
            await asyncio.Event().wait()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.usage_exporter", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between lists")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.kubeconfig, args.host, args.port, args.interval))
    return 0


if __name__ == "__main__":
    sys.exit(main())
