"""The controllers against the real control plane, with the scheduler running too.

`asyncsched controllers` and `asyncsched scheduler` run as their own processes
with deploy/'s ServiceAccounts; the webhook is registered with a certificate
made here. KWOK starts bound pods at once, and its pod-complete stage finishes
every pod a Job owns as soon as it runs; tests that need pods to stay put pin
them to a node label no node has ("held"), and let them go by labelling nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.conftest import Kube
from tests.e2e.controllers_proc import (
    SERVICE_ACCOUNT as CONTROLLERS_SA,
)
from tests.e2e.controllers_proc import (
    ControllersProcess,
    install_controller_manifests,
    register_webhooks,
    unregister_webhooks,
    webhook_configurations,
    write_serving_cert,
)
from tests.e2e.kubeops import wait_for
from tests.e2e.procs import free_port
from tests.e2e.scheduler_proc import (
    NAMESPACE,
    ROOT,
    SchedulerProcess,
    install_scheduler_manifests,
    request,
)
from tests.e2e.scheduler_proc import (
    SERVICE_ACCOUNT as SCHEDULER_SA,
)
from tests.e2e.testbed import KEEP_RUNNING, Testbed, run_async

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
HOLD = "e2e-hold"
PREEMPT_CONFIG = ROOT / "tests" / "scenarios" / "yaml" / "preempt-config.yaml"
USAGE = "maip.mxsf.io/node.usage"
SEED = ROOT / "tests" / "fixtures" / "controllers" / "seed-001-training-job.yaml"


@dataclass
class Stack:
    scheduler: SchedulerProcess
    controllers: ControllersProcess

    def logs(self) -> str:
        return (
            f"--- controllers ---\n{self.controllers.output()[-4000:]}\n"
            f"--- scheduler ---\n{self.scheduler.output()[-1500:]}"
        )


@pytest.fixture(scope="module")
def stack(testbed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("controllers")
    suffix = uuid.uuid4().hex[:6]
    cert, key, ca = write_serving_cert(logs)
    port = free_port()
    docs = webhook_configurations(port, ca, suffix)

    async def setup() -> tuple[Path, Path]:
        async with testbed.admin_client() as api:
            await install_scheduler_manifests(api)
            await install_controller_manifests(api)
            await testbed.add_nodes(
                api, 2, labels={USAGE: "training"}, prefix=f"training-{suffix}-",
                taints=[{"key": USAGE, "value": "training", "effect": "NoSchedule"}],
            )  # fmt: skip
            return (
                await testbed.service_account_kubeconfig(api, NAMESPACE, SCHEDULER_SA),
                await testbed.service_account_kubeconfig(api, NAMESPACE, CONTROLLERS_SA),
            )

    scheduler_config, controllers_config = run_async(setup())
    scheduler = SchedulerProcess(scheduler_config, logs / "scheduler.log", "e2e-scheduler")
    # Volcano's configuration with preempt and reclaim, so that the Job controller meets
    # evictions; without PriorityClasses or quotas, no other test here gives a victim.
    at = scheduler.argv.index("--config-map")
    scheduler.argv[at : at + 2] = ["--config", str(PREEMPT_CONFIG)]
    controllers = ControllersProcess(
        controllers_config, logs / "controllers.log", "e2e-controllers",
        "--webhook-host", "127.0.0.1", "--webhook-port", str(port),
        "--tls-cert", str(cert), "--tls-key", str(key),
    )  # fmt: skip
    scheduler.start()
    controllers.start()
    stack = Stack(scheduler, controllers)
    try:
        controllers.wait_for_line("controllers synced", 60)
        run_async(_register(testbed, docs))
        yield stack
    finally:
        # Webhooks first: with failurePolicy Fail, no one may write a Job or Queue while
        # they are registered and nothing answers.
        run_async(_teardown(testbed, docs, suffix))
        for proc in (controllers, scheduler):
            with contextlib.suppress(Exception):
                proc.terminate()


async def _register(testbed: Testbed, docs: list[dict[str, Any]]) -> None:
    """Register the webhooks and wait until the API server calls them."""
    async with testbed.admin_client() as api:
        await register_webhooks(api, docs)
        probe = f"webhook-probe-{uuid.uuid4().hex[:5]}"
        await request(api, "POST", "/api/v1/namespaces",
                      {"metadata": {"name": probe, "labels": {"e2e": "true"}}})  # fmt: skip

        async def refused() -> bool:
            try:
                await request(api, "POST", JOBS.format(ns=probe), INVALID["min-available"][0])
            except ApiException as exc:
                return "refused" in str(exc.reason)
            await request(api, "DELETE", JOBS.format(ns=probe) + "/too-big")
            return False

        try:
            await wait_for(refused, 30, "the webhook to be called", interval=0.5)
        finally:
            await request(api, "DELETE", f"/api/v1/namespaces/{probe}")


async def _teardown(testbed: Testbed, docs: list[dict[str, Any]], suffix: str) -> None:
    async with testbed.admin_client() as api:
        await unregister_webhooks(api, docs)
        for i in range(2):
            with contextlib.suppress(ApiException):
                await request(api, "DELETE", f"/api/v1/nodes/training-{suffix}-{i}")


# -- building Jobs ------------------------------------------------------------------


def _task(name: str, replicas: int, *, held: str = "", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
    }  # fmt: skip
    if held:
        spec["nodeSelector"] = {HOLD: held}
    return {"name": name, "replicas": replicas, "template": {"spec": spec}, **extra}


def _job(name: str, tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"schedulerName": "volcano", "tasks": tasks, **spec},
    }  # fmt: skip


@dataclass
class Env:
    kube: Kube
    stack: Stack

    @property
    def ns(self) -> str:
        return self.kube.namespace

    async def get(self, path: str) -> dict[str, Any]:
        return await request(self.kube.api, "GET", path.format(ns=self.ns))

    async def items(self, path: str, selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={selector}" if selector else ""
        return list((await self.get(path + query))["items"])

    async def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        return await request(self.kube.api, "POST", JOBS.format(ns=self.ns), job)

    async def job(self, name: str) -> dict[str, Any]:
        return await self.get(JOBS + f"/{name}")

    async def pods(self, job: str = "") -> list[dict[str, Any]]:
        selector = f"volcano.sh/job-name={job}" if job else ""
        return await self.items("/api/v1/namespaces/{ns}/pods", selector)

    async def wait(self, check: Any, timeout: float, what: str) -> None:
        try:
            await wait_for(check, timeout, what, interval=0.3)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{self.stack.logs()}") from None

    async def wait_phase(self, name: str, phase: str, timeout: float = 40) -> dict[str, Any]:
        async def reached() -> bool:
            state = (await self.job(name)).get("status", {}).get("state", {})
            return bool(state.get("phase") == phase)

        await self.wait(reached, timeout, f"job {name} to be {phase}")
        return await self.job(name)

    async def wait_pods(self, job: str, count: int, timeout: float = 30) -> list[dict[str, Any]]:
        async def created() -> bool:
            live = [p for p in await self.pods(job) if not p["metadata"].get("deletionTimestamp")]
            return len(live) == count

        await self.wait(created, timeout, f"{count} pods of job {job}")
        return await self.pods(job)

    async def release(self) -> list[str]:
        """Label two bed nodes so this test's held pods may run there."""
        nodes = [n["metadata"]["name"] for n in await self.items("/api/v1/nodes", "type=kwok")]
        chosen = [n for n in nodes if not n.startswith("training-")][:2]
        for name in chosen:
            await request(self.kube.api, "PATCH", f"/api/v1/nodes/{name}",
                          {"metadata": {"labels": {HOLD: self.ns}}},
                          "application/merge-patch+json")  # fmt: skip
        return chosen


