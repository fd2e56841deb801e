"""A real control plane on loopback for the e2e tests: etcd, kube-apiserver (TLS, RBAC,
ServiceAccount tokens), kube-controller-manager and KWOK with fake nodes. No kube-scheduler:
pods stay Pending until asyncsched (or a test) binds them.

By hand, from the repository root:

    python -m tests.e2e.testbed start --dir /tmp/asyncsched-bed --nodes 6 \\
        --node-capacity cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110
    KUBECONFIG=/tmp/asyncsched-bed/admin.kubeconfig kubectl get nodes
    python -m tests.e2e.testbed stop --dir /tmp/asyncsched-bed

Every process runs in its own process group (killed as a group on stop) and logs to
<dir>/<component>.log; <dir>/bed.json records ports and pids.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e import certs, kubeops
from tests.e2e.procs import Component, StartupError, free_port, tail, wait_http

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "hack" / "build-control-plane.sh"
CRD_DIR = ROOT / "deploy" / "crds"
KEEP_RUNNING = "e2e.asyncsched.io/keep-running"
"""A pod annotated so stays Running: KWOK's pod-complete stage finishes every Running pod
a Job owns at once, and a test of preemption needs a Volcano Job's pods to run on."""
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
SERVICE_CIDR = "10.96.0.0/16"
T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Runs a coroutine to completion from sync code, even inside a running event loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def build_binaries(log: Path) -> Path:
    """Runs hack/build-control-plane.sh (returns at once when cached); the bin directory."""
    with log.open("ab") as out:
        done = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=out)
    if done.returncode != 0:
        raise StartupError(
            f"{BUILD_SCRIPT.name} failed (rc={done.returncode}); the e2e tests need the real "
            f"control-plane binaries and a Go toolchain to build them once.\n"
            f"--- {log} ---\n{tail(log)}"
        )
    return Path(done.stdout.decode().strip().splitlines()[-1])


