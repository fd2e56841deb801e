"""The cheapest binder that can be written here: the ceiling a scheduler cannot pass.

    python benchmarks/minimal_binder.py --kubeconfig KC --namespace NS --scheduler-name NAME

Makes no decision: it lists the pending pods of NAME in NS (paged, one field-selected
list), binds each to the next Ready KWOK node in turn (round-robin over their names),
``--concurrency`` binds in flight over one reused connection pool, and lists again until
none is left pending; then it waits to be stopped. ``--events`` also posts the
``Scheduled`` Event a scheduler writes per bound pod, after the bind and with slots of its
own: what writing that Event costs the API server, with no decision either. ``--watch``
also keeps one watch on every pod in the cluster open, as any scheduler must (asyncsched's
informer and kube-scheduler's both do), reading each frame and dropping it: what serving
one scheduler's pod watch costs the API server, with no decision either. ``--burn MS``
spends MS of the binder's own CPU after each bind, reading ``--ballast MB`` of objects in a
shuffled order (first built, before any bind): a scheduler's CPU and memory next to the API
server without its decisions, to tell what the machine's other work costs the API server
(a large ballast: reads mostly from memory; a small one: from the caches). Started by
``e2e_throughput.py --ceiling`` the same way as the schedulers it measures, so the binds per
second it reaches is what the API server, etcd and KWOK on this machine can take.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import secrets
import signal
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncsched.backends.kube.client import DEFAULT_CONNECTIONS, KubeClient, KubeError, connect


class _Meta(msgspec.Struct):
    name: str = ""
    uid: str = ""


class _Item(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _ListMeta(msgspec.Struct):
    cont: str = msgspec.field(default="", name="continue")


class _VersionMeta(msgspec.Struct):
    resourceVersion: str = ""


class _Version(msgspec.Struct):
    metadata: _VersionMeta = msgspec.field(default_factory=_VersionMeta)


class _List(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[_Item] = []


class Ballast:
    """CPU time spent reading objects laid out in a shuffled order, ``seconds`` per call.

    Floats made one after the other sit side by side in memory; the list's order is
    shuffled, so walking it jumps across all of them: with many megabytes, most reads come
    from memory rather than from the caches, as a scheduler's walks over its objects do.
    """

    def __init__(self, megabytes: float, seconds: float) -> None:
        count = max(1024, int(megabytes * 2**20 / 32))  # a float: 24 bytes, its slot: 8
        self.values = [float(i) for i in range(count)]
        random.Random(0).shuffle(self.values)
        self.seconds = seconds
        self.at = 0

    def burn(self) -> None:
        clock = time.process_time
        end = clock() + self.seconds
        values, at, size = self.values, self.at, len(self.values)
        while clock() < end:
            sum(values[at : at + 256])
            at = at + 256 if at + 256 < size else 0
        self.at = at


async def _listed(client: KubeClient, path: str, params: dict[str, str]) -> list[_Item]:
    found: list[_Item] = []
    page = {**params, "limit": "1000"}
    while True:
        answer = msgspec.json.decode(await client.get(path, page), type=_List)
        found.extend(answer.items)
        if not answer.metadata.cont:
            return found
        page = {**params, "limit": "1000", "continue": answer.metadata.cont}


async def bind_all(args: argparse.Namespace) -> None:
    # a connection per bind in flight, beside the lists and the watch
    client = await connect(
        args.kubeconfig, connections=max(DEFAULT_CONNECTIONS, args.concurrency + 4)
    )
    try:
        nodes = sorted(
            n.metadata.name
            for n in await _listed(client, "/api/v1/nodes", {"labelSelector": "type=kwok"})
        )
        turn = itertools.cycle(nodes)
        slots = asyncio.Semaphore(args.concurrency)
        event_slots = asyncio.Semaphore(args.concurrency)
        ballast = Ballast(args.ballast, args.burn / 1000) if args.burn > 0 else None
        path = f"/api/v1/namespaces/{args.namespace}/pods"
        selector = f"spec.nodeName=,spec.schedulerName={args.scheduler_name}"

        async def bind(pod: _Item, node: str) -> None:
            body = msgspec.json.encode({
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod.metadata.name, "uid": pod.metadata.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            })  # fmt: skip
            async with slots:
                try:
                    await client.post(f"{path}/{pod.metadata.name}/binding", body)
                except KubeError as exc:
                    print(f"bind {pod.metadata.name}: {exc}", file=sys.stderr)
                    return
            if ballast is not None:
                ballast.burn()
            if args.events:
                async with event_slots:
                    await tell(pod, node)

        async def tell(pod: _Item, node: str) -> None:
            name = pod.metadata.name
            event = msgspec.json.encode({
                "metadata": {"name": f"{name}.{secrets.token_hex(6)}"},
                "involvedObject": {"kind": "Pod", "namespace": args.namespace, "name": name,
                                   "uid": pod.metadata.uid, "apiVersion": "v1"},
                "reason": "Scheduled", "type": "Normal",
                "message": f"Successfully assigned {args.namespace}/{name} to {node}",
                "source": {"component": "minimal-binder"}, "count": 1,
            })  # fmt: skip
            try:
                await client.post(f"/api/v1/namespaces/{args.namespace}/events", event)
            except KubeError as exc:
                print(f"event {name}: {exc}", file=sys.stderr)

        watcher = asyncio.create_task(watch_pods(client)) if args.watch else None
        while True:
            if watcher is not None and watcher.done():
                watcher.result()
            pending = await _listed(client, path, {"fieldSelector": selector})
            if pending:
                await asyncio.gather(*(bind(pod, next(turn)) for pod in pending))
            else:
                await asyncio.sleep(0.2)
    finally:
        await client.close()


async def _version(client: KubeClient) -> str:
    listed = await client.get("/api/v1/pods", {"limit": "1"})
    return msgspec.json.decode(listed, type=_Version).metadata.resourceVersion


async def watch_pods(client: KubeClient) -> None:
    """Every pod's changes, as the scheduler's informer asks for them (protobuf, bookmarks,
    from a list's resourceVersion, renewed from a fresh one when the server ends it)."""
    while True:
        params = {
            "watch": "true", "resourceVersion": await _version(client),
            "allowWatchBookmarks": "true",
        }  # fmt: skip
        async for _frames in client.stream_protobuf("/api/v1/pods", params, timeout=3600):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--scheduler-name", required=True)
    parser.add_argument("--concurrency", type=int, default=128,
                        help="binds in flight (128 bound faster than 64 on the bed; "
                             "asyncsched's default too)")  # fmt: skip
    parser.add_argument("--events", action="store_true", help="a Scheduled Event per bind")
    parser.add_argument("--watch", action="store_true", help="one pod watch, frames dropped")
    parser.add_argument("--burn", type=float, default=0.0,
                        help="ms of CPU spent after each bind, reading the ballast")  # fmt: skip
    parser.add_argument("--ballast", type=float, default=1.0,
                        help="MB of objects --burn reads, in a shuffled order")  # fmt: skip
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    asyncio.run(bind_all(args))


if __name__ == "__main__":
    main()