@pytest.fixture
def env(kube: Kube, stack: Stack) -> Env:
    return Env(kube, stack)


def _env(pod: dict[str, Any]) -> dict[str, str]:
    container = pod["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env", []) if "value" in e}


# -- tests ----------------------------------------------------------------------------


async def test_seed_training_job_runs_and_completes(env: Env) -> None:
    job = yaml.safe_load(SEED.read_text())
    created = await env.submit(job)
    # the mutating webhook filled in Volcano's defaults
    assert created["spec"]["queue"] == "default" and created["spec"]["maxRetry"] == 3
    done = await env.wait_phase("training-job", "Completed")
    pods = await env.pods("training-job")
    assert [p["metadata"]["name"] for p in pods] == ["training-job-worker-0"]
    assert pods[0]["status"]["phase"] == "Succeeded"
    assert pods[0]["spec"]["nodeName"].startswith("training-"), "the affinity was honoured"
    assert done["status"]["succeeded"] == 1
    assert await env.items(PODGROUPS) == [], "a finished Job's PodGroup goes, as in Volcano"


async def test_env_and_svc_plugins_give_every_pod_its_hosts(env: Env) -> None:
    ns = env.ns
    job = _job("tf", [_task("ps", 2, held=ns), _task("worker", 4, held=ns)],
               minAvailable=6, plugins={"env": [], "svc": []})  # fmt: skip
    await env.submit(job)
    pods = await env.wait_pods("tf", 6)
    hosts = {
        "ps": [f"tf-ps-{i}.tf" for i in range(2)],
        "worker": [f"tf-worker-{i}.tf" for i in range(4)],
    }
    for pod in pods:
        name = pod["metadata"]["name"]
        index = name.rsplit("-", 1)[1]
        assert _env(pod)["VK_TASK_INDEX"] == index and _env(pod)["VC_TASK_INDEX"] == index
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "tf"
        refs = {e["name"] for e in pod["spec"]["containers"][0]["env"] if "valueFrom" in e}
        assert {"VC_PS_HOSTS", "VC_PS_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM"} <= refs
    service = await env.get("/api/v1/namespaces/{ns}/services/tf")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {
        "volcano.sh/job-name": "tf",
        "volcano.sh/job-namespace": ns,
    }
    data = (await env.get("/api/v1/namespaces/{ns}/configmaps/tf-svc"))["data"]
    assert data["ps.host"].split("\n") == hosts["ps"]
    assert data["worker.host"].split("\n") == hosts["worker"]
    assert data["VC_WORKER_HOSTS"] == ",".join(hosts["worker"]) and data["VC_PS_NUM"] == "2"

    await env.release()
    await env.wait_phase("tf", "Completed")

    async def cleaned() -> bool:  # Volcano's svc plugin removes its objects when the job ends
        names = {s["metadata"]["name"] for s in await env.items("/api/v1/namespaces/{ns}/services")}
        return "tf" not in names

    await env.wait(cleaned, 20, "the svc plugin's Service to go")