class Testbed:
    __test__ = False  # not a pytest test class

    def __init__(
        self,
        directory: Path,
        nodes: int = 6,
        capacity: Mapping[str, str] = DEFAULT_CAPACITY,
        node_labels: Mapping[str, str] | None = None,
        node_taints: Sequence[Mapping[str, str]] = (),
        die_with_parent: bool = True,
    ) -> None:
        self.dir = directory.resolve()
        self.nodes, self.capacity = nodes, dict(capacity)
        self.node_labels, self.node_taints = dict(node_labels or {}), list(node_taints)
        self.die_with_parent = die_with_parent
        self.components: dict[str, Component] = {}
        self.ports: dict[str, int] = {}
        self.bin_dir = Path()
        self.node_names: list[str] = []
        self.startup_seconds = 0.0

    # paths
    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:  # self-signed by kube-apiserver in --cert-dir
        return self.dir / "pki" / "apiserver" / "apiserver.crt"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def state_file(self) -> Path:
        return self.dir / "bed.json"

    # lifecycle
    def start(self) -> Testbed:
        began = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.bin_dir = build_binaries(self.dir / "build.log")
        if self.state_file.exists():
            Testbed.load(self.dir).stop()  # a bed left running in this directory
        for stale in ("etcd-data", "pki"):
            shutil.rmtree(self.dir / stale, ignore_errors=True)
        for pattern in ("*.log", "*.kubeconfig"):
            for path in self.dir.glob(pattern):
                if path.name != "build.log":
                    path.unlink()
        (self.dir / "pki" / "apiserver").mkdir(parents=True)
        sa_key, tokens = self.dir / "pki" / "sa.key", self.dir / "pki" / "tokens.csv"
        certs.write_service_account_key(sa_key)
        token = certs.write_token_file(tokens)
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "kwok"):
            self.ports[name] = free_port()

        etcd_url = f"http://127.0.0.1:{self.ports['etcd']}"
        peer_url = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        etcd = self._launch("etcd", [
            f"--data-dir={self.dir / 'etcd-data'}", f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}", f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}", f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync",
        ])  # fmt: skip
        wait_http(etcd, f"{etcd_url}/health", lambda b: b'"health":"true"' in b, 30)

        self._launch("kube-apiserver", [
            f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1", f"--secure-port={self.ports['apiserver']}",
            f"--cert-dir={self.ca_file.parent}", f"--token-auth-file={tokens}",
            "--authorization-mode=Node,RBAC", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={sa_key}",
            f"--service-account-signing-key-file={sa_key}",
            "--endpoint-reconciler-type=none", "--allow-privileged=true", "--profiling=false",
        ])  # fmt: skip
        self._wait_apiserver(token)
        certs.write_kubeconfig(self.kubeconfig, self.server, self.ca_file, token, "admin")
        # Volcano's kinds before the controller-manager: its garbage collector learns the
        # kinds it watches at start, and one that appears later only at its next discovery
        # (every 30 s); until then a deleted Job's pods stay, and the retries back off.
        self._provisioning(self._install_crds())

        kcm = self._launch("kube-controller-manager", [
            f"--kubeconfig={self.kubeconfig}", f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            f"--service-account-private-key-file={sa_key}", f"--root-ca-file={self.ca_file}",
            "--controllers=*,-nodeipam", "--leader-elect=false", "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['controller-manager']}",
            "--kube-api-qps=200", "--kube-api-burst=400", "--profiling=false",
        ])  # fmt: skip
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        wait_http(
            kcm, f"https://127.0.0.1:{self.ports['controller-manager']}/healthz",
            lambda b: b == b"ok", 60, context=insecure,
        )  # fmt: skip

        stage_files = sorted((self.bin_dir / "stages").glob("*.yaml"))
        stages = [
            str(self._held_running(p) if p.name == "pod-complete.yaml" else p)
            for p in stage_files
            if "\nkind: Stage\n" in p.read_text()
        ]
        kwok = self._launch("kwok", [
            f"--kubeconfig={self.kubeconfig}", *(f"--config={s}" for s in stages),
            "--manage-all-nodes=false", "--node-lease-duration-seconds=40",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--server-address=127.0.0.1:{self.ports['kwok']}",
        ])  # fmt: skip
        wait_http(kwok, f"http://127.0.0.1:{self.ports['kwok']}/healthz", lambda b: True, 30)
        self._save()
        self.node_names = self._provisioning(self._provision())
        self._save()

    def _provisioning(self, work: Coroutine[Any, Any, T]) -> T:
        try:
            return run_async(work)
        except Exception as exc:
            comps = self.components.values()
            logs = "\n".join(f"--- {c.log} ---\n{tail(c.log, 15)}" for c in comps)
            raise StartupError(f"provisioning the bed failed: {exc!r}\n{logs}") from exc

    async def _install_crds(self) -> None:
        async with self.admin_client() as api:
            crds = sorted(CRD_DIR.glob("*.yaml")) + sorted(CRD_DIR.glob("*.yml"))
            await kubeops.apply_crds(api, crds)

    async def _provision(self) -> list[str]:
        async with self.admin_client() as api:
            await kubeops.wait_service_account(api, "default")  # controllers are working
            return await self.add_nodes(
                api, self.nodes, self.capacity, self.node_labels, self.node_taints
            )

    def _launch(self, name: str, args: list[str]) -> Component:
        comp = Component(name, [str(self.bin_dir / name), *args], self.dir / f"{name}.log")
        self.components[name] = comp
        comp.start(self.die_with_parent)
        self._save()
        return comp

    def _wait_apiserver(self, token: str | None = None) -> None:
        token = token or self._admin_token()
        deadline = time.monotonic() + 120
        while not self.ca_file.exists() and time.monotonic() < deadline:
            self.components["kube-apiserver"].check()
            time.sleep(0.2)
        wait_http(
            self.components["kube-apiserver"], f"{self.server}/readyz", lambda b: b == b"ok",
            max(deadline - time.monotonic(), 5),
            context=ssl.create_default_context(cafile=str(self.ca_file)),
            headers={"Authorization": f"Bearer {token}"},
        )  # fmt: skip

    def _admin_token(self) -> str:
        return (self.dir / "pki" / "tokens.csv").read_text().split(",", 1)[0]

    def stop(self) -> None:
        """Stops every component, newest first; safe to call twice."""
        for comp in reversed(list(self.components.values())):
            comp.stop()
        if self.state_file.exists():
            self._save()

    def _held_running(self, stage: Path) -> Path:
        """KWOK's pod-complete stage, but for pods annotated ``KEEP_RUNNING``."""
        doc = yaml.safe_load(stage.read_text())
        doc["spec"]["selector"]["matchExpressions"].append(
            {"key": f'.metadata.annotations["{KEEP_RUNNING}"]', "operator": "DoesNotExist"}
        )
        held = self.dir / "pod-complete-unless-held.yaml"
        held.write_text(yaml.safe_dump(doc))
        return held

    def _save(self) -> None:
        state = {
            "bin_dir": str(self.bin_dir),
            "ports": self.ports,
            "kubeconfig": str(self.kubeconfig),
            "nodes": self.node_names,
            "components": {
                c.name: {"pid": c.pid, "argv": c.argv, "log": str(c.log)}
                for c in self.components.values()
            },
        }
        self.state_file.write_text(json.dumps(state, indent=2))

    @classmethod
    def load(cls, directory: Path) -> Testbed:
        """A handle on a bed started earlier (by hand or by another process)."""
        bed = cls(directory, die_with_parent=False)
        state = json.loads(bed.state_file.read_text())
        bed.bin_dir, bed.ports = Path(state["bin_dir"]), state["ports"]
        bed.node_names = state.get("nodes", [])
        for name, c in state["components"].items():
            bed.components[name] = Component(name, c["argv"], Path(c["log"]), c["pid"])
        return bed

    # for tests
    @contextlib.asynccontextmanager
    async def admin_client(self) -> AsyncIterator[ApiClient]:
        async with await new_client(self.kubeconfig) as api:
            yield api

    async def add_nodes(
        self,
        api: ApiClient,
        count: int,
        capacity: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        prefix: str = "kwok-node-",
    ) -> list[str]:
        """Creates `count` more KWOK nodes (prefix-0, prefix-1, ...) and waits until Ready."""
        existing = {n.metadata.name for n in (await client.CoreV1Api(api).list_node()).items}
        names: list[str] = []
        i = 0
        while len(names) < count:
            if f"{prefix}{i}" not in existing:
                names.append(f"{prefix}{i}")
            i += 1
        return await kubeops.create_nodes(api, names, capacity or self.capacity, labels, taints)

    async def service_account_kubeconfig(
        self, api: ApiClient, namespace: str, name: str, expiration_seconds: int = 3600
    ) -> Path:
        """Creates ServiceAccount namespace/name (if needed), mints a token through the
        TokenRequest API and writes a kubeconfig that authenticates as that account."""
        core = client.CoreV1Api(api)
        with contextlib.suppress(ApiException):
            await core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        request = {"spec": {"expirationSeconds": expiration_seconds}}
        answer = await kubeops.raw(
            core.create_namespaced_service_account_token(
                name, namespace, request, _preload_content=False
            )
        )
        path = self.dir / f"sa-{namespace}-{name}.kubeconfig"
        token = answer["status"]["token"]
        return certs.write_kubeconfig(path, self.server, self.ca_file, token, name)

    async def restart_apiserver(self, down_seconds: float = 0.0, grace: float = 2.0) -> None:
        """Stops kube-apiserver (SIGTERM, SIGKILL after `grace` seconds: with watches open it
        drains for ~10s) and starts it again on the same port, certificate and etcd data."""
        comp = self.components["kube-apiserver"]
        await asyncio.to_thread(comp.stop, grace)
        await asyncio.sleep(down_seconds)
        comp.start(self.die_with_parent)  # in the caller's (main) thread, see Component.start
        self._save()
        await asyncio.to_thread(self._wait_apiserver)


