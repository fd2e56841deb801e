"""`asyncsched simulate --from-cluster` on the real control plane: a what-if.

The what-if runs as its own process with a ServiceAccount that may only get and
list, reads the cluster and deploy/'s scheduler ConfigMap, adds a pod from a
file, and says where the pending pods would go. The test then checks that it
wrote nothing (every object's resourceVersion is what it was), and that the real
scheduler, started afterwards, puts the pods where the what-if said.

The bed is shared: earlier tests' namespaces may still be on their way out, with
pending pods, PodGroups whose Queue is already gone and the like. Each test's pods
carry a schedulerName of its own, given to the what-if and to the scheduler with
--scheduler-name, so what is placed or waits (and the exit code) is its own pods',
while everything else in the cluster is still read and still takes its nodes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.conftest import Kube
from tests.e2e.kubeops import wait_for
from tests.e2e.scheduler_proc import (
    NAMESPACE,
    ROOT,
    SERVICE_ACCOUNT,
    SchedulerProcess,
    create,
    install_scheduler_manifests,
    request,
)

GROUP = "scheduling.k8s.io/group-name"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
READ = [
    ("", ["nodes", "pods", "configmaps"]),
    ("scheduling.volcano.sh", ["podgroups", "queues"]),
    ("scheduling.k8s.io", ["priorityclasses"]),
    ("policy", ["poddisruptionbudgets"]),
    ("topology.volcano.sh", ["hypernodes"]),
]
WATCHED = [
    "/api/v1/nodes",
    "/api/v1/pods",
    "/api/v1/configmaps",
    "/apis/scheduling.volcano.sh/v1beta1/podgroups",
    "/apis/scheduling.volcano.sh/v1beta1/queues",
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/policy/v1/poddisruptionbudgets",
]
"""Every kind the what-if reads (and the test namespace's Events, which a scheduler would
write). Leases are left out: KWOK renews its nodes' Leases all the time."""


def _scheduler(kube: Kube) -> str:
    """This test's schedulerName (see the module's docstring)."""
    return f"whatif-{kube.namespace}"


def _pod(
    name: str, label: str, cpu: str, group: str = "", scheduler: str = "volcano", **annotations: str
) -> dict[str, Any]:
    if group:
        annotations[GROUP] = group
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"e2e": label},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
    }  # fmt: skip


def _group(name: str, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name}, "spec": {"minMember": 1, "queue": queue},
    }  # fmt: skip


async def _versions(kube: Kube) -> dict[str, str]:
    return await _versions_of(kube, [*WATCHED, f"/api/v1/namespaces/{kube.namespace}/events"])


async def _versions_of(kube: Kube, paths: list[str]) -> dict[str, str]:
    """resourceVersion of every object of the WATCHED kinds, outside namespaces being
    deleted (what earlier tests left is still being torn down there)."""
    namespaces = await request(kube.api, "GET", "/api/v1/namespaces")
    going = {
        n["metadata"]["name"] for n in namespaces["items"] if n["status"].get("phase") != "Active"
    }
    found = {}
    for path in paths:
        for item in (await request(kube.api, "GET", path))["items"]:
            meta = item["metadata"]
            if meta.get("namespace") in going:
                continue
            key = f"{path} {meta.get('namespace', '')}/{meta['name']}"
            found[key] = meta["resourceVersion"]
    return found


