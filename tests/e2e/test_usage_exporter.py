"""The usage exporter's bookkeeping, without a cluster: counters that follow the declared
usage, and an annotation it cannot read ignored with one warning naming the pod."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.usage_exporter import USAGE, Usage


def node(name: str, cpu: str = "4", memory: str = "8Gi", usage: str = "") -> dict[str, Any]:
    annotations = {USAGE: usage} if usage else {}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "status": {"capacity": {"cpu": cpu, "memory": memory}},
    }


def pod(
    name: str, on: str, usage: str | None, phase: str = "Running", cpu: str = "0"
) -> dict[str, Any]:
    annotations = {USAGE: usage} if usage is not None else {}
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "annotations": annotations},
        "spec": {"nodeName": on, "containers": [container]},
        "status": {"phase": phase},
    }


def sample(text: str, series: str) -> float:
    return float(next(line for line in text.splitlines() if line.startswith(series)).split()[-1])


def test_counters_grow_at_the_declared_rate_and_follow_changes() -> None:
    usage = Usage()
    usage.update([node("n1")], [pod("a", "n1", "cpu=3,memory=2Gi")], now=100.0)
    usage.update([node("n1")], [pod("a", "n1", "cpu=1,memory=2Gi")], now=110.0)
    text = usage.exposition("n1", now=120.0)
    assert text is not None
    # 10 s at 3 of 4 cpus busy, then 10 s at 1 of 4: per cpu 0.75*10 + 0.25*10 busy.
    assert sample(text, 'node_cpu_seconds_total{cpu="3",mode="user"}') == pytest.approx(10.0)
    assert sample(text, 'node_cpu_seconds_total{cpu="0",mode="idle"}') == pytest.approx(10.0)
    assert sample(text, 'container_cpu_usage_seconds_total{namespace="ns",pod="a"}') == (
        pytest.approx(40.0)
    )
    assert sample(text, "node_memory_MemAvailable_bytes") == 6 * 2**30
    assert usage.exposition("elsewhere", now=120.0) is None


def test_pods_not_running_count_for_nothing_and_a_node_baseline_adds() -> None:
    usage = Usage()
    pods = [pod("done", "n1", "cpu=4", phase="Succeeded"), pod("p", "n1", "cpu=1")]
    usage.update([node("n1", usage="cpu=1,memory=1Gi")], pods, now=0.0)
    text = usage.exposition("n1", now=10.0)
    assert text is not None and 'pod="done"' not in text
    assert sample(text, 'node_cpu_seconds_total{cpu="0",mode="user"}') == pytest.approx(5.0)
    assert sample(text, "node_memory_MemAvailable_bytes") == 7 * 2**30


def test_a_pod_without_a_readable_annotation_uses_what_it_requests_as_in_the_simulator(
    caplog: pytest.LogCaptureFixture,
) -> None:
    usage = Usage()
    pods = [pod("bad", "n1", "cpu=lots", cpu="1"), pod("silent", "n1", None, cpu="500m")]
    for now in (0.0, 1.0):
        usage.update([node("n1")], pods, now=now)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1, warnings
    assert "pod ns/bad" in warnings[0] and "lots" in warnings[0], warnings
    text = usage.exposition("n1", now=11.0)
    assert text is not None
    assert sample(text, 'container_cpu_usage_seconds_total{namespace="ns",pod="bad"}') == 11
    assert sample(text, 'container_cpu_usage_seconds_total{namespace="ns",pod="silent"}') == 5.5
    assert sample(text, 'container_memory_usage_bytes{namespace="ns",pod="silent"}') == 2**30