async def test_pytorch_job_ranks_and_world_size(env: Env) -> None:
    job = _job("pt", [_task("master", 1), _task("worker", 3)], plugins={"pytorch": []})
    await env.submit(job)
    await env.wait_phase("pt", "Completed")
    pods = {p["metadata"]["name"]: _env(p) for p in await env.pods("pt")}
    assert sorted(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"]
    assert {n: e["RANK"] for n, e in pods.items()} == {
        "pt-master-0": "0", "pt-worker-0": "1", "pt-worker-1": "2", "pt-worker-2": "3",
    }  # fmt: skip
    for variables in pods.values():
        assert variables["WORLD_SIZE"] == "4"
        assert variables["MASTER_ADDR"] == "pt-master-0.pt" and variables["MASTER_PORT"] == "23456"


async def _fail(env: Env, pod: str) -> None:
    """Mark a pod Failed, as a kubelet would when its container exits non-zero."""
    body = {"status": {"phase": "Failed", "containerStatuses": [{
        "name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 3, "reason": "Error"}},
    }]}}  # fmt: skip
    await request(env.kube.api, "PATCH", f"/api/v1/namespaces/{env.ns}/pods/{pod}/status",
                  body, "application/merge-patch+json")  # fmt: skip


async def test_pod_failed_restarts_the_job_until_max_retry_then_fails(env: Env) -> None:
    job = _job("retry", [_task("worker", 2, held=env.ns)], maxRetry=2,
               policies=[{"event": "PodFailed", "action": "RestartJob"}])  # fmt: skip
    await env.submit(job)
    for attempt in range(2):
        pods = await env.wait_pods("retry", 2)
        assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in pods} == {
            str(attempt)
        }
        await _fail(env, "retry-worker-0")
        if attempt == 0:

            async def restarted() -> bool:
                status = (await env.job("retry")).get("status", {})
                return bool(status.get("retryCount") == 1)

            await env.wait(restarted, 30, "the first restart")
    done = await env.wait_phase("retry", "Failed")
    assert done["status"]["retryCount"] == 2


