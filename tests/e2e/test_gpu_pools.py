"""Queue quotas in cards of each model against the real control plane: a KWOK node whose
cards are A100s (GPU feature discovery's label, cards reported as nvidia.com/gpu), a queue
capable of 2 nvidia.com/a100, and the scheduler configured with deviceshare's
``deviceshare.ModelResources``: its nvidia.com/gpu pods get 2 cards, the third is reported
Unschedulable with the reason, and the queue metric shows 2 A100 cards allocated."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Kube
from tests.e2e.kubeops import kwok_pod, node_manifest, wait_for, wait_nodes_ready
from tests.e2e.scheduler_proc import (
    NAMESPACE,
    ROOT,
    SERVICE_ACCOUNT,
    SchedulerProcess,
    create,
    install_scheduler_manifests,
    request,
    set_scheduler_config,
)

POOLS = """  - name: deviceshare
    arguments:
      deviceshare.ModelResources: [nvidia.com/a100, nvidia.com/h100]
"""
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def gpu_pod(label: str, queue: str, name: str) -> dict[str, Any]:
    queued = {"scheduling.volcano.sh/queue-name": queue}
    requests = {"cpu": "1", "memory": "1Gi"}
    return kwok_pod(label, name, requests, {"nvidia.com/gpu": "1"}, queued)


@pytest.fixture
async def a100_node(kube: Kube) -> AsyncIterator[tuple[str, str]]:
    """A KWOK node with 4 A100s, a queue capable of 2 of them, and the pools configured."""
    await install_scheduler_manifests(kube.api)
    shipped = (ROOT / "config" / "scheduler.yaml").read_text()
    await set_scheduler_config(kube.api, shipped.rstrip("\n") + "\n" + POOLS)
    name = f"{kube.namespace}-a100"[:63]
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4"}
    labels = {"e2e": kube.namespace, "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    await kube.core.create_node(node_manifest(name, capacity, labels))
    await wait_nodes_ready(kube.api, [name])
    queue = f"{kube.namespace}-team-b"[:63]
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": queue},
        "spec": {"weight": 1, "capability": {"nvidia.com/a100": "2"}},
    }  # fmt: skip
    await request(kube.api, "POST", QUEUES, body)
    try:
        yield name, queue
    finally:
        await request(kube.api, "DELETE", f"/api/v1/nodes/{name}")
        await request(kube.api, "DELETE", f"{QUEUES}/{queue}")
        await set_scheduler_config(kube.api, shipped)


async def _pods(kube: Kube) -> dict[str, dict[str, Any]]:
    listed = await request(kube.api, "GET", f"/api/v1/namespaces/{kube.namespace}/pods")
    return {p["metadata"]["name"]: p for p in listed["items"]}


async def test_generic_gpu_pods_get_no_more_a100s_than_their_queues_capability(
    kube: Kube, a100_node: tuple[str, str], tmp_path: Path
) -> None:
    node, queue = a100_node
    kubeconfig = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    extra = ("--metrics-host", "127.0.0.1", "--metrics-port", str(port))
    scheduler = SchedulerProcess(kubeconfig, tmp_path / "s.log", "replica-a", *extra).start()
    try:
        for i in range(3):
            await create(kube.api, gpu_pod(kube.namespace, queue, f"g{i}"), kube.namespace)

        async def settled() -> bool:
            pods = await _pods(kube)
            bound = [p for p in pods.values() if p["spec"].get("nodeName")]
            refused = [
                p
                for p in pods.values()
                if any(
                    c["type"] == "PodScheduled" and c["status"] == "False"
                    for c in p.get("status", {}).get("conditions", [])
                )
            ]
            return len(bound) == 2 and len(refused) == 1

        await wait_for(settled, 60, "two pods bound and one refused")
        pods = await _pods(kube)
        assert {p["spec"].get("nodeName") for p in pods.values()} == {node, None}
        (waiting,) = [p for p in pods.values() if not p["spec"].get("nodeName")]
        (condition,) = [c for c in waiting["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert condition["reason"] == "Unschedulable"
        assert (
            f"queue {queue} would be over its capability of 2 nvidia.com/a100"
            in (condition["message"])
        ), condition

        series = (
            f'volcano_queue_allocated_scalar_resources{{queue_name="{queue}",'
            'resource="nvidia.com/a100"}'
        )

        async def reported() -> bool:
            url = f"http://127.0.0.1:{port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as answer:
                text: str = answer.read().decode()
            return any(line.startswith(series) and line.endswith(" 2000.0") for line in
                       text.splitlines())  # fmt: skip

        await wait_for(reported, 30, "the queue's A100 cards in its allocated metric")
        assert scheduler.alive()
    finally:
        scheduler.terminate()
