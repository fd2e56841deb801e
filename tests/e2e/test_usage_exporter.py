"""The usage exporter's bookkeeping, without a cluster: counters that follow the declared
usage, and an annotation it cannot read ignored with one warning naming the pod."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.usage_exporter import USAGE, Usage, parse_usage


def node(name: str, cpu: str = "4", memory: str = "8Gi", usage: str = "") -> dict[str, Any]:
    annotations = {USAGE: usage} if usage else {}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "status": {"capacity": {"cpu": cpu, "memory": memory}},
    }


def pod(name: str, on: str, usage: str, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "annotations": {USAGE: usage}},
        "spec": {"nodeName": on},
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


def test_an_unreadable_annotation_counts_as_nothing_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    usage = Usage()
    for now in (0.0, 1.0):
        usage.update([node("n1")], [pod("bad", "n1", "cpu=lots")], now=now)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "pod ns/bad" in warnings[0] and "cpu" in warnings[0]
    text = usage.exposition("n1", now=2.0)
    assert text is not None
    assert sample(text, 'container_cpu_usage_seconds_total{namespace="ns",pod="bad"}') == 0


@pytest.mark.parametrize("text", ["gpu=1", "cpu", "cpu=-1", "memory=1Zi"])
def test_parse_usage_refuses_what_is_not_cpu_or_memory_quantities(text: str) -> None:
    with pytest.raises(ValueError):
        parse_usage(text)
