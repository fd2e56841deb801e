"""The scheduler's status writer against the real API server: what it writes, and how often."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import msgspec
import pytest

from asyncsched.api.volcano import PodGroupStatus
from asyncsched.backends.kube import status as status_module
from asyncsched.backends.kube.binder import Binder
from asyncsched.backends.kube.client import MERGE_PATCH, KubeClient, connect
from asyncsched.backends.kube.status import MAX_QUEUED_EVENTS, StatusWriter
from asyncsched.framework.results import PodGroupUpdate
from tests.e2e.conftest import Kube
from tests.e2e.scheduler_proc import create, request


async def _create_podgroup(kube: Kube) -> None:
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg"}, "spec": {"minMember": 3, "queue": "default"},
    }  # fmt: skip
    await create(kube.api, podgroup, kube.namespace)


async def _create_pods(kube: Kube, count: int) -> None:
    """Pods p0, p1, ... that no scheduler takes: the tests bind them themselves."""
    for i in range(count):
        pod = {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "x"}]},
        }  # fmt: skip
        await create(kube.api, pod, kube.namespace)


def _running(namespace: str, running: int) -> PodGroupUpdate:
    return PodGroupUpdate(
        job=f"{namespace}/pg", namespace=namespace, name="pg", phase="Running",
        conditions=(), running=running, succeeded=0, failed=0,
    )  # fmt: skip


async def test_statuses_decided_while_a_write_waits_are_sent_once_as_the_newest(
    kube: Kube,
) -> None:
    namespace = kube.namespace
    await _create_podgroup(kube)
    client = await connect(str(kube.bed.kubeconfig))
    try:
        writer = StatusWriter(client, "test", concurrency=1)
        current = PodGroupStatus()
        for running in (1, 2, 3):  # three sessions' worth, before the first write is sent
            current = writer.podgroup(_running(namespace, running), current) or current
        await writer.drain()
    finally:
        await client.close()

    path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/pg"
    status = (await request(kube.api, "GET", path))["status"]
    assert (status["phase"], status["running"]) == ("Running", 3)
    assert (writer.writes, writer.errors) == (1, 0)


async def test_a_podgroup_has_one_status_write_in_flight_and_the_newest_lands_last(
    kube: Kube,
) -> None:
    """Two writes of one PodGroup in flight at once could land newest first, leaving the
    older status in the cluster while the scheduler believes the newer one is there."""
    namespace = kube.namespace
    await _create_podgroup(kube)
    client = await connect(str(kube.bed.kubeconfig))
    in_flight, most = 0, 0
    sent: list[bytes] = []
    patch = client.patch

    async def counted(path: str, body: bytes, content_type: str = MERGE_PATCH) -> bytes:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            answer = await patch(path, body, content_type)
            sent.append(body)  # (the first try, on /status, is refused: no such subresource)
            return answer
        finally:
            in_flight -= 1

    client.patch = counted  # type: ignore[method-assign]
    try:
        writer = StatusWriter(client, "test", concurrency=8)
        current = PodGroupStatus()
        for running in (1, 2, 3):
            current = writer.podgroup(_running(namespace, running), current) or current
            if running == 1:
                for _ in range(3):  # the first write gets its slot and is sent
                    await asyncio.sleep(0)
                assert in_flight == 1
        await writer.drain()
    finally:
        await client.close()

    path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/pg"
    status = (await request(kube.api, "GET", path))["status"]
    assert status["running"] == 3
    assert (most, writer.writes, writer.errors) == (1, 2, 0)
    assert [b'"running":1' in body for body in sent] == [True, False]


async def test_events_past_a_full_queue_are_dropped_and_a_stop_waits_only_its_grace(
    kube: Kube,
) -> None:
    namespace = kube.namespace
    client = await connect(str(kube.bed.kubeconfig))
    dropped: list[int] = []
    try:
        writer = StatusWriter(
            client, "test", concurrency=1, on_event_dropped=lambda: dropped.append(1)
        )
        for i in range(MAX_QUEUED_EVENTS + 200):  # one burst: none is sent before the last
            writer.event("Pod", namespace, f"p{i}", "", "Scheduled", f"pod {i}")
        assert writer.events_dropped == len(dropped) == 200
        loop = asyncio.get_running_loop()
        began = loop.time()
        # A grace far shorter than the queue takes: 1,000 Events one at a time took about
        # 1 s on a quiet machine, so a 1 s grace could see them all through.
        await writer.drain(grace=0.2)
        waited = loop.time() - began
    finally:
        await client.close()

    assert waited < 2.2, f"a 0.2 s grace took {waited:.1f} s"
    events = (await request(kube.api, "GET", f"/api/v1/namespaces/{namespace}/events"))["items"]
    sent = [e for e in events if e["reason"] == "Scheduled"]
    assert 0 < len(sent) < MAX_QUEUED_EVENTS, "some sent within the grace, the rest given up"
    # the one in flight at the deadline may have reached the server before it was given up
    assert writer.writes <= len(sent) <= writer.writes + 1


async def test_events_wait_until_no_bind_is_on_the_way(kube: Kube) -> None:
    """In a burst the API server paces the binds; an Event sent then takes its time from
    them. The Scheduled Event of the first bind goes out once the last bind is answered."""
    namespace = kube.namespace
    await _create_pods(kube, 5)
    client = await connect(str(kube.bed.kubeconfig))
    began: list[str] = []
    post = client.post

    async def recorded(path: str, body: bytes) -> bytes:
        what = "bind" if path.endswith("/binding") else "event"
        began.append(what)
        answer = await post(path, body)
        began.append(f"{what} answered")
        return answer

    client.post = recorded  # type: ignore[method-assign]
    try:
        binder = Binder(client, concurrency=1)
        writer = StatusWriter(client, "test", yield_to_binds=binder.quiet)
        for i in range(5):
            binder.submit(namespace, f"p{i}", "", "node-a", {})
        writer.event("Pod", namespace, "p0", "", "Scheduled", "bound to node-a")
        await binder.drain()
        await writer.drain()
    finally:
        await client.close()
    assert began == ["bind", "bind answered"] * 5 + ["event", "event answered"]
    assert (binder.sent, writer.writes, writer.errors) == (5, 1, 0)


async def test_a_write_that_yields_waits_for_the_binds_only_so_long(
    kube: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Binds that never stop (a pod refused and bound again every session) must not hold a
    PodGroup's status back for good: past ``YIELD_AT_MOST`` it is written anyway."""
    monkeypatch.setattr(status_module, "YIELD_AT_MOST", 0.5)
    namespace = kube.namespace
    await _create_podgroup(kube)

    async def binds_never_stop() -> None:
        await asyncio.Event().wait()

    client = await connect(str(kube.bed.kubeconfig))
    try:
        writer = StatusWriter(client, "test", yield_to_binds=binds_never_stop)
        writer.podgroup(_running(namespace, 3), PodGroupStatus())
        await asyncio.sleep(0.2)
        written_early = writer.writes
        await writer.drain(grace=3.0)  # gives up on what is left after 3 s
    finally:
        await client.close()
    path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/pg"
    status = (await request(kube.api, "GET", path))["status"]
    assert (written_early, writer.writes, status["phase"]) == (0, 1, "Running")


