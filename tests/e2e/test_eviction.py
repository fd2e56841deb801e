"""Preempt and reclaim on the real control plane: evictions go through the Eviction API.

The scheduler runs with its own least-privilege ServiceAccount (deploy/scheduler/rbac.yaml)
and the configuration users copy from Volcano's docs (actions enqueue, allocate, preempt,
reclaim, backfill), from a file rather than the shared ConfigMap so other tests keep theirs.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from tests.e2e import test_scheduler
from tests.e2e.kubeops import wait_for
from tests.e2e.scheduler_proc import ROOT, SchedulerProcess, request
from tests.e2e.test_scheduler import Bed

SCENARIOS = ROOT / "tests" / "scenarios" / "yaml"
PREEMPT = SCENARIOS / "preempt-config.yaml"
CAPACITY_RECLAIM = SCENARIOS / "capacity-reclaim-config.yaml"
GPU = "nvidia.com/gpu"
bed = test_scheduler.bed  # the fixture: each test its own KWOK nodes


def _scheduler(bed: Bed, source: Path) -> SchedulerProcess:
    config = bed.logs / "scheduler.yaml"
    shutil.copy(source, config)
    proc = SchedulerProcess(bed.kubeconfig, bed.logs / "scheduler.log", "replica-a")
    at = proc.argv.index("--config-map")
    proc.argv[at : at + 2] = ["--config", str(config)]
    return proc.start()


def _queue(name: str, deserved_gpus: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1, "reclaimable": True}
    if deserved_gpus:
        spec["deserved"] = {GPU: str(deserved_gpus)}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name}, "spec": spec,
    }  # fmt: skip


def _job(bed: Bed, name: str, queue: str, gpu: int, priority: str = "") -> list[dict[str, Any]]:
    """A one-pod PodGroup in ``queue`` whose pod takes ``gpu`` GPUs. Volcano compares the
    PodGroups' priorities, so the class goes on both."""
    pod = bed.pod(name, group=name, gpu=gpu)
    pod["metadata"]["labels"] = {"app": queue}
    spec: dict[str, Any] = {"minMember": 1, "queue": queue}
    if priority:
        pod["spec"]["priorityClassName"] = spec["priorityClassName"] = priority
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name}, "spec": spec,
    }  # fmt: skip
    return [group, pod]


async def _live(bed: Bed) -> dict[str, dict[str, Any]]:
    """Pods not on their way out, by name."""
    return {
        p["metadata"]["name"]: p
        for p in await bed.pods()
        if not p["metadata"].get("deletionTimestamp")
    }


async def _fill(bed: Bed, queue: str, count: int) -> list[str]:
    """``count`` 8-GPU pods in ``queue``, one per node, all bound."""
    names = [f"{queue}-{i}" for i in range(count)]
    for name in names:
        await bed.submit(*_job(bed, name, queue, 8))
    await bed.wait_bound(set(names), timeout=60)
    return names


async def _wait_nominated(bed: Bed, pod: str, node: str) -> None:
    """The preemptor was nominated to the node it was then bound to."""

    deadline = asyncio.get_running_loop().time() + 20
    while True:
        status = (await _live(bed))[pod]["status"]
        if status.get("nominatedNodeName") == node:
            return
        assert asyncio.get_running_loop().time() < deadline, (
            f"{pod}: status.nominatedNodeName is {status.get('nominatedNodeName')!r}, not {node}"
        )
        await asyncio.sleep(0.2)


async def _delete_queues(bed: Bed, *names: str) -> None:
    for name in names:
        path = f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}"
        await request(bed.kube.api, "DELETE", path)


async def test_reclaim_takes_back_a_lent_share_through_the_eviction_api(bed: Bed) -> None:
    lender, owner = f"{bed.label}-lender", f"{bed.label}-owner"
    await bed.submit(_queue(lender, deserved_gpus=16), _queue(owner, deserved_gpus=32))
    scheduler = _scheduler(bed, CAPACITY_RECLAIM)
    try:
        # the lender's queue holds every GPU of the six nodes while the owner's is idle
        taken = await _fill(bed, lender, len(bed.nodes))
        await bed.submit(*_job(bed, "claim", owner, 8))

        placed = await bed.wait_bound({"claim"}, timeout=60)
        live = await _live(bed)
        left = [n for n in taken if n in live]
        assert len(left) == len(taken) - 1, "one 8-GPU pod evicted for the owner's one"
        gone = next(n for n in taken if n not in live)
        events = [e["reason"] for e in await bed.events_for(gone)]
        assert "Evict" in events or "Preempted" in events or "Killing" in events, events
        await _wait_nominated(bed, "claim", placed["claim"])
        assert scheduler.alive()
    finally:
        scheduler.terminate()
        await _delete_queues(bed, lender, owner)


async def test_a_pod_protected_by_a_disruption_budget_is_not_evicted(bed: Bed) -> None:
    lender, owner = f"{bed.label}-lender", f"{bed.label}-owner"
    await bed.submit(_queue(lender, deserved_gpus=16), _queue(owner, deserved_gpus=32))
    budget = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep-all"},
        "spec": {"minAvailable": len(bed.nodes), "selector": {"matchLabels": {"app": lender}}},
    }  # fmt: skip
    path = f"/apis/policy/v1/namespaces/{bed.kube.namespace}/poddisruptionbudgets"
    await request(bed.kube.api, "POST", path, budget)
    scheduler = _scheduler(bed, CAPACITY_RECLAIM)
    try:
        taken = await _fill(bed, lender, len(bed.nodes))

        async def budget_counts_them() -> bool:
            got = await request(bed.kube.api, "GET", f"{path}/keep-all")
            return int(got.get("status", {}).get("currentHealthy", 0)) == len(taken)

        await wait_for(budget_counts_them, 60, "the budget to count the lender's pods")
        await bed.submit(*_job(bed, "claim", owner, 8))
        scheduler.wait_for_line("refused", timeout=60)
        await asyncio.sleep(3)  # more sessions: every eviction is refused again

        live = await _live(bed)
        assert all(live[n]["spec"].get("nodeName") for n in taken), "no lender pod evicted"
        assert not live["claim"]["spec"].get("nodeName"), "the owner's pod waits"
        assert scheduler.alive()
    finally:
        scheduler.terminate()
        await _delete_queues(bed, lender, owner)


async def test_high_priority_preempts_low_within_one_queue(bed: Bed) -> None:
    shared = f"{bed.label}-shared"
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{bed.label}-{name}"},
            "value": value,
        }  # fmt: skip
        for name, value in (("low", 10), ("high", 1000))
    ]
    for pc in classes:
        await request(bed.kube.api, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc)
    await bed.submit(_queue(shared))
    scheduler = _scheduler(bed, PREEMPT)
    try:
        names = [f"low-{i}" for i in range(len(bed.nodes))]
        for name in names:
            await bed.submit(*_job(bed, name, shared, 8, priority=f"{bed.label}-low"))
        await bed.wait_bound(set(names), timeout=60)
        await bed.submit(*_job(bed, "urgent", shared, 8, priority=f"{bed.label}-high"))

        placed = await bed.wait_bound({"urgent"}, timeout=60)
        live = await _live(bed)
        assert sum(1 for n in names if n in live) == len(names) - 1, "exactly one victim"
        await _wait_nominated(bed, "urgent", placed["urgent"])
    finally:
        scheduler.terminate()
        await _delete_queues(bed, shared)
        for pc in classes:
            path = f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc['metadata']['name']}"
            await request(bed.kube.api, "DELETE", path)
