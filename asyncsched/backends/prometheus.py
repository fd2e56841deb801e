"""Real usage from Prometheus' HTTP API, with Volcano's queries.

Four instant queries per pass (not one per node and pod, as Volcano sends):
node CPU and memory as fractions of capacity, pod CPU in cores and memory in
bytes, each averaged with ``avg_over_time`` over the window at the step
(Volcano: 2m at 30s; here ``--query-window`` / the policy's ``duration`` and
``--query-step``). CPU comes from ``rate`` over ``--rate-window`` clamped at
zero, as Volcano's scheduler fixed it after ``irate`` gave negative figures.
Node series are matched to nodes by their ``instance`` label (relabelled to
the node name, as Volcano expects; a ``:port`` suffix is dropped).

Any failure (unreachable, HTTP error, an answer that is not a vector) raises
``PrometheusError``; the caller decides nothing on a pass without figures.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec

from asyncsched.descheduler.plan import NodeUsage, PodUsage, UsageFigures
from asyncsched.descheduler.policy import DEFAULT_RATE_WINDOW, DEFAULT_STEP, DEFAULT_WINDOW

__all__ = ["PrometheusClient", "PrometheusError", "Queries"]

log = logging.getLogger(__name__)
_PORT = re.compile(r":\d+$")


class PrometheusError(Exception):
    """No usable answer from Prometheus (one line, for a log or an Event)."""


@dataclass(frozen=True)
class Queries:
    window: str = DEFAULT_WINDOW
    step: str = DEFAULT_STEP
    rate: str = DEFAULT_RATE_WINDOW

    @property
    def node_cpu(self) -> str:
        return (
            "avg_over_time(clamp_min(1 - avg by (instance) "
            f'(rate(node_cpu_seconds_total{{mode="idle"}}[{self.rate}])), 0)'
            f"[{self.window}:{self.step}])"
        )

    @property
    def node_memory(self) -> str:
        return (
            "avg_over_time((1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)"
            f"[{self.window}:{self.step}])"
        )

    @property
    def pod_cpu(self) -> str:
        return (
            "avg_over_time(sum by (namespace, pod) "
            f'(rate(container_cpu_usage_seconds_total{{container="",name=""}}[{self.rate}]))'
            f"[{self.window}:{self.step}])"
        )

    @property
    def pod_memory(self) -> str:
        return (
            "avg_over_time(sum by (namespace, pod) "
            '(container_memory_usage_bytes{container="",name=""})'
            f"[{self.window}:{self.step}])"
        )


class _Sample(msgspec.Struct):
    metric: dict[str, str]
    value: tuple[float, str]


class _Data(msgspec.Struct):
    resultType: str
    result: list[Any]


class _Answer(msgspec.Struct):
    status: str
    data: _Data | None = None
    error: str = ""


class PrometheusClient:
    """Instant queries against ``address`` (``http://host:port``, optionally with a path)."""

    def __init__(self, address: str, *, timeout: float = 10.0) -> None:
        self.address = address.rstrip("/")
        self.timeout = timeout
        self.sent: list[str] = []
        """Every query sent, in order (shown with ``-vv`` and in ``--dry-run -o json``)."""

    async def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """The instant vector ``promql`` evaluates to now: (labels, value) per series."""
        self.sent.append(promql)
        log.debug("prometheus %s query: %s", self.address, promql)
        url = f"{self.address}/api/v1/query"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as http,
                http.post(url, data={"query": promql}) as response,
            ):
                body = await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise PrometheusError(f"Prometheus at {self.address} unreachable: {exc!r}") from None
        try:
            answer = msgspec.json.decode(body, type=_Answer)
        except msgspec.DecodeError:
            raise PrometheusError(
                f"Prometheus at {self.address} answered HTTP {status} with no JSON answer"
            ) from None
        if answer.status != "success" or answer.data is None:
            raise PrometheusError(
                f"Prometheus at {self.address} refused the query ({answer.error or status})"
            )
        if answer.data.resultType != "vector":
            raise PrometheusError(
                f"Prometheus answered a {answer.data.resultType}, not a vector: {promql}"
            )
        try:
            samples = msgspec.convert(answer.data.result, list[_Sample])
            return [(s.metric, float(s.value[1])) for s in samples]
        except (msgspec.ValidationError, ValueError):
            raise PrometheusError(f"Prometheus answered malformed samples for {promql}") from None

    async def usage(self, queries: Queries, nodes: Iterable[str]) -> UsageFigures:
        """Node and pod usage over the window; figures Prometheus lacks are named in
        ``problems`` (and the descheduler leaves those nodes and pods alone)."""
        node_cpu, node_mem, pod_cpu, pod_mem = await asyncio.gather(
            self.query(queries.node_cpu),
            self.query(queries.node_memory),
            self.query(queries.pod_cpu),
            self.query(queries.pod_memory),
        )
        problems: list[str] = []
        cpu = _by_instance(node_cpu, problems, "node CPU")
        mem = _by_instance(node_mem, problems, "node memory")
        wanted = list(nodes)
        found = {n: NodeUsage(cpu[n], mem[n]) for n in wanted if n in cpu and n in mem}
        if not node_cpu or not node_mem:
            problems.append(
                "Prometheus has no node usage series (node_cpu_seconds_total, "
                "node_memory_MemAvailable_bytes) in the window"
            )
        pods: dict[str, PodUsage] = {}
        pod_mem_by = _by_pod(pod_mem, problems, "pod memory")
        for key, value in _by_pod(pod_cpu, problems, "pod CPU").items():
            if key in pod_mem_by:
                pods[key] = PodUsage(value, pod_mem_by[key])
        return UsageFigures(found, pods, tuple(problems))


def _by_instance(
    samples: list[tuple[dict[str, str], float]], problems: list[str], what: str
) -> dict[str, float]:
    found: dict[str, float] = {}
    for labels, value in samples:
        instance = _PORT.sub("", labels.get("instance", ""))
        if not instance:
            continue
        if not math.isfinite(value):
            problems.append(f"{what} of {instance} is {value}: left out")
            continue
        found[instance] = value
    return found


def _by_pod(
    samples: list[tuple[dict[str, str], float]], problems: list[str], what: str
) -> dict[str, float]:
    found: dict[str, float] = {}
    for labels, value in samples:
        namespace, pod = labels.get("namespace", ""), labels.get("pod", "")
        if not pod or not namespace:
            continue
        if not math.isfinite(value) or value < 0:
            problems.append(f"{what} of {namespace}/{pod} is {value}: left out")
            continue
        found[f"{namespace}/{pod}"] = value
    return found