async def test_restart_task_is_one_retry_its_own_deletions_fire_no_policy(env: Env) -> None:
    """With the usual [PodFailed, PodEvicted] -> RestartTask policy, the pods the
    controller deletes are marked volcano.sh/controller-out-of-sync first, so their
    deletions come back as no eviction: one failed pod is one retry, the task's pods are
    made anew once, and the other task's pod is left alone."""
    worker = _task(
        "worker",
        2,
        held=env.ns,
        policies=[{"events": ["PodFailed", "PodEvicted"], "action": "RestartTask"}],
    )
    await env.submit(_job("rt", [worker, _task("ps", 1, held=env.ns)]))  # fmt: skip
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await env.wait_pods("rt", 3)}

    async def live() -> dict[str, str]:
        pods = [p for p in await env.pods("rt") if not p["metadata"].get("deletionTimestamp")]
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    async def made_anew() -> bool:
        now = await live()
        return len(now) == 3 and all(now[n] != before[n] for n in now if "worker" in n)

    await _fail(env, "rt-worker-0")
    await env.wait(made_anew, 30, "the worker task made anew")
    after = await live()
    await asyncio.sleep(2)  # the deletions' echoes have come back by now
    status = (await env.job("rt"))["status"]
    assert status["retryCount"] == 1, status
    assert status["state"]["phase"] in ("Pending", "Running"), status
    assert await live() == after, "the new pods were not deleted again"
    assert after["rt-ps-0"] == before["rt-ps-0"]


@contextlib.asynccontextmanager
async def _priority_classes(env: Env) -> AsyncIterator[tuple[str, str]]:
    """A low (10) and a high (1000) PriorityClass of this test, deleted afterwards."""
    names = (f"{env.ns}-low", f"{env.ns}-high")
    collection = "/apis/scheduling.k8s.io/v1/priorityclasses"
    for name, value in zip(names, (10, 1000), strict=True):
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value}  # fmt: skip
        await request(env.kube.api, "POST", collection, body)
    try:
        yield names
    finally:
        for name in names:
            await request(env.kube.api, "DELETE", f"{collection}/{name}")


def _whole_node_task(name: str, replicas: int, held: str) -> dict[str, Any]:
    """A task whose every pod takes all 8 GPUs of a bed node, and runs until deleted."""
    task = _task(name, replicas, held=held)
    task["template"]["metadata"] = {"annotations": {KEEP_RUNNING: "true"}}
    resources = task["template"]["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = "8"
    resources["limits"] = {"nvidia.com/gpu": "8"}  # an extended resource: limit = request
    return task


async def test_pod_evicted_by_preemption_restarts_the_victim_job(env: Env) -> None:
    """The scheduler preempts a pod of a low-priority Job for a high-priority one through
    the Eviction API; the victim's PodEvicted policy restarts it whole (Volcano's
    RestartJob: new pods of the next job version, retryCount 1), and its new pods wait."""
    nodes = await env.release()
    async with _priority_classes(env) as (low, high):
        victim = _job("victim", [_whole_node_task("worker", 2, env.ns)], minAvailable=1,
                      priorityClassName=low, maxRetry=3,
                      policies=[{"event": "PodEvicted", "action": "RestartJob"}])  # fmt: skip
        await env.submit(victim)
        await env.wait_phase("victim", "Running")
        first = {p["metadata"]["uid"] for p in await env.wait_pods("victim", 2)}

        await env.submit(_job("urgent", [_whole_node_task("main", 1, env.ns)],
                              priorityClassName=high))  # fmt: skip
        await env.wait_phase("urgent", "Running", timeout=60)

        async def restarted() -> bool:
            status = (await env.job("victim")).get("status", {})
            return bool(status.get("retryCount") == 1)

        await env.wait(restarted, 60, "the victim job's restart")
        pods = await env.wait_pods("victim", 2, timeout=60)
        assert not first & {p["metadata"]["uid"] for p in pods}, "every pod made anew"
        assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in pods} == {"1"}
        (urgent,) = await env.pods("urgent")
        assert urgent["spec"].get("nodeName") in nodes
        victim_state = (await env.job("victim"))["status"]["state"]["phase"]
        assert victim_state in ("Restarting", "Pending", "Running"), victim_state
        bound = [p for p in pods if p["spec"].get("nodeName")]
        assert len(bound) <= 1, "one node is the urgent job's now"

        async def told() -> bool:  # the Event is sent beside the eviction, not before it
            events = await env.items("/api/v1/namespaces/{ns}/events")
            return any(
                e["reason"] in {"Evict", "Preempted", "Killing"}
                for e in events
                if e["involvedObject"]["name"].startswith("victim-")
            )

        await env.wait(told, 20, "an eviction Event on a victim pod")
        await request(env.kube.api, "DELETE", JOBS.format(ns=env.ns) + "/urgent")
        await request(env.kube.api, "DELETE", JOBS.format(ns=env.ns) + "/victim")


