"""Preempt and reclaim on the real control plane: evictions go through the Eviction API.

The scheduler runs with its own least-privilege ServiceAccount (deploy/scheduler/rbac.yaml)
and the configuration users copy from Volcano's docs (actions enqueue, allocate, preempt,
reclaim, backfill), from a file rather than the shared ConfigMap so other tests keep theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, watch

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
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _job(
    bed: Bed, name: str, queue: str, gpu: int, priority: str = "", size: int = 1
) -> list[dict[str, Any]]:
    """A PodGroup in ``queue`` (minMember 1) with ``size`` pods taking ``gpu`` GPUs each,
    named ``name`` (one pod) or ``name-<i>``. Volcano compares the PodGroups'
    priorities, so the class goes on the group and its pods."""
    names = [name] if size == 1 else [f"{name}-{i}" for i in range(size)]
    spec: dict[str, Any] = {"minMember": 1, "queue": queue}
    if priority:
        spec["priorityClassName"] = priority
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }
    pods = [bed.pod(pod, group=name, gpu=gpu) for pod in names]
    for pod in pods:
        pod["metadata"]["labels"] = {"app": queue}
        if priority:
            pod["spec"]["priorityClassName"] = priority
    return [group, *pods]


async def _live(bed: Bed) -> dict[str, dict[str, Any]]:
    """Pods not on their way out, by name."""
    return {
        p["metadata"]["name"]: p
        for p in await bed.pods()
        if not p["metadata"].get("deletionTimestamp")
    }


async def _fill(bed: Bed, queue: str, count: int, priority: str = "") -> list[str]:
    """One elastic job in ``queue`` (minMember 1) of ``count`` 8-GPU pods, one per node,
    all bound: the pods it runs beyond its minMember are the ones gang offers as victims."""
    await bed.submit(*_job(bed, queue, queue, 8, priority=priority, size=count))
    names = [f"{queue}-{i}" for i in range(count)]
    await bed.wait_bound(set(names), timeout=60)
    return names


class _Nominations:
    """Every ``status.nominatedNodeName`` a pod showed, read from a watch as ``kubectl get
    pod -w`` would: since Kubernetes 1.35 the API server clears the field when the pod is
    bound, so it can only be seen while the victims are leaving."""

    def __init__(self, bed: Bed, pod: str) -> None:
        self.seen: list[str] = []
        self._task = asyncio.create_task(self._watch(bed, pod))

    async def _watch(self, bed: Bed, pod: str) -> None:
        core = client.CoreV1Api(bed.kube.api)
        async with watch.Watch().stream(
            core.list_namespaced_pod,
            bed.kube.namespace,
            field_selector=f"metadata.name={pod}",
            timeout_seconds=120,
        ) as stream:
            async for event in stream:
                node = event["object"].status.nominated_node_name
                if node and node not in self.seen:
                    self.seen.append(node)

    async def close(self) -> list[str]:
        await asyncio.sleep(0.5)  # the last events of the watch
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        return self.seen


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
        nominations = _Nominations(bed, "claim")
        await bed.submit(*_job(bed, "claim", owner, 8))

        placed = await bed.wait_bound({"claim"}, timeout=60)
        live = await _live(bed)
        left = [n for n in taken if n in live]
        assert len(left) == len(taken) - 1, "one 8-GPU pod evicted for the owner's one"
        gone = next(n for n in taken if n not in live)
        assert await bed.wait_events(gone, {"Evict", "Preempted", "Killing"})
        assert await nominations.close() == [placed["claim"]], "nominated where it then ran"
        assert scheduler.alive()
    finally:
        scheduler.terminate()
        await _delete_queues(bed, lender, owner)


async def test_a_pod_protected_by_a_disruption_budget_is_not_evicted(bed: Bed) -> None:
    """The scheduler's configuration has no pdb plugin, so it picks a protected victim;
    the Eviction API refuses it, the scheduler logs the refusal and carries on."""
    shared = f"{bed.label}-shared"
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep-all"},
        "spec": {"minAvailable": len(bed.nodes), "selector": {"matchLabels": {"app": shared}}},
    }
    path = f"/apis/policy/v1/namespaces/{bed.kube.namespace}/poddisruptionbudgets"
    await request(bed.kube.api, "POST", path, budget)
    await bed.submit(_queue(shared))
    async with _priority_classes(bed) as (low, high):
        scheduler = _scheduler(bed, PREEMPT)
        try:
            names = await _fill(bed, shared, len(bed.nodes), priority=low)

            async def budget_counts_them() -> bool:
                got = await request(bed.kube.api, "GET", f"{path}/keep-all")
                return int(got.get("status", {}).get("currentHealthy", 0)) == len(names)

            await wait_for(budget_counts_them, 60, "the budget to count the pods")
            await bed.submit(*_job(bed, "urgent", shared, 8, priority=high))
            scheduler.wait_for_line("refused", timeout=60)
            await asyncio.sleep(3)  # more sessions: every eviction is refused again

            live = await _live(bed)
            assert all(live[n]["spec"].get("nodeName") for n in names), "no pod evicted"
            assert not live["urgent"]["spec"].get("nodeName"), "the urgent pod waits"
            told = [e["message"] for e in await bed.events_for("urgent")
                    if e["reason"] == "EvictionRefused"]  # fmt: skip
            assert told and all("keep-all" in m for m in told), told
            assert "refused" in told[0] and any(n in told[0] for n in names), told
            assert scheduler.alive()
        finally:
            scheduler.terminate()
            await _delete_queues(bed, shared)


@contextlib.asynccontextmanager
async def _priority_classes(bed: Bed) -> AsyncIterator[tuple[str, str]]:
    """A low (10) and a high (1000) PriorityClass of this test, deleted afterwards."""
    names = (f"{bed.label}-low", f"{bed.label}-high")
    collection = "/apis/scheduling.k8s.io/v1/priorityclasses"
    for name, value in zip(names, (10, 1000), strict=True):
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        await request(bed.kube.api, "POST", collection, body)
    try:
        yield names
    finally:
        for name in names:
            await request(bed.kube.api, "DELETE", f"{collection}/{name}")


async def test_high_priority_preempts_low_within_one_queue(bed: Bed) -> None:
    shared = f"{bed.label}-shared"
    await bed.submit(_queue(shared))
    async with _priority_classes(bed) as (low, high):
        scheduler = _scheduler(bed, PREEMPT)
        try:
            names = await _fill(bed, shared, len(bed.nodes), priority=low)
            nominations = _Nominations(bed, "urgent")
            await bed.submit(*_job(bed, "urgent", shared, 8, priority=high))

            placed = await bed.wait_bound({"urgent"}, timeout=60)
            live = await _live(bed)
            assert sum(1 for n in names if n in live) == len(names) - 1, "exactly one victim"
            seen = await nominations.close()
            assert seen == [placed["urgent"]], "nominated where it then ran"
        finally:
            scheduler.terminate()
            await _delete_queues(bed, shared)