def _recording(client: KubeClient, began: list[str]) -> None:
    """Note each bind and each PodGroup status write (with its phase) as it begins."""
    post, patch = client.post, client.patch

    async def posted(path: str, body: bytes) -> bytes:
        began.append("bind")
        return await post(path, body)

    async def patched(path: str, body: bytes, content_type: str = MERGE_PATCH) -> bytes:
        if not path.endswith("/status"):  # the first try, on /status, finds no subresource
            phase = msgspec.json.decode(body)["status"]["phase"]
            began.append(f"{path.rsplit('/', 1)[1]} {phase}")
        return await patch(path, body, content_type)

    client.post = posted  # type: ignore[method-assign]
    client.patch = patched  # type: ignore[method-assign]


@contextlib.asynccontextmanager
async def _five_binds_on_the_way(kube: Kube, began: list[str]) -> AsyncIterator[StatusWriter]:
    """A status writer that yields to a binder with binds of p0..p4 on their way (one slot),
    both drained on leaving; each bind and PodGroup status write is noted in ``began``."""
    client = await connect(str(kube.bed.kubeconfig))
    _recording(client, began)
    try:
        binder = Binder(client, concurrency=1)
        writer = StatusWriter(client, "test", yield_to_binds=binder.quiet)
        for i in range(5):
            binder.submit(kube.namespace, f"p{i}", "", "node-a", {})
        yield writer
        await binder.drain()
        await writer.drain()
    finally:
        await client.close()


async def test_podgroup_statuses_wait_for_the_binds_unless_a_controller_acts_on_them(
    kube: Kube,
) -> None:
    """While binds are on the way, a Running status waits for them; an Inqueue one (on which
    Volcano's job controller creates the job's pods) is written at once, and takes the
    newest status with it when a Running one was already waiting."""
    namespace = kube.namespace
    await _create_podgroup(kube)
    second = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg2"}, "spec": {"minMember": 3, "queue": "default"},
    }  # fmt: skip
    await create(kube.api, second, namespace)
    await _create_pods(kube, 5)
    running = _running(namespace, 3)
    inqueue = msgspec.structs.replace(_running(namespace, 0), name="pg2", phase="Inqueue")
    began: list[str] = []
    async with _five_binds_on_the_way(kube, began) as writer:
        writer.podgroup(running, PodGroupStatus())
        writer.podgroup(inqueue, PodGroupStatus())
    assert began[0] == "bind" and began.index("pg2 Inqueue") < 5 < began.index("pg Running")
    assert sorted(began) == ["bind"] * 5 + ["pg Running", "pg2 Inqueue"]

    began.clear()
    async with _five_binds_on_the_way(kube, began) as writer:  # refused now: bound already
        waiting = msgspec.structs.replace(inqueue, phase="Running", running=1)
        current = writer.podgroup(waiting, PodGroupStatus()) or PodGroupStatus()
        writer.podgroup(msgspec.structs.replace(inqueue, phase="Inqueue", running=2), current)
    assert began.index("pg2 Inqueue") < 5 and began.count("bind") == 5
    assert (writer.writes, writer.errors) == (1, 0), "the waiting status went with it"