async def test_deployment_replicas_get_a_podgroup_and_lose_it_with_their_owner(env: Env) -> None:
    ns = env.ns
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "nginx",
                     "resources": {"requests": {"cpu": "100m"}}}]},
        }},
    }  # fmt: skip
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await request(env.kube.api, "POST", path, deployment)

    async def replicas_ok(count: int) -> bool:
        pods = [p for p in await env.pods() if not p["metadata"].get("deletionTimestamp")]
        groups = {p["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name")
                  for p in pods}  # fmt: skip
        existing = {g["metadata"]["name"] for g in await env.items(PODGROUPS)}
        return (
            len(pods) == count
            and all(p["spec"].get("nodeName") for p in pods)
            and all(p["status"].get("phase") == "Running" for p in pods)
            and None not in groups
            and groups <= existing
        )

    async def scale(count: int) -> None:
        await request(env.kube.api, "PATCH", f"{path}/web", {"spec": {"replicas": count}},
                      "application/merge-patch+json")  # fmt: skip

    await env.wait(lambda: replicas_ok(3), 40, "3 running replicas with a PodGroup")
    [group] = await env.items(PODGROUPS)
    owner = group["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "ReplicaSet" and group["metadata"]["name"] == f"podgroup-{owner['uid']}"
    await scale(5)
    await env.wait(lambda: replicas_ok(5), 40, "5 running replicas with a PodGroup")
    await scale(1)
    await env.wait(lambda: replicas_ok(1), 40, "1 replica")
    await scale(0)

    async def no_groups() -> bool:
        return not await env.items(PODGROUPS)

    await env.wait(no_groups, 30, "the ReplicaSet's PodGroup to go at zero replicas")

    bare = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "nginx"}]},
    }  # fmt: skip
    created = await request(env.kube.api, "POST", f"/api/v1/namespaces/{ns}/pods", bare)
    await env.wait(lambda: replicas_ok(1), 40, "the bare pod running with a PodGroup")
    assert (await env.items(PODGROUPS))[0]["metadata"]["name"] == (
        f"podgroup-{created['metadata']['uid']}"
    )
    await request(env.kube.api, "DELETE", f"/api/v1/namespaces/{ns}/pods/bare")
    await env.wait(no_groups, 40, "the bare pod's PodGroup to go with it")


async def test_deleting_a_job_removes_everything_it_made(env: Env) -> None:
    job = _job("gone", [_task("master", 1, held=env.ns), _task("worker", 2, held=env.ns)],
               plugins={"ssh": [], "svc": []})  # fmt: skip
    await env.submit(job)
    await env.wait_pods("gone", 3)
    kinds = {
        "pods": "/api/v1/namespaces/{ns}/pods",
        "podgroups": PODGROUPS,
        "services": "/api/v1/namespaces/{ns}/services",
        "secrets": "/api/v1/namespaces/{ns}/secrets",
        "configmaps": "/api/v1/namespaces/{ns}/configmaps",
        "networkpolicies": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
    }

    async def owned() -> dict[str, list[str]]:
        found = {}
        for kind, path in kinds.items():
            found[kind] = [
                o["metadata"]["name"] for o in await env.items(path)
                if any(r.get("kind") == "Job" for r in o["metadata"].get("ownerReferences", []))
            ]  # fmt: skip
        return found

    before = await owned()
    assert all(before.values()), before
    await request(env.kube.api, "DELETE", JOBS.format(ns=env.ns) + "/gone")

    async def all_gone() -> bool:
        return not any((await owned()).values())

    await env.wait(all_gone, 40, "the garbage collector to remove the job's objects")


