"""Running the real `asyncsched scheduler` process against the test bed, as deploy/ installs it.

The scheduler runs as its own OS process with a token of the ServiceAccount
from deploy/scheduler/ (never as admin), so RBAC is part of every test, and
tests can kill it (SIGKILL) or stop it (SIGTERM) like a kubelet would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "scheduler"
NAMESPACE = "asyncsched-system"
SERVICE_ACCOUNT = "asyncsched-scheduler"
CONFIG_MAP_NAME = "volcano-scheduler-configmap"
CONFIG_KEY = "volcano-scheduler.conf"
CONFIG_MAP = f"{NAMESPACE}/{CONFIG_MAP_NAME}"
CONFIG_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIG_MAP_NAME}"

_PATHS = {
    ("v1", "Namespace"): "/api/v1/namespaces",
    ("v1", "ServiceAccount"): "/api/v1/namespaces/{ns}/serviceaccounts",
    ("v1", "ConfigMap"): "/api/v1/namespaces/{ns}/configmaps",
    ("v1", "Service"): "/api/v1/namespaces/{ns}/services",
    ("v1", "Pod"): "/api/v1/namespaces/{ns}/pods",
    ("apps/v1", "Deployment"): "/apis/apps/v1/namespaces/{ns}/deployments",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"):
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"):
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    ("rbac.authorization.k8s.io/v1", "Role"):
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"):
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    ("scheduling.volcano.sh/v1beta1", "PodGroup"):
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups",
    ("scheduling.volcano.sh/v1beta1", "Queue"): "/apis/scheduling.volcano.sh/v1beta1/queues",
    ("scheduling.k8s.io/v1", "PriorityClass"): "/apis/scheduling.k8s.io/v1/priorityclasses",
    ("policy/v1", "PodDisruptionBudget"):
        "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
}  # fmt: skip


async def request(
    api: ApiClient, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> dict[str, Any]:
    response = await api.call_api(
        path, method, body=body, header_params={"Content-Type": content_type,
                                                "Accept": "application/json"},
        auth_settings=["BearerToken"], _preload_content=False,
    )  # fmt: skip
    try:
        body = await response.read()
    finally:
        response.release()
    if response.status >= 300:
        raise ApiException(status=response.status, reason=body.decode(errors="replace")[:500])
    data: dict[str, Any] = json.loads(body) if body else {}
    return data


async def set_scheduler_config(api: ApiClient, text: str) -> None:
    """Put ``text`` in the scheduler's ConfigMap (the scheduler reads it on its next session)."""
    patch = {"data": {CONFIG_KEY: text}}
    await request(api, "PATCH", CONFIG_PATH, patch, "application/merge-patch+json")


def collection(obj: dict[str, Any], namespace: str | None = None) -> str:
    template = _PATHS[(obj["apiVersion"], obj["kind"])]
    ns = obj.get("metadata", {}).get("namespace") or namespace or "default"
    return template.format(ns=ns)


async def create(api: ApiClient, obj: dict[str, Any], namespace: str | None = None) -> None:
    if namespace and "{ns}" in _PATHS[(obj["apiVersion"], obj["kind"])]:
        obj.setdefault("metadata", {})["namespace"] = namespace
    await request(api, "POST", collection(obj, namespace), obj)


async def apply(api: ApiClient, obj: dict[str, Any]) -> None:
    """Create, or replace what is there (keeping its resourceVersion)."""
    try:
        await create(api, obj)
    except ApiException as exc:
        if exc.status != 409:
            raise
        path = f"{collection(obj)}/{obj['metadata']['name']}"
        current = await request(api, "GET", path)
        obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await request(api, "PUT", path, obj)


async def install_scheduler_manifests(api: ApiClient) -> None:
    """Apply deploy/scheduler/ exactly as shipped (the Deployment's pods stay unscheduled:
    no default scheduler runs in the bed, and the scheduler under test runs as a process)."""
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                await apply(api, doc)


class SchedulerProcess:
    """One `asyncsched scheduler` replica, logging to a file."""

    def __init__(self, kubeconfig: Path, log: Path, identity: str, *extra: str) -> None:
        self.argv = [
            sys.executable, "-m", "asyncsched.cli", "-v", "scheduler",
            "--kubeconfig", str(kubeconfig), "--identity", identity,
            "--config-map", CONFIG_MAP, "--metrics-port", "0", *extra,
        ]  # fmt: skip
        self.log = log
        self.identity = identity
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SchedulerProcess:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
            )  # fmt: skip
        return self

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as when a node dies."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self, timeout: float = 20) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for_line(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.output():
            if not self.alive():
                raise AssertionError(f"scheduler exited:\n{self.output()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {needle!r} in scheduler log:\n{self.output()[-3000:]}")
            time.sleep(0.1)
