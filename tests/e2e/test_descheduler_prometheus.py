"""`asyncsched descheduler` on the bed with a real Prometheus: a node hot by the usage
Prometheus reports has pods evicted through the Eviction API until it is under its
targets, a pod its PodDisruptionBudget protects stays, the query window is the one asked
for (Prometheus' query log shows it), a Prometheus without usage series or none at all
means no eviction, and the descheduler's Grafana dashboard has series in every panel.

The descheduler runs with the token of its own ServiceAccount (deploy/descheduler/rbac.yaml).
The pods belong to ReplicaSets (the descheduler leaves bare pods alone, like Volcano's
DefaultEvictor) and are bound by the test to one node, as a scheduler would have before
a maintenance; no scheduler runs, so replacements stay Pending and the node cools down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Kube
from tests.e2e.kubeops import wait_for
from tests.e2e.procs import free_port
from tests.e2e.prometheus import Prometheus
from tests.e2e.scheduler_proc import ROOT, request
from tests.e2e.test_dashboards import wait_answered
from tests.e2e.test_descheduler import _install as install_descheduler_rbac
from tests.e2e.usage_exporter import USAGE
from tests.unit.test_dashboards import DASHBOARDS

CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}
# The bed scrapes every second: short windows keep the test short.
DASHBOARD = next(p for p in DASHBOARDS if p.stem == "descheduler")
WINDOW = ["--query-window", "6s", "--query-step", "1s", "--rate-window", "3s"]


@dataclass
class Hot:
    kube: Kube
    prometheus: Prometheus
    nodes: list[str]
    policy: Path
    logs: Path
    kubeconfig: Path

    @property
    def node(self) -> str:
        return self.nodes[0]

    async def pods(self) -> dict[str, dict[str, Any]]:
        """Live pods (not on their way out) by name."""
        path = f"/api/v1/namespaces/{self.kube.namespace}/pods"
        items = (await request(self.kube.api, "GET", path))["items"]
        return {
            p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")
        }

    async def on_node(self, app: str) -> set[str]:
        return {
            name
            for name, p in (await self.pods()).items()
            if p["metadata"]["labels"]["app"] == app and p["spec"].get("nodeName") == self.node
        }

    async def evict_events(self) -> list[dict[str, Any]]:
        path = f"/api/v1/namespaces/{self.kube.namespace}/events"
        items = (await request(self.kube.api, "GET", path))["items"]
        return [e for e in items if e["reason"] == "Evict"]

    def cpu(self) -> float:
        """The hot node's cpu usage now, as Prometheus has it."""
        query = (
            f'1 - avg by (instance) (irate(node_cpu_seconds_total{{mode="idle",'
            f'instance="{self.node}"}}[3s]))'
        )
        return self.prometheus.values(query).get(self.node, -1.0)

    def descheduler(self, *extra: str) -> list[str]:
        """The command line, under the descheduler's ServiceAccount."""
        return [
            sys.executable, "-m", "asyncsched", "-vv", "descheduler",
            "--policy-config-file", str(self.policy), "--kubeconfig", str(self.kubeconfig),
            "--metrics-port", "0", *extra,
        ]  # fmt: skip

    async def run(self, name: str, *extra: str, timeout: float = 60) -> tuple[int, str]:
        """One pass (no interval): exit code and output (also kept in logs/<name>.log)."""
        proc = await asyncio.create_subprocess_exec(
            *self.descheduler(*extra), cwd=ROOT, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        text = out.decode(errors="replace")
        (self.logs / f"{name}.log").write_text(text)
        assert proc.returncode is not None
        return proc.returncode, text

    async def start(self, log: Path, *extra: str) -> asyncio.subprocess.Process:
        """A descheduler passing every second until SIGTERM, logging to ``log``."""
        with log.open("wb") as out:
            return await asyncio.create_subprocess_exec(
                *self.descheduler("--descheduling-interval", "1s", *extra), cwd=ROOT,
                stdout=out, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip


async def stop(proc: asyncio.subprocess.Process) -> int:
    """SIGTERM, and its exit code."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    return await asyncio.wait_for(proc.wait(), 20)


def replica_set(name: str, replicas: int, usage: str, label: str) -> dict[str, Any]:
    """Pods no scheduler picks up (schedulerName volcano, none runs): the test binds them."""
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {USAGE: usage}},
                "spec": {
                    "schedulerName": "volcano", "nodeSelector": {"e2e": label},
                    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
                    "containers": [{"name": "main", "image": "busybox",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                },
            },
        },
    }  # fmt: skip


def policy(address: str, namespace: str) -> dict[str, Any]:
    """Seed 000's shape: LoadAware over Prometheus, with nodeFit."""
    return {
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
        "profiles": [{
            "name": "e2e",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {"nodeFit": True}},
                {"name": "LoadAware", "args": {
                    "metrics": {"type": "Prometheus", "address": address},
                    "evictableNamespaces": {"include": [namespace]},
                    "thresholds": {"cpu": 20, "memory": 90},
                    "targetThresholds": {"cpu": 60, "memory": 95},
                }},
            ],
            "plugins": {"balance": {"enabled": ["LoadAware"]}},
        }],
    }  # fmt: skip