INVALID = {
    "min-available": (
        _job("too-big", [_task("a", 2)], minAvailable=3),
        "spec.minAvailable 3 is larger than the sum of the tasks' replicas (2)",
    ),
    "duplicate": (
        _job("dup", [_task("a", 1), _task("a", 1)]),
        "task name 'a' is used by more than one task",
    ),
    # the CRD's schema refuses it before the webhook is asked (either message names spec.tasks)
    "no-tasks": (_job("empty", []), "spec.tasks"),
    # the CRD's pattern refuses a malformed task name; one too long for pod names is ours to catch
    "task-name": (_job("badname", [_task("t" * 60, 1)]), "which is not valid"),
    "unknown-queue": (
        _job("noqueue", [_task("a", 1)], queue="no-such-queue"),
        "queue 'no-such-queue' does not exist",
    ),
    # an event the CRD's enum lets through but no policy may name (it is internal)
    "event": (
        _job("event", [_task("a", 1)], policies=[{"event": "OutOfSync", "action": "AbortJob"}]),
        "unknown event 'OutOfSync'",
    ),
    "event-schema": (
        _job("event2", [_task("a", 1)], policies=[{"event": "PodExploded", "action": "AbortJob"}]),
        "PodExploded",
    ),
    "action": (
        _job("action", [_task("a", 1)], policies=[{"event": "PodFailed", "action": "Explode"}]),
        "unknown action 'Explode'",
    ),
    "cycle": (
        _job(
            "cycle",
            [_task("a", 1, dependsOn={"name": ["b"]}), _task("b", 1, dependsOn={"name": ["a"]})],
        ),
        "dependsOn forms a cycle",
    ),
}


async def test_invalid_jobs_are_refused_with_their_reason_and_leave_nothing(env: Env) -> None:
    closed = f"closed-{env.ns}"[:63]
    await request(env.kube.api, "POST", QUEUES, {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": closed}, "spec": {"weight": 1},
    })  # fmt: skip
    try:
        await request(env.kube.api, "PATCH", f"{QUEUES}/{closed}/status",
                      {"status": {"state": "Closed"}}, "application/merge-patch+json")  # fmt: skip
        cases = dict(INVALID)
        cases["closed-queue"] = (
            _job("closed", [_task("a", 1)], queue=closed),
            f"queue '{closed}' is Closed",
        )
        for case, (job, message) in cases.items():

            async def refused(job: dict[str, Any] = job, message: str = message) -> bool:
                try:
                    await env.submit(job)
                except ApiException as exc:
                    if message in str(exc.reason):
                        return True
                    raise AssertionError(f"refused, not for {message!r}: {exc.reason}") from None
                await request(env.kube.api, "DELETE", JOBS.format(ns=env.ns) + "/" +
                              job["metadata"]["name"])  # fmt: skip
                return False

            # a queue just closed may take the webhook's informer a moment to see
            await env.wait(refused, 15, f"{case} to be refused")
        await asyncio.sleep(1)
        assert await env.items(JOBS) == [] and await env.pods() == []
        assert await env.items(PODGROUPS) == []
    finally:
        await request(env.kube.api, "DELETE", f"{QUEUES}/{closed}")


async def test_finished_job_is_deleted_after_its_ttl(env: Env) -> None:
    await env.submit(_job("brief", [_task("a", 1)], ttlSecondsAfterFinished=1))

    async def gone() -> bool:
        return not await env.items(JOBS)

    await env.wait(gone, 40, "the job to be deleted once its TTL ran out")


async def test_close_and_open_queue_commands(env: Env) -> None:
    name = f"cmd-{env.ns}"[:63]
    await request(env.kube.api, "POST", QUEUES, {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name}, "spec": {"weight": 1},
    })  # fmt: skip
    commands = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{env.ns}/commands"
    try:
        for action, state in (("CloseQueue", "Closed"), ("OpenQueue", "Open")):
            await request(env.kube.api, "POST", commands, {
                "apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                "metadata": {"generateName": "q-"}, "action": action,
                "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "name": name, "uid": "x"},
            })  # fmt: skip

            async def applied(state: str = state) -> bool:
                queue = await env.get(f"{QUEUES}/{name}")
                done = not (await env.get(commands))["items"]
                return done and queue.get("status", {}).get("state") == state

            await env.wait(applied, 20, f"the queue to be {state} and the Command consumed")
    finally:
        await request(env.kube.api, "DELETE", f"{QUEUES}/{name}")


