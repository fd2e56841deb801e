"""A real Prometheus on the bed answers Volcano's descheduler queries with the usage the
fake nodes' pods declare, under the node's name as ``instance``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.conftest import Kube
from tests.e2e.kubeops import wait_for
from tests.e2e.prometheus import Prometheus
from tests.e2e.scheduler_proc import create, request
from tests.e2e.usage_exporter import USAGE

CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}

# Volcano descheduler's LoadAware queries (pkg/framework/plugins/loadaware/metrics/
# metrics_client_prometheus.go), with the window and the subquery step as parameters:
# Volcano hard-codes the step at 30s, which would make a fresh Prometheus wait up to 30s.
VOLCANO_NODE_CPU = (
    'avg_over_time((1 - (avg by (instance) (irate(node_cpu_seconds_total{{mode="idle",'
    'instance="{node}"}}[30s])) * 1))[{window}:{step}])'
)
VOLCANO_NODE_MEMORY = (
    'avg_over_time(((1-node_memory_MemAvailable_bytes{{instance="{node}"}}/'
    'node_memory_MemTotal_bytes{{instance="{node}"}}))[{window}:{step}])'
)
VOLCANO_POD_CPU = (
    'avg_over_time((( (irate(container_cpu_usage_seconds_total{{pod="{pod}",container="",'
    'name="" }}[30s])) * 1))[{window}:{step}])'
)
VOLCANO_POD_MEMORY = 'container_memory_usage_bytes{{pod="{pod}",container="",name=""}}'


def running_pod(name: str, node: str, usage: str | None) -> dict[str, Any]:
    """A pod placed on ``node`` directly (no scheduler needed), KWOK runs it; it requests
    1 cpu and 2Gi, which it uses when it declares no usage."""
    annotations = {USAGE: usage} if usage is not None else {}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}],
        },
    }  # fmt: skip


@pytest.fixture
async def nodes(kube: Kube) -> AsyncIterator[list[str]]:
    label = kube.namespace
    names = await kube.bed.add_nodes(kube.api, 2, CAPACITY, {"e2e": label}, prefix=f"{label}-")
    yield names
    for name in names:
        await request(kube.api, "DELETE", f"/api/v1/nodes/{name}")


async def test_prometheus_answers_volcanos_usage_queries_per_node_name(
    kube: Kube, prometheus: Prometheus, nodes: list[str]
) -> None:
    hot, cool = nodes
    await create(kube.api, running_pod("busy", hot, "cpu=24,memory=64Gi"), kube.namespace)
    await create(kube.api, running_pod("light", cool, "cpu=4,memory=32Gi"), kube.namespace)
    await create(kube.api, running_pod("silent", cool, None), kube.namespace)
    both = f"{hot}|{cool}"
    cpu_now = (
        f'1 - avg by (instance) (irate(node_cpu_seconds_total{{mode="idle",instance=~"{both}"}}'
        "[30s]))"
    )
    memory_now = (
        f'1 - node_memory_MemAvailable_bytes{{instance=~"{both}"}} / '
        f'node_memory_MemTotal_bytes{{instance=~"{both}"}}'
    )

    async def usage_shown() -> bool:
        cpu = await asyncio.to_thread(prometheus.values, cpu_now)
        return cpu.get(hot, 0) > 0.7 and cpu.get(cool, 0) > 0.15

    await wait_for(usage_shown, 30, "the pods' usage in Prometheus", interval=0.5)
    cpu = prometheus.values(cpu_now)
    assert cpu[hot] == pytest.approx(24 / 32, abs=0.01) and cpu[cool] == pytest.approx(
        5 / 32, abs=0.01
    )
    memory = prometheus.values(memory_now)
    assert memory == pytest.approx({hot: 64 / 256, cool: 34 / 256})
    per_mode = prometheus.values(
        f'count by (mode) (node_cpu_seconds_total{{instance="{hot}"}})', "mode"
    )
    assert per_mode == {"idle": 32, "user": 32}, "one series per cpu and mode, as node_exporter"

    # Volcano's own queries, unchanged but for the step: one sample, named by the node.
    for template, share in ((VOLCANO_NODE_CPU, 0.75), (VOLCANO_NODE_MEMORY, 0.25)):
        query = template.format(node=hot, window="1m", step="5s")
        samples = await prometheus.wait_query(query, 15)
        assert [s["metric"].get("instance") for s in samples] == [hot], samples
        assert 0 < float(samples[0]["value"][1]) <= share * 1.01  # an average since it began
    pod_cpu = await prometheus.wait_query(
        VOLCANO_POD_CPU.format(pod="busy", window="1m", step="5s"), 15
    )
    assert [(s["metric"]["namespace"], s["metric"]["pod"]) for s in pod_cpu] == [
        (kube.namespace, "busy")
    ]
    assert 0 < float(pod_cpu[0]["value"][1]) <= 24 * 1.01  # rate() extrapolates a little
    pod_memory = prometheus.query(VOLCANO_POD_MEMORY.format(pod="busy"))
    assert [float(s["value"][1]) for s in pod_memory] == [64 * 2**30]
    silent = prometheus.query(VOLCANO_POD_MEMORY.format(pod="silent"))
    assert [float(s["value"][1]) for s in silent] == [2 * 2**30], "it uses what it requests"

    # The busy pod goes: its node's usage falls to nothing.
    await request(
        kube.api, "DELETE", f"/api/v1/namespaces/{kube.namespace}/pods/busy",
        {"gracePeriodSeconds": 0},
    )  # fmt: skip

    async def idle() -> bool:
        return (await asyncio.to_thread(prometheus.values, cpu_now)).get(hot, 1) < 0.01

    await wait_for(idle, 30, f"{hot} idle once its pod is gone", interval=0.5)
    assert prometheus.values(memory_now)[hot] == 0
