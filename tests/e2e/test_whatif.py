"""`asyncsched simulate --from-cluster` on the real control plane: a what-if.

The what-if runs as its own process with a ServiceAccount that may only get and
list, reads the cluster and deploy/'s scheduler ConfigMap, adds a pod from a
file, and says where the pending pods would go. The test then checks that it
wrote nothing (every object's resourceVersion is what it was), and that the real
scheduler, started afterwards, puts the pods where the what-if said.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

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


def _pod(name: str, label: str, cpu: str, group: str = "", **annotations: str) -> dict[str, Any]:
    if group:
        annotations[GROUP] = group
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "schedulerName": "volcano",
            "nodeSelector": {"e2e": label},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
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
    try:
        # `busy` has 3 of its 4 CPUs taken by a pod bound to it; a gang of two 2-CPU pods
        # fits only on `roomy`; an 8-CPU pod fits nowhere.
        running = _pod("running", label, "3")
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
            await create(kube.api, _pod(f"gang-{i}", label, "2", group="gang"), ns)
        await create(kube.api, _pod("huge", label, "8"), ns)
        # Proposed: one more 1-CPU pod, five seconds later; only `busy` has room left then.
        proposed = _pod("proposed", label, "1", **{"simulation.asyncsched.io/submit-at": "5"})
        proposed["metadata"]["namespace"] = ns
        extra = tmp_path / "proposed.yaml"
        extra.write_text(yaml.safe_dump(proposed))
        kubeconfig = await _reader_kubeconfig(kube, reader)

        before = await _versions(kube)
        done = subprocess.run(
            [sys.executable, "-m", "asyncsched", "simulate", "--from-cluster",
             "-k", str(kubeconfig), "-f", str(extra), "-o", "json", "--until", "30"],
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
        assert "cpu" in waiting[f"{ns}/huge"]["reason"], waiting
        assert not [r for r in what_if["evicted"] if r["pod"].startswith(ns)]

        # Text output names the same placements.
        text = subprocess.run(
            [sys.executable, "-m", "asyncsched", "simulate", "--from-cluster",
             "-k", str(kubeconfig), "--until", "1"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert text.returncode == 4, text.stderr
        assert f"{ns}/gang-0 (pending)  -> {roomy} at t=0s" in text.stdout, text.stdout

        # The real scheduler does what the what-if said.
        sa = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
        scheduler = SchedulerProcess(sa, tmp_path / "scheduler.log", "whatif-check").start()
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
