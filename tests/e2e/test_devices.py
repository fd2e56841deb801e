"""vGPU sharing against the real control plane: KWOK nodes registered as HAMi's device
plugin registers them, pods bound with the cards written on them first, and cards never
oversubscribed across a scheduler restart (the usage is rebuilt from the pods)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, watch

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

IDS = "volcano.sh/vgpu-ids-new"
CARD_MIB = 40960
DEVICESHARE = """  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
"""


def register(node: str) -> str:
    return "".join(f"GPU-{node}-{i},4,{CARD_MIB},NVIDIA-A100,true,hami-core:" for i in range(2))


def vgpu_pod(label: str, name: str, memory: int, cores: int) -> dict[str, Any]:
    wants = {
        "volcano.sh/vgpu-number": "1",
        "volcano.sh/vgpu-memory": str(memory),
        "volcano.sh/vgpu-cores": str(cores),
    }
    return kwok_pod(label, name, {"cpu": "1", "memory": "1Gi", **wants}, wants)


@pytest.fixture
async def gpu_node(kube: Kube) -> AsyncIterator[str]:
    """One KWOK node with two 40 GiB cards, and deviceshare in the scheduler's ConfigMap."""
    await install_scheduler_manifests(kube.api)
    shipped = (ROOT / "config" / "scheduler.yaml").read_text()
    await set_scheduler_config(kube.api, shipped.rstrip("\n") + "\n" + DEVICESHARE)
    name = f"{kube.namespace}-gpu"[:63]
    capacity = {
        "cpu": "32", "memory": "256Gi", "pods": "110",
        "volcano.sh/vgpu-number": "8",
        "volcano.sh/vgpu-memory": str(2 * CARD_MIB),
        "volcano.sh/vgpu-cores": "200",
    }  # fmt: skip
    manifest = node_manifest(name, capacity, {"e2e": kube.namespace})
    manifest["metadata"]["annotations"]["volcano.sh/node-vgpu-register"] = register(name)
    await kube.core.create_node(manifest)
    await wait_nodes_ready(kube.api, [name])
    try:
        yield name
    finally:
        await request(kube.api, "DELETE", f"/api/v1/nodes/{name}")
        await set_scheduler_config(kube.api, shipped)


async def _pods(kube: Kube) -> dict[str, dict[str, Any]]:
    listed = await request(kube.api, "GET", f"/api/v1/namespaces/{kube.namespace}/pods")
    return {p["metadata"]["name"]: p for p in listed["items"]}


def _held(pods: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """Per card: (MiB, cores, pods) held by the bound pods, read from their annotations."""
    held: dict[str, tuple[int, int, int]] = {}
    for pod in pods.values():
        if not pod["spec"].get("nodeName"):
            continue
        for card in pod["metadata"].get("annotations", {}).get(IDS, "").split(":"):
            if card:
                uuid, _, mib, cores = card.split(",")
                m, c, n = held.get(uuid, (0, 0, 0))
                held[uuid] = (m + int(mib), c + int(cores), n + 1)
    return held


async def _bound(kube: Kube, names: set[str], timeout: float = 30) -> dict[str, dict[str, Any]]:
    async def done() -> bool:
        pods = await _pods(kube)
        return all(pods.get(n, {}).get("spec", {}).get("nodeName") for n in names)

    await wait_for(done, timeout, f"pods {sorted(names)} to be bound")
    return await _pods(kube)


async def test_shared_cards_are_written_before_the_bind_and_never_oversubscribed_across_restarts(
    kube: Kube, gpu_node: str, tmp_path: Path
) -> None:
    kubeconfig = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
    versions: list[tuple[str, bool, str]] = []
    """Every version of every pod the watch saw: (name, has the cards, nodeName)."""

    async def record() -> None:
        stream = watch.Watch().stream(
            client.CoreV1Api(kube.api).list_namespaced_pod, kube.namespace, timeout_seconds=120
        )
        async for event in stream:
            pod = event["object"]
            notes = pod.metadata.annotations or {}
            versions.append((pod.metadata.name, IDS in notes, pod.spec.node_name or ""))

    watcher = asyncio.create_task(record())
    first = SchedulerProcess(kubeconfig, tmp_path / "a.log", "replica-a").start()
    try:
        # Three 20 GiB pods: two share one card, the third goes on the other.
        for i in range(3):
            await create(kube.api, vgpu_pod(kube.namespace, f"s{i}", 20000, 30), kube.namespace)
        pods = await _bound(kube, {"s0", "s1", "s2"})
    finally:
        first.kill()
    held = _held(pods)
    assert sorted(n for _, _, n in held.values()) == [1, 2], held
    notes = pods["s0"]["metadata"]["annotations"]
    assert notes["volcano.sh/vgpu-node"] == gpu_node
    assert notes["volcano.sh/devices-to-allocate"] == notes[IDS]

    # Room left: 20960 MiB on one card, 960 on the other; 21920 on the node. A 21000 MiB
    # pod fits the node's total but no card, and must wait; a restarted scheduler that
    # did not rebuild the cards' use from the pods would bind it.
    await create(kube.api, vgpu_pod(kube.namespace, "too-big", 21000, 10), kube.namespace)
    second = SchedulerProcess(kubeconfig, tmp_path / "b.log", "replica-b").start()
    try:

        async def refused() -> bool:
            pod = (await _pods(kube))["too-big"]
            conditions = pod.get("status", {}).get("conditions", [])
            return any(c["type"] == "PodScheduled" for c in conditions)

        await wait_for(refused, 30, "too-big to be found unschedulable")
        await asyncio.sleep(2)  # several more sessions
        pods = await _pods(kube)
        assert not pods["too-big"]["spec"].get("nodeName"), "no card has 21000 MiB free"
        scheduled = next(
            c for c in pods["too-big"]["status"]["conditions"] if c["type"] == "PodScheduled"
        )
        assert "not enough room on the GPUs" in scheduled["message"], scheduled
        # A 20000 MiB pod fits the emptier card, beside the pod already there.
        await create(kube.api, vgpu_pod(kube.namespace, "fits", 20000, 10), kube.namespace)
        pods = await _bound(kube, {"fits"})
        held = _held(pods)
        assert sorted(n for _, _, n in held.values()) == [2, 2], held
        for uuid, (mib, cores, _) in held.items():
            assert mib <= CARD_MIB and cores <= 100, (uuid, mib, cores)
        assert second.alive()
    finally:
        second.terminate()
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher

    for name in ("s0", "s1", "s2", "fits"):
        seen = [(cards, node) for pod, cards, node in versions if pod == name]
        assert seen, f"the watch saw no version of {name}"
        first_bound = next((cards for cards, node in seen if node), None)
        assert first_bound, f"{name}: bound without its cards written ({seen})"
        assert any(cards and not node for cards, node in seen), (
            f"{name}: cards written on the pod before the bind ({seen})"
        )
