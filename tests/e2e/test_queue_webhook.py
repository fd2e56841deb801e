"""The Queue admission webhooks on the real control plane, as a platform team meets them.

`asyncsched controllers` runs as its own process with deploy/'s ServiceAccount and
serves the webhooks over TLS; deploy/controllers/webhooks.yaml's Queue configurations
are registered pointing at it. Each test writes Queues the way kubectl does (a POST,
PATCH or DELETE to the API server) and looks at what the API server answered and
stored. Queues are cluster-wide: every name here carries this run's suffix.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.controllers_proc import (
    SERVICE_ACCOUNT,
    ControllersProcess,
    install_controller_manifests,
    register_webhooks,
    unregister_webhooks,
    webhook_configurations,
    write_serving_cert,
)
from tests.e2e.kubeops import wait_for
from tests.e2e.procs import free_port
from tests.e2e.scheduler_proc import NAMESPACE, install_scheduler_manifests, request
from tests.e2e.testbed import Testbed, run_async

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
SUFFIX = uuid.uuid4().hex[:5]


def _name(base: str) -> str:
    return f"{base}-{SUFFIX}"


def _queue(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name},
    }  # fmt: skip
    if spec:
        body["spec"] = spec
    return body


@pytest.fixture(scope="module")
def controllers(testbed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    logs = tmp_path_factory.mktemp("queue-webhook")
    cert, key, ca = write_serving_cert(logs)
    port = free_port()
    docs = [
        d for d in webhook_configurations(port, ca, SUFFIX)
        if d["webhooks"][0]["name"].endswith("queue.volcano.sh")
    ]  # fmt: skip
    assert len(docs) == 2, "deploy/controllers/webhooks.yaml lost a Queue webhook"

    async def setup() -> Any:
        async with testbed.admin_client() as api:
            await install_scheduler_manifests(api)  # the namespace and the default Queue
            await install_controller_manifests(api)
            return await testbed.service_account_kubeconfig(api, NAMESPACE, SERVICE_ACCOUNT)

    proc = ControllersProcess(
        run_async(setup()), logs / "controllers.log", "e2e-queue-webhook",
        "--webhook-host", "127.0.0.1", "--webhook-port", str(port),
        "--tls-cert", str(cert), "--tls-key", str(key),
    )  # fmt: skip
    proc.start()
    try:
        proc.wait_for_line("controllers synced", 60)
        run_async(_register(testbed, docs))
        yield
    finally:
        # Unregistered first: with failurePolicy Fail a dead webhook blocks Queue writes.
        run_async(_unregister(testbed, docs))
        with contextlib.suppress(Exception):
            proc.terminate()


async def _register(testbed: Testbed, docs: list[dict[str, Any]]) -> None:
    """Register the webhooks and wait until the API server calls them."""
    async with testbed.admin_client() as api:
        await register_webhooks(api, docs)
        probe = _name("probe")

        async def refused() -> bool:
            try:
                await request(api, "POST", QUEUES, _queue(probe, deserved={"cpu": "-1"}))
            except ApiException as exc:
                return "validatequeue.volcano.sh" in str(exc.reason)
            await request(api, "DELETE", f"{QUEUES}/{probe}")
            return False

        await wait_for(refused, 30, "the Queue webhook to be called", interval=0.5)


async def _unregister(testbed: Testbed, docs: list[dict[str, Any]]) -> None:
    async with testbed.admin_client() as api:
        await unregister_webhooks(api, docs)
        for queue in (await request(api, "GET", QUEUES))["items"]:
            name = queue["metadata"]["name"]
            if name.endswith(SUFFIX):
                with contextlib.suppress(ApiException):
                    await request(api, "DELETE", f"{QUEUES}/{name}")


@pytest.fixture
async def api(controllers: None, testbed: Testbed) -> AsyncIterator[ApiClient]:
    async with testbed.admin_client() as client:
        yield client


async def _refusal(call: Any) -> str:
    """The API server's answer to a write the webhook must refuse."""
    with pytest.raises(ApiException) as refused:
        await call
    return str(refused.value.reason)


async def _stored(api: ApiClient, name: str) -> dict[str, Any] | None:
    try:
        return await request(api, "GET", f"{QUEUES}/{name}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


async def test_a_bad_queue_is_refused_with_its_reasons_and_not_stored(api: ApiClient) -> None:
    name = _name("bad")
    bad = _queue(name, capability={"cpu": "2"}, deserved={"cpu": "4", "nvidia.com/gpu": "0.5"})
    message = await _refusal(request(api, "POST", QUEUES, bad))
    assert 'admission webhook \\"validatequeue.volcano.sh\\" denied the request' in message
    assert f"queue {name} is refused: " in message
    assert "spec.deserved.nvidia.com/gpu 0.5 must be a whole number" in message
    assert "spec.deserved.cpu 4 is more than spec.capability.cpu 2" in message
    assert await _stored(api, name) is None


async def test_a_good_queue_is_stored_with_volcanos_defaults(api: ApiClient) -> None:
    name = _name("good")
    # weight 0 would break the CRD's minimum of 1: the mutating webhook makes it 1 first
    await request(api, "POST", QUEUES, _queue(name, weight=0, deserved={"cpu": "2"}))
    stored = await _stored(api, name)
    assert stored is not None
    assert stored["spec"]["weight"] == 1 and stored["spec"]["reclaimable"] is True
    assert stored["spec"]["deserved"] == {"cpu": "2"}
    await request(api, "DELETE", f"{QUEUES}/{name}")
    assert await _stored(api, name) is None


async def test_the_default_queue_cannot_be_deleted(api: ApiClient) -> None:
    message = await _refusal(request(api, "DELETE", f"{QUEUES}/default"))
    assert "queue default cannot be deleted: 'default' is one of the queues that always exist" in (
        message
    )
    assert await _stored(api, "default") is not None


async def test_a_tree_is_kept_sound_and_a_parent_outlives_its_children(api: ApiClient) -> None:
    group, team, other = _name("group"), _name("team"), _name("other")
    # Back to back, as `kubectl apply -f` of one file sends them: each is judged against
    # the ones before it even when the controllers' informer has not seen them yet.
    parent = _queue(group, capability={"cpu": "8"}, deserved={"cpu": "4"})
    await request(api, "POST", QUEUES, parent)
    await request(api, "POST", QUEUES, _queue(team, parent=group, capability={"cpu": "6"},
                                              deserved={"cpu": "3"}))  # fmt: skip
    too_much = _queue(other, parent=group, deserved={"cpu": "2"})
    message = await _refusal(request(api, "POST", QUEUES, too_much))
    assert f"parent queue '{group}': spec.deserved: its child queues ({other}, {team})" in message
    assert await _stored(api, other) is None

    # The parent cannot shrink below its child.
    shrink = {"spec": {"capability": {"cpu": "4"}}}
    patch = request(api, "PATCH", f"{QUEUES}/{group}", shrink, "application/merge-patch+json")
    message = await _refusal(patch)
    assert f"child queue '{team}': spec.capability.cpu 6 is more than 4" in message

    message = await _refusal(request(api, "DELETE", f"{QUEUES}/{group}"))
    assert f"queue {group} cannot be deleted: it has 1 child queues: {team}" in message
    assert await _stored(api, group) is not None
    await request(api, "DELETE", f"{QUEUES}/{team}")
    await request(api, "DELETE", f"{QUEUES}/{group}")  # at once: the webhook reads fresh
    assert await _stored(api, group) is None
