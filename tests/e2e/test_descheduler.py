"""The descheduler process on the real control plane, with its own least-privilege
ServiceAccount (deploy/descheduler/rbac.yaml): without usage figures it evicts nothing,
says why, and keeps running.

The Prometheus end to end (a real Prometheus scraping usage, evictions until under the
targets) is tested with the Prometheus bed; here the "Prometheus" is either a closed port
or a real HTTP server that is not Prometheus (the descheduler's own /metrics endpoint).
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import yaml

from tests.e2e.conftest import Kube
from tests.e2e.procs import free_port
from tests.e2e.scheduler_proc import NAMESPACE, ROOT, SchedulerProcess, apply

DEPLOY = ROOT / "deploy" / "descheduler"
SERVICE_ACCOUNT = "asyncsched-descheduler"
POLICY = ROOT / "tests" / "scenarios" / "yaml" / "descheduler-seed000-policy.yaml"


async def _install(kube: Kube) -> Path:
    await apply(kube.api, {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": NAMESPACE}})  # fmt: skip
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") not in (None, "Deployment"):
                await apply(kube.api, doc)
    return await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)


def _descheduler(kubeconfig: Path, log: Path, prometheus: str, port: int) -> SchedulerProcess:
    proc = SchedulerProcess(kubeconfig, log, "descheduler-a")
    proc.argv = [
        proc.argv[0], "-m", "asyncsched.cli", "-v", "descheduler",
        "--kubeconfig", str(kubeconfig), "--policy-config-file", str(POLICY),
        "--prometheus-url", prometheus, "--descheduling-interval", "1s",
        "--metrics-port", str(port), "--metrics-host", "127.0.0.1",
    ]  # fmt: skip
    return proc.start()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return str(answer.read().decode())


async def _node_with_pods(kube: Kube) -> None:
    (node, *_) = (await kube.core.list_node()).items
    for i in range(2):
        await kube.core.create_namespaced_pod(kube.namespace, {
            "metadata": {"name": f"busy-{i}"},
            "spec": {"nodeName": node.metadata.name,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m"}}}]},
        })  # fmt: skip


async def test_unreachable_prometheus_evicts_nothing_and_stays_alive(
    kube: Kube, tmp_path: Path
) -> None:
    kubeconfig = await _install(kube)
    await _node_with_pods(kube)
    port = free_port()
    proc = _descheduler(
        kubeconfig, tmp_path / "descheduler.log", f"http://127.0.0.1:{free_port()}", port
    )
    try:
        await asyncio.to_thread(proc.wait_for_line, "descheduling pass 3:", 60)
        assert "unreachable" in proc.output()
        assert proc.alive()
        assert _get(f"http://127.0.0.1:{port}/healthz") == "ok"
        metrics = _get(f"http://127.0.0.1:{port}/metrics").splitlines()
        failures = [
            m for m in metrics if m.startswith("asyncsched_descheduler_usage_failures_total ")
        ]
        assert float(failures[0].split()[1]) >= 3
        assert not [m for m in metrics if m.startswith("asyncsched_descheduler_evictions_total{")]
        pods = (await kube.core.list_namespaced_pod(kube.namespace)).items
        assert sorted(p.metadata.name for p in pods) == ["busy-0", "busy-1"]
        assert all(p.metadata.deletion_timestamp is None for p in pods)
    finally:
        code = proc.terminate()
    assert code == 0, proc.output()[-2000:]


async def test_an_answer_that_is_not_prometheus_evicts_nothing(kube: Kube, tmp_path: Path) -> None:
    kubeconfig = await _install(kube)
    port = free_port()
    # Its own /metrics server answers /api/v1/query with a 404 page, not Prometheus JSON.
    proc = _descheduler(kubeconfig, tmp_path / "d.log", f"http://127.0.0.1:{port}", port)
    try:
        await asyncio.to_thread(proc.wait_for_line, "no JSON answer", 60)
        await asyncio.to_thread(proc.wait_for_line, "descheduling pass 2:", 30)
        assert proc.alive()
        assert "Evict" not in proc.output()
    finally:
        code = proc.terminate()
    assert code == 0, proc.output()[-2000:]
