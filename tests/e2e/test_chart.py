"""The Helm chart installed on the real control plane with `helm install`, and run from.

KWOK runs no containers, so the test does what a kubelet would with the chart's
Deployments: for each, it materializes the pod's ConfigMap and Secret volumes
from the API into a directory, mints a token for the pod's ServiceAccount
(TokenRequest API) and runs the container's args as `python -m asyncsched ...`
with a kubeconfig carrying that token, and POD_NAME / POD_NAMESPACE set as the
downward API would. Everything else comes from the chart as installed: the
configuration file, the webhook certificate Helm generated, the leader Leases'
namespace and RBAC. The values set for the bed are `controllers.webhook.url`
(the API server reaches the webhook on loopback, not through a Service), free
ports for what would listen inside the pods, and the descheduler (off by default)
enabled with a one-second interval and a Prometheus address where nothing listens.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.conftest import Kube
from tests.e2e.kubeops import wait_for
from tests.e2e.procs import free_port
from tests.e2e.scheduler_proc import ROOT, SchedulerProcess, request

CHART = ROOT / "deploy" / "helm" / "asyncsched"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


class HostProcess(SchedulerProcess):
    """A Deployment's container run on the host (stop, kill and log helpers reused)."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path, identity: str) -> None:
        self.argv, self.env, self.log, self.identity = argv, env, log, identity
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> HostProcess:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env}, start_new_session=True,
            )  # fmt: skip
        return self


@dataclass
class Release:
    name: str
    namespace: str
    objects: dict[tuple[str, str], dict[str, Any]]
    processes: dict[str, HostProcess]

    def logs(self) -> str:
        return "\n".join(
            f"--- {name}\n{proc.output()[-3000:]}" for name, proc in self.processes.items()
        )