async def test_job_suspend_and_resume_from_the_command_line(env: Env) -> None:
    from asyncsched.cli import main

    await env.submit(_job("pausable", [_task("worker", 2, held=env.ns)]))
    await env.wait_pods("pausable", 2)
    kubeconfig = str(env.kube.bed.kubeconfig)

    code = await asyncio.to_thread(
        main, ["job", "suspend", "-n", env.ns, "-N", "pausable", "--kubeconfig", kubeconfig]
    )
    assert code == 0
    await env.wait_phase("pausable", "Aborted")
    await env.wait_pods("pausable", 0)

    code = await asyncio.to_thread(
        main, ["job", "resume", "-n", env.ns, "-N", "pausable", "--kubeconfig", kubeconfig]
    )
    assert code == 0
    pods = await env.wait_pods("pausable", 2)
    assert {p["metadata"]["name"] for p in pods} == {"pausable-worker-0", "pausable-worker-1"}
    phase = (await env.job("pausable"))["status"]["state"]["phase"]
    assert phase != "Aborted", "resumed"


CRONJOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/cronjobs"


def _cronjob(name: str, schedule: str, task: dict[str, Any], **spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"made-by": name}},
        "spec": {"schedulerName": "volcano", "tasks": [task]},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": template, **spec},
    }  # fmt: skip


async def _made_by(env: Env, cron: str) -> list[dict[str, Any]]:
    return await env.items(JOBS, f"made-by={cron}")


async def test_a_cronjob_makes_a_job_on_schedule_and_forbid_keeps_it_alone(env: Env) -> None:
    """A Volcano CronJob (Volcano 1.13) with ``@every 5s``: its Job appears, named for the
    scheduled minute and owned by it; while that Job's pods are held, Forbid makes no other
    and says why on the CronJob; the CRD filled in its defaults."""
    cron = _cronjob("tick", "@every 5s", _task("a", 1, held=env.ns), concurrencyPolicy="Forbid")
    made = await request(env.kube.api, "POST", CRONJOBS.format(ns=env.ns), cron)
    assert made["spec"]["successfulJobsHistoryLimit"] == 3
    assert made["spec"]["failedJobsHistoryLimit"] == 1

    async def listed() -> bool:
        status = (await env.get(CRONJOBS + "/tick")).get("status", {})
        return bool(status.get("active")) and bool(status.get("lastScheduleTime"))

    await env.wait(listed, 30, "the CronJob to list the Job it made")
    (job,) = await _made_by(env, "tick")
    status = (await env.get(CRONJOBS + "/tick"))["status"]
    assert [a["uid"] for a in status["active"]] == [job["metadata"]["uid"]]
    (owner,) = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "tick", True)
    assert owner["uid"] == made["metadata"]["uid"]
    minute = job["metadata"]["name"].rsplit("-", 1)[1]
    stamp = job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"]
    assert stamp == status["lastScheduleTime"]
    assert int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()) // 60 == int(
        minute
    )
    await env.wait_pods(job["metadata"]["name"], 1)

    async def forbidden() -> bool:
        events = await env.items("/api/v1/namespaces/{ns}/events")
        return any(
            e["involvedObject"]["name"] == "tick" and e["reason"] == "ForbidConcurrent"
            for e in events
        )

    # Jobs are named by the minute, so the first time Forbid has to skip comes with the
    # next minute (until then each time finds its Job's name listed already).
    await env.wait(forbidden, 75, "Forbid to skip a run while the Job's pod is held")
    assert len(await _made_by(env, "tick")) == 1


async def test_a_finished_run_leaves_active_and_sets_last_successful_time(env: Env) -> None:
    cron = _cronjob("once", "@every 5s", _task("a", 1), concurrencyPolicy="Forbid", suspend=False)
    await request(env.kube.api, "POST", CRONJOBS.format(ns=env.ns), cron)

    async def succeeded() -> bool:
        status = (await env.get(CRONJOBS + "/once")).get("status", {})
        return bool(status.get("lastSuccessfulTime")) and not status.get("active")

    await env.wait(succeeded, 60, "a run to complete and leave the CronJob's active list")
    jobs = await _made_by(env, "once")
    assert jobs and all(j["status"]["state"]["phase"] == "Completed" for j in jobs)
    # The history is pruned by the controller, never below the default limit of 3 Completed.
    assert len(jobs) <= 3


async def test_cronjobs_volcano_refuses_are_refused_with_their_reason(env: Env) -> None:
    cases = {
        "bad-schedule": (_cronjob("bad", "* * *", _task("a", 1)), "not a valid cron expression"),
        "tz-in-schedule": (
            _cronjob("tz", "TZ=UTC 0 * * * *", _task("a", 1)),
            "must not contain TZ",
        ),
        "zone": (
            _cronjob("zone", "0 * * * *", _task("a", 1), timeZone="Mars/Olympus"),
            "not a zone of the tz database",
        ),
        "long-name": (_cronjob("c" * 53, "0 * * * *", _task("a", 1)), "52 characters or less"),
    }
    for case, (cron, message) in cases.items():
        with pytest.raises(ApiException) as refused:
            await request(env.kube.api, "POST", CRONJOBS.format(ns=env.ns), cron)
        assert message in str(refused.value.reason), (case, refused.value.reason)
    assert await env.items(CRONJOBS) == []


HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
DISCOVERY_CONFIG = "/api/v1/namespaces/volcano-system/configmaps"


async def _racks(env: Env, key: str) -> dict[str, set[str]]:
    """The HyperNodes discovered from label ``key``: its value -> their node members."""
    found = await env.items(HYPERNODES, f"volcano.sh/network-topology-source=label,{key}")
    return {
        hn["metadata"]["labels"][key]: {
            m["selector"]["exactMatch"]["name"] for m in hn["spec"]["members"]
        }
        for hn in found
    }


async def test_hypernodes_discovered_from_node_labels_hold_a_hard_topology_job(
    env: Env, testbed: Testbed
) -> None:
    """Volcano's controller configuration asks for discovery from a rack label: one HyperNode
    per rack appears, a hard-mode Job limited to tier 1 runs inside one rack, a relabelled
    node moves to its new rack, and the HyperNodes go with the configuration."""
    key = f"e2e.asyncsched.io/rack-{env.ns}"[:63]
    prefix = f"rack-{env.ns[-8:]}-"
    nodes = await testbed.add_nodes(
        env.kube.api, 4, {"cpu": "2", "memory": "8Gi", "pods": "110"},
        labels={HOLD: env.ns}, prefix=prefix,
    )  # fmt: skip
    for i, name in enumerate(nodes):
        patch = {"metadata": {"labels": {key: "r1" if i < 2 else "r2"}}}
        await request(env.kube.api, "PATCH", f"/api/v1/nodes/{name}", patch,
                      "application/merge-patch+json")  # fmt: skip
    with contextlib.suppress(ApiException):
        await request(env.kube.api, "POST", "/api/v1/namespaces",
                      {"metadata": {"name": "volcano-system"}})  # fmt: skip
    conf = yaml.safe_dump({"networkTopologyDiscovery": [{
        "source": "label", "enabled": True,
        "config": {"networkTopologyTypes": {"e2e": [
            {"nodeLabel": key}, {"nodeLabel": "kubernetes.io/hostname"}]}},
    }]})  # fmt: skip
    config_map = {"metadata": {"name": "volcano-controller-configmap"},
                  "data": {"volcano-controller.conf": conf}}  # fmt: skip
    await request(env.kube.api, "POST", DISCOVERY_CONFIG, config_map)
    try:

        async def discovered() -> bool:
            return await _racks(env, key) == {"r1": set(nodes[:2]), "r2": set(nodes[2:])}

        await env.wait(discovered, 30, "two racks discovered from the node labels")

        tasks = [_task("worker", 4, held=env.ns)]
        tasks[0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
        job = _job("racked", tasks, minAvailable=4,
                   networkTopology={"mode": "hard", "highestTierAllowed": 1})  # fmt: skip
        await env.submit(job)

        async def placed() -> bool:
            return all(p["spec"].get("nodeName") for p in await env.wait_pods("racked", 4))

        await env.wait(placed, 40, "the 4 pods of racked to be bound")
        used = {p["spec"]["nodeName"] for p in await env.pods("racked")}
        assert used in (set(nodes[:2]), set(nodes[2:])), used

        patch = {"metadata": {"labels": {key: "r2"}}}
        await request(env.kube.api, "PATCH", f"/api/v1/nodes/{nodes[1]}", patch,
                      "application/merge-patch+json")  # fmt: skip

        async def moved() -> bool:
            return await _racks(env, key) == {"r1": {nodes[0]}, "r2": set(nodes[1:])}

        await env.wait(moved, 30, f"{nodes[1]} to move to rack r2")
    finally:
        await request(env.kube.api, "DELETE", f"{DISCOVERY_CONFIG}/volcano-controller-configmap")

        async def gone() -> bool:
            return not await _racks(env, key)

        await env.wait(gone, 30, "the discovered HyperNodes to go with the configuration")
        for name in nodes:
            with contextlib.suppress(ApiException):
                await request(env.kube.api, "DELETE", f"/api/v1/nodes/{name}")