@pytest.fixture
async def hot(kube: Kube, prometheus: Prometheus, tmp_path: Path) -> AsyncIterator[Hot]:
    """Three 32-cpu nodes; on the first, two `web` pods using 9 cpus each (a budget keeps
    both) and two `batch` pods using 5: 28 of 32 cpus (87.5%) against a 60% target."""
    label, ns = kube.namespace, kube.namespace
    nodes = await kube.bed.add_nodes(kube.api, 3, CAPACITY, {"e2e": label}, prefix=f"{label}-")
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy(prometheus.url, ns)))
    bed = Hot(kube, prometheus, nodes, path, tmp_path, await install_descheduler_rbac(kube))
    rs = f"/apis/apps/v1/namespaces/{ns}/replicasets"
    await request(kube.api, "POST", rs, replica_set("web", 2, "cpu=9,memory=4Gi", label))
    await request(kube.api, "POST", rs, replica_set("batch", 2, "cpu=5,memory=4Gi", label))
    budget = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
    }  # fmt: skip
    pdbs = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
    await request(kube.api, "POST", pdbs, budget)

    async def four_pods() -> bool:
        return len(await bed.pods()) == 4

    await wait_for(four_pods, 30, "the ReplicaSets' four pods")
    for name in await bed.pods():  # bound where a scheduler had put them before maintenance
        binding = {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": bed.node},
        }  # fmt: skip
        await request(kube.api, "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", binding)

    async def budget_counts_them() -> bool:
        got = await request(kube.api, "GET", f"{pdbs}/web")
        return int(got.get("status", {}).get("currentHealthy", 0)) == 2

    await wait_for(budget_counts_them, 30, "the budget to count the web pods")
    # The descheduler's own query: its averages hold only settled figures once the window
    # (and the rate's range) have passed since Prometheus first saw each node (a series
    # that begins inside a rate's range reads low, so a fresh node looks busy).
    window = (
        'avg_over_time(clamp_min(1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}'
        "[3s])), 0)[6s:1s])"
    )

    async def settled() -> bool:
        cpu = await asyncio.to_thread(prometheus.values, window)
        mine = [cpu.get(n, -1.0) for n in nodes]
        return abs(mine[0] - 28 / 32) < 0.01 and all(0 <= c < 0.01 for c in mine[1:])

    await wait_for(settled, 60, f"{bed.node} at 87.5% cpu over the window, the others idle", 1)
    yield bed
    for name in nodes:
        await request(kube.api, "DELETE", f"/api/v1/nodes/{name}")


