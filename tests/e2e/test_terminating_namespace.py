"""Controllers drop a create refused because its namespace is being deleted.

Every later create there is refused the same way and the namespace's objects are on
their way out, so Kubernetes' own controllers drop such work instead of retrying it; a
retry loop would log a warning per pod for as long as the namespace takes to go.

The namespace is held in Terminating by a ConfigMap with a finalizer; the controllers'
stores keep the objects as they were before the deletion (as an informer does until the
deletion reaches it).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator

import msgspec
import pytest

from asyncsched.api.batch import Job
from asyncsched.api.core import Pod
from asyncsched.backends.kube.client import MERGE_PATCH, KubeClient, KubeError, connect
from asyncsched.backends.kube.controllers.apply import Applier
from asyncsched.backends.kube.controllers.groups import PlainPodGroupController
from asyncsched.backends.kube.controllers.jobs import JobController
from asyncsched.backends.kube.controllers.store import PodStore, Store
from asyncsched.backends.kube.status import StatusWriter
from tests.e2e.conftest import Kube
from tests.e2e.kubeops import wait_for
from tests.e2e.scheduler_proc import request

HOLD = "asyncsched.test/hold"


@pytest.fixture
async def client(kube: Kube) -> AsyncIterator[KubeClient]:
    found = await connect(str(kube.bed.kubeconfig))
    try:
        yield found
    finally:
        await found.close()


async def _post(kube: Kube, path: str, obj: dict[str, object]) -> dict[str, object]:
    return await request(kube.api, "POST", path.format(ns=kube.namespace), obj)


@contextlib.asynccontextmanager
async def _terminating(kube: Kube, client: KubeClient) -> AsyncIterator[KubeError]:
    """Delete the namespace and hold it in Terminating; yields the refusal of a create
    there, once the API server's admission refuses them."""
    namespace = kube.namespace
    holder = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "hold", "finalizers": [HOLD]}}  # fmt: skip
    await _post(kube, "/api/v1/namespaces/{ns}/configmaps", holder)
    await kube.core.delete_namespace(namespace)
    refused: list[KubeError] = []

    async def creates_refused() -> bool:
        probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}
        try:
            await client.post(
                f"/api/v1/namespaces/{namespace}/configmaps", json.dumps(probe).encode()
            )
        except KubeError as exc:
            if exc.status == 403:
                refused.append(exc)
                return True
            if exc.status != 409:
                raise
        return False

    try:
        await wait_for(creates_refused, 30, f"creates in {namespace} to be refused")
        yield refused[0]
    finally:
        release = json.dumps({"metadata": {"finalizers": None}}).encode()
        path = f"/api/v1/namespaces/{namespace}/configmaps/hold"
        with contextlib.suppress(KubeError):
            await client.patch(path, release, content_type=MERGE_PATCH)


async def test_a_create_in_a_namespace_being_deleted_names_its_cause(
    kube: Kube, client: KubeClient
) -> None:
    async with _terminating(kube, client) as refusal:
        assert refusal.namespace_terminating
        assert "being terminated" in refusal.message
    other = KubeError(403, "forbidden")  # an RBAC refusal is not this cause
    assert not other.namespace_terminating


async def test_the_podgroup_controller_drops_a_pod_of_a_namespace_being_deleted(
    kube: Kube, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]},
    }  # fmt: skip
    made = await _post(kube, "/api/v1/namespaces/{ns}/pods", pod)
    pods = PodStore()
    pods.upsert(msgspec.convert(made, Pod))
    controller = PlainPodGroupController(client, pods, Store(), {"volcano"})
    key = (kube.namespace, "web")
    async with _terminating(kube, client):
        with caplog.at_level(logging.WARNING):
            await controller.handle(key, [])
    assert controller.created == 0
    assert controller.queue.retries(key) == 0, "the pod's PodGroup is being retried"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


async def test_the_job_controller_drops_a_job_of_a_namespace_being_deleted(
    kube: Kube, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train"},
        "spec": {"schedulerName": "volcano", "minAvailable": 2, "tasks": [{
            "name": "worker", "replicas": 2,
            "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
        }]},
    }  # fmt: skip
    made = await _post(kube, "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs", job)
    jobs: Store[Job] = Store()
    jobs.upsert(msgspec.convert(made, Job))
    pods = PodStore()
    bad: list[str] = []
    controller = JobController(
        client, jobs, pods, Store(), Store(), dict,
        Applier(client, pods, StatusWriter(client, "test")),
        lambda *what: bad.append(" ".join(what)),
    )  # fmt: skip
    key = (kube.namespace, "train")
    async with _terminating(kube, client):
        with caplog.at_level(logging.WARNING):
            await controller.handle(key, [])
    assert not bad
    assert controller.queue.retries(key) == 0, "the Job is being retried"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