async def _reader_kubeconfig(kube: Kube, name: str) -> Path:
    """A ServiceAccount that may get and list what the what-if reads, and nothing else."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [g], "resources": r, "verbs": ["get", "list"]} for g, r in READ],
    }  # fmt: skip
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "whatif", "namespace": kube.namespace}],
    }  # fmt: skip
    await create(kube.api, role)
    await create(kube.api, binding)
    return await kube.bed.service_account_kubeconfig(kube.api, kube.namespace, "whatif")


async def test_what_if_predicts_placements_and_leaves_the_cluster_untouched(
    kube: Kube, tmp_path: Path
) -> None:
    await install_scheduler_manifests(kube.api)  # the scheduler ConfigMap and default Queue
    label = kube.namespace
    roomy, busy = await kube.bed.add_nodes(
        kube.api, 2, {"cpu": "4", "memory": "64Gi", "pods": "110"}, labels={"e2e": label},
        prefix=f"{label}-",
    )  # fmt: skip
    reader = f"whatif-{label}"
    ns = kube.namespace
    mine = _scheduler(kube)
    try:
        # `busy` has 3 of its 4 CPUs taken by a pod bound to it; a gang of two 2-CPU pods
        # fits only on `roomy`; an 8-CPU pod fits nowhere.
        running = _pod("running", label, "3", scheduler=mine)
        running["spec"]["nodeName"] = busy
        await create(kube.api, running, ns)

        async def started() -> bool:
            pod = await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods/running")
            return bool(pod["status"].get("phase") == "Running")

        await wait_for(started, 30, "KWOK to start the bound pod")  # no status write later
        await create(kube.api, {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "gang"}, "spec": {"minMember": 2, "queue": "default"},
        }, ns)  # fmt: skip
        for i in range(2):
            await create(kube.api, _pod(f"gang-{i}", label, "2", group="gang", scheduler=mine), ns)
        await create(kube.api, _pod("huge", label, "8", scheduler=mine), ns)
        # Proposed: one more 1-CPU pod, five seconds later; only `busy` has room left then.
        later = {"simulation.asyncsched.io/submit-at": "5"}
        proposed = _pod("proposed", label, "1", scheduler=mine, **later)
        proposed["metadata"]["namespace"] = ns
        extra = tmp_path / "proposed.yaml"
        extra.write_text(yaml.safe_dump(proposed))
        kubeconfig = await _reader_kubeconfig(kube, reader)

        before = await _versions(kube)
        done = subprocess.run(
            [sys.executable, "-m", "asyncsched", "simulate", "--from-cluster",
             "-k", str(kubeconfig), "--scheduler-name", mine, "-f", str(extra), "-o", "json",
             "--until", "30"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        after = await _versions(kube)

        assert done.returncode == 4, done.stderr  # exit 4: `huge` can never be placed
        assert "Traceback" not in done.stderr
        assert after == before, "the what-if changed the cluster"
        what_if = json.loads(done.stdout)["whatIf"]
        assert what_if["configuration"] == (
            f"ConfigMap {NAMESPACE}/volcano-scheduler-configmap[volcano-scheduler.conf]"
        )
        ours = {r["pod"].split("/", 1)[1]: r for r in what_if["placed"] if r["pod"].startswith(ns)}
        assert {k: (r["node"], r["from"], r["at"]) for k, r in ours.items()} == {
            "gang-0": (roomy, "pending", 0),
            "gang-1": (roomy, "pending", 0),
            "proposed": (busy, "new", 5),
        }
        waiting = {r["pod"]: r for r in what_if["waiting"]}
        assert list(waiting) == [f"{ns}/huge"], waiting  # only this test's pods are placed
        assert "cpu" in waiting[f"{ns}/huge"]["reason"], waiting
        assert not [r for r in what_if["evicted"] if r["pod"].startswith(ns)]

        # Text output names the same placements.
        text = subprocess.run(
            [sys.executable, "-m", "asyncsched", "simulate", "--from-cluster",
             "-k", str(kubeconfig), "--scheduler-name", mine, "--until", "1"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert text.returncode == 4, text.stderr
        assert f"{ns}/gang-0 (pending)  -> {roomy} at t=0s" in text.stdout, text.stdout

        # The real scheduler does what the what-if said.
        sa = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
        scheduler = SchedulerProcess(
            sa, tmp_path / "scheduler.log", "whatif-check", "--scheduler-name", mine
        ).start()
        try:

            async def gang_bound() -> bool:
                pods = (await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods"))["items"]
                placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
                return bool(placed["gang-0"] and placed["gang-1"])

            await wait_for(gang_bound, 30, "the gang to be bound")
            pods = (await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods"))["items"]
            placed = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}
            assert placed == {"running": busy, "gang-0": roomy, "gang-1": roomy, "huge": ""}
        finally:
            scheduler.terminate()
    finally:
        for kind, name in (("clusterrolebindings", reader), ("clusterroles", reader)):
            await request(kube.api, "DELETE", f"{RBAC}/{kind}/{name}")
        for node in (roomy, busy):
            await request(kube.api, "DELETE", f"/api/v1/nodes/{node}")


async def test_what_if_reads_a_podgroup_whose_queue_was_deleted(kube: Kube, tmp_path: Path) -> None:
    """A Queue deleted while a PodGroup in it has a pod bound (the API server allows it, and
    so does Volcano's queue webhook unless its allocated-pods check is switched on; the
    PodGroup webhook looks at the queue only on create): the what-if still runs, says once
    that the scheduler skips that PodGroup, and still counts its pod on its node. The real
    scheduler, started afterwards, does the same."""
    await install_scheduler_manifests(kube.api)
    ns = label = kube.namespace
    mine = _scheduler(kube)
    held_node, other_node = await kube.bed.add_nodes(
        kube.api, 2, {"cpu": "4", "memory": "64Gi", "pods": "110"}, labels={"e2e": label},
        prefix=f"{label}-",
    )  # fmt: skip
    owner = f"{ns}-owner"
    queue_path = f"/apis/scheduling.volcano.sh/v1beta1/queues/{owner}"
    reader = f"whatif-{label}"
    try:
        await create(kube.api, {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": owner}, "spec": {"weight": 1},
        })  # fmt: skip
        await create(kube.api, _group("claim", owner), ns)
        # claim holds 3 of held_node's 4 CPUs; other_node has 1 of its 4 taken.
        held = _pod("held", label, "3", group="claim", scheduler=mine)
        held["spec"]["nodeName"] = held_node
        other = _pod("other", label, "1", scheduler=mine)
        other["spec"]["nodeName"] = other_node
        for pod in (held, other):
            await create(kube.api, pod, ns)

        async def running() -> bool:
            pods = (await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods"))["items"]
            return sum(p["status"].get("phase") == "Running" for p in pods) == 2

        await wait_for(running, 30, "KWOK to start the bound pods")
        await request(kube.api, "DELETE", queue_path)

        async def queue_gone() -> bool:
            try:
                await request(kube.api, "GET", queue_path)
            except ApiException as exc:
                return exc.status == 404
            return False

        await wait_for(queue_gone, 30, f"Queue {owner} to be deleted")
        # probe (2 CPUs) fits only on other_node while claim's pod counts; were held_node
        # empty, the least used node, it would go there.
        await create(kube.api, _group("probe", "default"), ns)
        await create(kube.api, _pod("probe", label, "2", group="probe", scheduler=mine), ns)
        # Another scheduler's pod that fits nowhere, as earlier tests may leave: not this
        # what-if's to place, so it neither waits in its answer nor makes it exit 4.
        await create(kube.api, _pod("stranger", label, "64"), ns)
        kubeconfig = await _reader_kubeconfig(kube, reader)

        before = await _versions(kube)
        done = subprocess.run(
            [sys.executable, "-m", "asyncsched", "simulate", "--from-cluster",
             "-k", str(kubeconfig), "--scheduler-name", mine, "-o", "json", "--until", "10"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        after = await _versions(kube)

        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert after == before, "the what-if changed the cluster"
        about = [line for line in done.stderr.splitlines() if f"{ns}/claim" in line]
        assert about == [
            f"asyncsched: warning: cluster: PodGroup {ns}/claim: spec.queue: queue {owner!r} "
            "does not exist: the scheduler skips this PodGroup, so its pending pods are not "
            "placed (its bound pods keep their nodes' resources)"
        ], done.stderr
        what_if = json.loads(done.stdout)["whatIf"]
        assert [(r["pod"], r["node"]) for r in what_if["placed"]] == [(f"{ns}/probe", other_node)]
        assert what_if["waiting"] == [], what_if["waiting"]
        assert not [r for r in what_if["evicted"] if r["pod"].startswith(ns)]

        # The real scheduler agrees: it skips claim, and probe goes to other_node.
        sa = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
        scheduler = SchedulerProcess(
            sa, tmp_path / "scheduler.log", "whatif-queue-gone", "--scheduler-name", mine
        ).start()
        try:

            async def probe_bound() -> bool:
                pod = await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods/probe")
                return bool(pod["spec"].get("nodeName"))

            await wait_for(probe_bound, 30, "the probe to be bound")
            pod = await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods/probe")
            assert pod["spec"]["nodeName"] == other_node
            said = f"job {ns}/claim names queue {owner!r}, which does not exist; skipped"
            assert said in scheduler.output(), scheduler.output()[-3000:]
        finally:
            scheduler.terminate()
    finally:
        for kind, name in (("clusterrolebindings", reader), ("clusterroles", reader)):
            with contextlib.suppress(ApiException):
                await request(kube.api, "DELETE", f"{RBAC}/{kind}/{name}")
        with contextlib.suppress(ApiException):  # gone already unless the test failed early
            await request(kube.api, "DELETE", queue_path)
        for node in (held_node, other_node):
            await request(kube.api, "DELETE", f"/api/v1/nodes/{node}")