async def new_client(kubeconfig: Path) -> ApiClient:
    """A kubernetes_asyncio ApiClient for a kubeconfig file."""
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return ApiClient(configuration=cfg)


def parse_pairs(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if item)


def parse_taint(text: str) -> dict[str, str]:
    keyvalue, effect = text.rsplit(":", 1)
    key, _, value = keyvalue.partition("=")
    return {"key": key, "value": value, "effect": effect}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.testbed", description=__doc__)
    parser.add_argument("command", choices=["start", "stop", "restart-apiserver"])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/asyncsched-bed"))
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--node-capacity", type=parse_pairs, default=DEFAULT_CAPACITY)
    parser.add_argument("--node-labels", type=parse_pairs, default={}, help="k=v,k=v")
    parser.add_argument("--node-taint", type=parse_taint, action="append", default=[],
                        help="key=value:Effect (repeatable)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.command == "stop":
        if (args.dir / "bed.json").exists():
            Testbed.load(args.dir).stop()
        print(f"stopped the bed in {args.dir}", file=sys.stderr)
        return 0
    if args.command == "restart-apiserver":
        asyncio.run(Testbed.load(args.dir).restart_apiserver())
        return 0
    bed = Testbed(
        args.dir, args.nodes, args.node_capacity, args.node_labels, args.node_taint,
        die_with_parent=False,
    )  # fmt: skip
    try:
        bed.start()
    except StartupError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"bed up in {bed.startup_seconds:.1f}s: {bed.nodes} nodes, logs in {bed.dir}",
          file=sys.stderr)  # fmt: skip
    print(bed.kubeconfig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
