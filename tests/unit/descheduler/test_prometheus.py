"""The Prometheus side that needs no Prometheus: the queries sent, how answers map to nodes and
pods, and an unreachable address. (Answers from a real Prometheus: the e2e bed.)"""

from __future__ import annotations

import math
import socket

import pytest

from asyncsched.backends.prometheus import (
    PrometheusClient,
    PrometheusError,
    Queries,
    _by_instance,
    _by_pod,
)


def test_window_step_and_rate_are_in_every_query() -> None:
    default = Queries()
    for query in (default.node_cpu, default.node_memory, default.pod_cpu, default.pod_memory):
        assert query.startswith("avg_over_time(") and query.endswith("[2m:30s])")
    assert "irate" not in default.node_cpu and "rate(" in default.node_cpu
    assert "clamp_min(" in default.node_cpu  # never a negative CPU figure
    wider = Queries(window="3m", step="15s", rate="1m")
    assert wider.node_cpu.endswith("[3m:15s])") and "[1m]" in wider.node_cpu
    assert wider.pod_cpu != default.pod_cpu


def test_series_map_to_nodes_and_pods() -> None:
    problems: list[str] = []
    nodes = _by_instance(
        [({"instance": "node-a:9100"}, 0.5), ({"instance": "node-b"}, math.nan), ({}, 1.0)],
        problems,
        "node CPU",
    )
    assert nodes == {"node-a": 0.5}
    assert problems == ["node CPU of node-b is nan: left out"]
    pods = _by_pod(
        [({"namespace": "w", "pod": "p"}, 2.0), ({"pod": "q"}, 1.0),
         ({"namespace": "w", "pod": "r"}, -1.0)],
        problems,
        "pod CPU",
    )  # fmt: skip
    assert pods == {"w/p": 2.0}


async def test_unreachable_prometheus_is_one_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = PrometheusClient(f"http://127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(PrometheusError, match="unreachable"):
        await client.usage(Queries(), ["node-a"])
    assert client.sent[0] == Queries().node_cpu