def _helm(kube: Kube, *args: str) -> str:
    done = subprocess.run(
        [str(kube.bed.bin_dir / "helm"), "--kubeconfig", str(kube.bed.kubeconfig), *args],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


async def _volume_files(kube: Kube, namespace: str, volume: dict[str, Any], where: Path) -> None:
    """What the kubelet would put in the volume's directory."""
    where.mkdir(parents=True)
    if "configMap" in volume:
        path = f"/api/v1/namespaces/{namespace}/configmaps/{volume['configMap']['name']}"
        for key, value in (await request(kube.api, "GET", path)).get("data", {}).items():
            (where / key).write_text(value)
    elif "secret" in volume:
        path = f"/api/v1/namespaces/{namespace}/secrets/{volume['secret']['secretName']}"
        for key, value in (await request(kube.api, "GET", path)).get("data", {}).items():
            (where / key).write_bytes(base64.b64decode(value))
            (where / key).chmod(0o600)
    else:
        assert "emptyDir" in volume, f"no stand-in for volume {volume}"


async def _host_process(
    kube: Kube, namespace: str, deployment: dict[str, Any], root: Path
) -> HostProcess:
    name = deployment["metadata"]["name"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts", []):
        local = root / name / mount["name"]
        await _volume_files(kube, namespace, volumes[mount["name"]], local)
        mounts[mount["mountPath"].rstrip("/") + "/"] = local

    def on_host(arg: str) -> str:
        prefix = max((m for m in mounts if arg.startswith(m)), key=len, default="")
        return str(mounts[prefix] / arg[len(prefix) :]) if prefix else arg

    args = [on_host(a) for a in container["args"]]
    kubeconfig = await kube.bed.service_account_kubeconfig(
        kube.api, namespace, pod["serviceAccountName"]
    )
    env = {}
    for var in container.get("env", []):
        field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        env[var["name"]] = {"metadata.name": f"{name}-host", "metadata.namespace": namespace}.get(
            field, var.get("value", "")
        )
    # The image's entry point is `asyncsched`; in-cluster credentials become a kubeconfig.
    argv = [sys.executable, "-m", "asyncsched", "-v", *args, "--kubeconfig", str(kubeconfig)]
    if args[0] == "controllers":
        argv += ["--webhook-host", "127.0.0.1"]
    return HostProcess(argv, env, root / f"{name}.log", f"{name}-host")


@pytest.fixture
async def release(kube: Kube, tmp_path: Path) -> AsyncIterator[Release]:
    suffix = uuid.uuid4().hex[:5]
    name, namespace = f"asyncsched-{suffix}", f"chart-{suffix}"
    webhook = free_port()
    values = {
        "controllers.webhook.url": f"https://127.0.0.1:{webhook}",
        "controllers.webhookPort": webhook,
        "metricsPort": free_port(),
        "controllers.metricsPort": free_port(),
        "descheduler.enabled": "true",
        "descheduler.metricsPort": free_port(),
        "descheduler.interval": "1s",
        "descheduler.prometheusAddress": f"http://127.0.0.1:{free_port()}",
    }
    sets = ",".join(f"{k}={v}" for k, v in values.items())
    release = Release(name, namespace, {}, {})
    _helm(kube, "install", name, str(CHART), "-n", namespace, "--create-namespace", "--set", sets)
    try:
        manifest = _helm(kube, "get", "manifest", name, "-n", namespace)
        release.objects = {
            (d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(manifest) if d
        }
        for (kind, _), obj in sorted(release.objects.items()):
            if kind == "Deployment":
                proc = await _host_process(kube, namespace, obj, tmp_path)
                release.processes[obj["metadata"]["name"]] = proc.start()
        yield release
    finally:
        for proc in release.processes.values():
            if proc.alive():
                proc.terminate()
        _helm(kube, "uninstall", name, "-n", namespace, "--wait")
        await request(kube.api, "DELETE", f"/api/v1/namespaces/{namespace}")


async def test_the_chart_installs_a_scheduler_and_controllers_that_run_a_job(
    kube: Kube, release: Release
) -> None:
    objects = release.objects
    name = release.name
    scheduler, controllers = f"{name}-scheduler", f"{name}-controllers"
    descheduler = f"{name}-descheduler"
    for component in (scheduler, controllers, descheduler):
        assert ("Deployment", component) in objects
        assert ("PodDisruptionBudget", component) in objects
    assert ("ConfigMap", "volcano-scheduler-configmap") in objects
    assert ("ConfigMap", descheduler) in objects
    assert ("Secret", f"{controllers}-webhook-tls") in objects
    for proc in release.processes.values():
        proc.wait_for_line("is now the leader", 60)

    # The descheduler runs passes with its ServiceAccount's RBAC (nothing to act on: the
    # chart's policy needs Prometheus, unreachable here) and answers its probes.
    release.processes[descheduler].wait_for_line("descheduling pass 2:", 60)
    (container,) = objects[("Deployment", descheduler)]["spec"]["template"]["spec"]["containers"]
    port = container["args"][container["args"].index("--metrics-port") + 1]
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            assert answer.status == 200, path

    # A Volcano Job, through the chart's webhooks (Helm's certificate) and controllers,
    # gang-scheduled by the chart's scheduler. KWOK completes a Job's pods once they run.
    ns = kube.namespace
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train"},
        "spec": {"schedulerName": "volcano", "minAvailable": 2, "tasks": [{
            "name": "worker", "replicas": 2, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            }},
        }]},
    }  # fmt: skip
    created = await request(kube.api, "POST", JOBS.format(ns=ns), job)
    assert created["spec"]["queue"] == "default" and created["spec"]["maxRetry"] == 3, (
        "the mutating webhook filled in Volcano's defaults"
    )

    async def completed() -> bool:
        state = (await request(kube.api, "GET", JOBS.format(ns=ns) + "/train")).get("status", {})
        return bool(state.get("state", {}).get("phase") == "Completed")

    try:
        await wait_for(completed, 60, "the Job to complete", interval=0.3)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{release.logs()}") from None
    pods = (await request(kube.api, "GET", f"/api/v1/namespaces/{ns}/pods"))["items"]
    assert len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods), pods
    gangs = {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods}
    assert len(gangs) == 1, "both pods in the Job's PodGroup (deleted with the Job's end)"

    # The validating Queue webhook answers too, with the chart's certificate.
    bad = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": f"bad-{release.namespace}"},
        "spec": {"capability": {"cpu": "2"}, "deserved": {"cpu": "4"}},
    }  # fmt: skip
    with pytest.raises(ApiException) as refused:
        await request(kube.api, "POST", QUEUES, bad)
    assert 'admission webhook \\"validatequeue.volcano.sh\\" denied' in str(refused.value.reason)

    for proc in release.processes.values():
        assert proc.alive(), release.logs()
        assert "forbidden" not in proc.output().lower(), release.logs()