async def test_hot_node_is_relieved_through_the_eviction_api_and_budgeted_pods_stay(
    hot: Hot,
) -> None:
    """The descheduler as deployed: passes every interval, /metrics scraped by Prometheus,
    whose answers fill every panel of deploy/dashboards/descheduler.json."""
    web, batch = await hot.on_node("web"), await hot.on_node("batch")
    port = free_port()
    hot.prometheus.scrape("descheduler", f"127.0.0.1:{port}")
    log = hot.logs / "descheduler.log"
    proc = await hot.start(log, "--metrics-host", "127.0.0.1", "--metrics-port", str(port), *WINDOW)
    try:

        async def evicted_two() -> bool:
            # The Event and the eviction are sent concurrently: wait for both.
            return len(await hot.evict_events()) >= 2 and not await hot.on_node("batch")

        await wait_for(evicted_two, 60, "two evictions, the batch pods gone")
        # web's pods use more and would go first, but the budget allows no disruption: both
        # batch pods go (87.5% -> 71.9% -> 56.3%, under the 60% target), through the API.
        assert await hot.on_node("web") == web, log.read_text()
        assert await hot.on_node("batch") == set(), log.read_text()
        events = await hot.evict_events()
        assert sorted(e["involvedObject"]["name"] for e in events) == sorted(batch), events
        assert all(hot.node in e["message"] for e in events), events

        async def cooled() -> bool:  # the two web pods' 18 cpus of 32
            return abs(await asyncio.to_thread(hot.cpu) - 18 / 32) < 0.01

        await wait_for(cooled, 20, f"{hot.node} at 56% cpu in Prometheus, under its 60% target")
        await wait_answered(hot.prometheus, [DASHBOARD], 30)
        assert len(await hot.evict_events()) == 2, "under its target, the node is left alone"
        assert proc.returncode is None, log.read_text()
    finally:
        code = await stop(proc)
    assert code == 0, log.read_text()[-3000:]


async def test_the_window_asked_for_is_the_query_sent_and_no_usage_means_no_eviction(
    hot: Hot, tmp_path: Path
) -> None:
    before = await hot.pods()
    for window in ("4s", "6s"):  # no longer than the one settled (a fresh node looks busy)
        code, out = await hot.run(
            f"dry-run-{window}", "--dry-run", "-o", "json", "--query-window", window,
            "--query-step", "1s", "--rate-window", "3s",
        )  # fmt: skip
        assert code == 0, out
        plan = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
        planned = {e["pod"].split("/")[-1] for e in plan["evictions"]}
        assert planned == await hot.on_node("batch"), plan
        logged = [q for q in hot.prometheus.queries_logged() if "node_cpu_seconds_total" in q]
        assert logged and f"[{window}:1s]" in logged[-1], logged[-3:]
    assert await hot.pods() == before, "a dry run evicts nothing"

    # A real Prometheus without usage series answers every query with nothing.
    empty = Prometheus(tmp_path / "empty-prometheus", hot.kube.bed.kubeconfig, usage=False)
    empty.start()
    try:
        code, out = await hot.run("empty", "--prometheus-url", empty.url, *WINDOW)
        asked = empty.queries_logged()
    finally:
        empty.stop()
    assert code == 0 and "no usage figures" in out, out
    assert any("node_cpu_seconds_total" in q for q in asked), asked
    assert await hot.pods() == before and not await hot.evict_events()

    # Prometheus unreachable: passes every second evict nothing, the process lives on.
    dead = f"http://127.0.0.1:{free_port()}"
    log = tmp_path / "unreachable.log"
    proc = await hot.start(log, "--prometheus-url", dead, *WINDOW)
    try:

        async def retried() -> bool:
            return log.read_text().count("evicts nothing") >= 3

        await wait_for(retried, 30, "three passes without usage figures")
        assert proc.returncode is None, log.read_text()
        assert await hot.pods() == before and not await hot.evict_events()
    finally:
        code = await stop(proc)
    text = log.read_text()
    assert code == 0, text
    assert "Traceback" not in text
