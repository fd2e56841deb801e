"""gpufrag against the real control plane: GPU pods placed where they fragment the cards
least, and where ``asyncsched simulate`` places them on the same input.

Three KWOK nodes of eight whole GPUs (``nvidia.com/gpu``); the scheduler's ConfigMap is
the shipped configuration with gpufrag appended, learning the workload from every
arrival (``gpufrag.refresh: 1``). Pods come one at a time: an 8-GPU pod fills a node; a
4-GPU pod half fills another; then a 1-GPU pod. The typical pods are now a third each of
8, 4 and 1 GPU: on the half-full node the 1-GPU pod makes 3 of its 4 idle GPUs useless
to a 4-GPU pod (which could use them before), on the free node it makes all 7 left
useless to an 8-GPU pod; so it goes beside the 4-GPU pod, and the last 8-GPU pod still
finds a whole node. Volcano's default node order alone (least requested) would have put
the 1-GPU pod on the free node and left the last pod waiting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from asyncsched.api import Pod
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation, load_manifests
from asyncsched.framework import Registry
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

GPUFRAG = """  - name: gpufrag
    arguments:
      gpufrag.refresh: 1
"""
SEQUENCE = (("full", 8), ("half", 4), ("one", 1), ("later", 8))
"""Pods in order of arrival: name, whole GPUs."""


def gpu_pod(label: str, name: str, gpus: int) -> dict[str, Any]:
    wants = {"nvidia.com/gpu": str(gpus)}
    return kwok_pod(label, name, {"cpu": "2", "memory": "8Gi", **wants}, wants)


def gpu_nodes(label: str) -> list[dict[str, Any]]:
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return [node_manifest(f"{label}-{i}"[:63], capacity, {"e2e": label}) for i in range(3)]


@pytest.fixture
async def nodes(kube: Kube) -> AsyncIterator[list[str]]:
    """Three 8-GPU KWOK nodes, and gpufrag in the scheduler's ConfigMap."""
    await install_scheduler_manifests(kube.api)
    shipped = (ROOT / "config" / "scheduler.yaml").read_text()
    await set_scheduler_config(kube.api, shipped.rstrip("\n") + "\n" + GPUFRAG)
    names = []
    for manifest in gpu_nodes(kube.namespace):
        await kube.core.create_node(manifest)
        names.append(manifest["metadata"]["name"])
    await wait_nodes_ready(kube.api, names)
    try:
        yield names
    finally:
        for name in names:
            await request(kube.api, "DELETE", f"/api/v1/nodes/{name}")
        await set_scheduler_config(kube.api, shipped)


async def _node_of(kube: Kube, name: str, timeout: float = 30) -> str:
    path = f"/api/v1/namespaces/{kube.namespace}/pods/{name}"

    async def bound() -> bool:
        return bool((await request(kube.api, "GET", path))["spec"].get("nodeName"))

    await wait_for(bound, timeout, f"pod {name} to be bound")
    node: str = (await request(kube.api, "GET", path))["spec"]["nodeName"]
    return node


def simulated(label: str, config: str, tmp_path: Path) -> dict[str, str]:
    """Where ``asyncsched simulate`` places the same pods, arriving a second apart."""
    documents = gpu_nodes(label)
    for at, (name, gpus) in enumerate(SEQUENCE):
        pod = gpu_pod(label, name, gpus)
        pod["metadata"]["namespace"] = label
        pod["metadata"]["annotations"] = {"simulation.asyncsched.io/submit-at": str(at)}
        documents.append(pod)
    manifest = tmp_path / "input.yaml"
    manifest.write_text(yaml.safe_dump_all(documents))
    conf = tmp_path / "config.yaml"
    conf.write_text(config)
    sim = Simulation(load_manifests([manifest]), ConfigSource(Registry(), conf))
    sim.run(until=10)
    return {p.metadata.name: p.spec.node_name for p in sim.store.list(Pod).values()}


async def test_gpufrag_keeps_a_whole_node_for_the_next_8_gpu_pod_as_the_simulator_does(
    kube: Kube, nodes: list[str], tmp_path: Path
) -> None:
    kubeconfig = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
    scheduler = SchedulerProcess(kubeconfig, tmp_path / "scheduler.log", "gpufrag").start()
    placed: dict[str, str] = {}
    try:
        for name, gpus in SEQUENCE:
            await create(kube.api, gpu_pod(kube.namespace, name, gpus), kube.namespace)
            placed[name] = await _node_of(kube, name)
        assert scheduler.alive()
    finally:
        scheduler.terminate()

    assert placed["one"] == placed["half"], "the 1-GPU pod goes beside the 4-GPU pod"
    assert len({placed["full"], placed["half"], placed["later"]}) == 3, placed
    assert set(placed.values()) == set(nodes)
    shipped = (ROOT / "config" / "scheduler.yaml").read_text()
    sim = simulated(kube.namespace, shipped.rstrip("\n") + "\n" + GPUFRAG, tmp_path)
    assert sim == placed, "the simulator decides as the scheduler did"
    without = simulated(kube.namespace, shipped, tmp_path)
    assert without["one"] not in (without["full"], without["half"]), "least requested spreads"
    assert not without["later"], "without gpufrag the last 8-GPU pod finds no whole node"
