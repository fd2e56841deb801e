"""The scheduler's status writer against the real API server: what it writes, and how often."""

from __future__ import annotations

from asyncsched.api.volcano import PodGroupStatus
from asyncsched.backends.kube.client import connect
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.framework.results import PodGroupUpdate
from tests.e2e.conftest import Kube
from tests.e2e.scheduler_proc import create, request


async def test_statuses_decided_while_a_write_waits_are_sent_once_as_the_newest(
    kube: Kube,
) -> None:
    namespace = kube.namespace
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg"}, "spec": {"minMember": 3, "queue": "default"},
    }  # fmt: skip
    await create(kube.api, podgroup, namespace)
    client = await connect(str(kube.bed.kubeconfig))
    try:
        writer = StatusWriter(client, "test", concurrency=1)
        current = PodGroupStatus()
        for running in (1, 2, 3):  # three sessions' worth, before the first write is sent
            update = PodGroupUpdate(
                job=f"{namespace}/pg", namespace=namespace, name="pg", phase="Running",
                conditions=(), running=running, succeeded=0, failed=0,
            )  # fmt: skip
            current = writer.podgroup(update, current) or current
        await writer.drain()
    finally:
        await client.close()

    path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/pg"
    status = (await request(kube.api, "GET", path))["status"]
    assert (status["phase"], status["running"]) == ("Running", 3)
    assert (writer.writes, writer.errors) == (1, 0)
