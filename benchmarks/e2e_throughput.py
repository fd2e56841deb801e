"""Creation-to-bound throughput and latency on the real test bed (KWOK nodes).

    python benchmarks/e2e_throughput.py --nodes 100 --pods 1000 --lone 50 \\
        --compare-kube-scheduler

Starts a bed (tests/e2e/testbed.py) with N KWOK nodes, or reuses one with
``--bed DIR`` (started there if DIR holds none, and left running); starts
``asyncsched scheduler`` as a process with deploy/'s ServiceAccount (``--rbac admin``
for the admin identity) unless ``--external``; creates P pods in a burst
(``--concurrency`` creates in flight) and waits until every one is bound.
``--lone N`` first creates N pods one at a time on the idle cluster, each
waited for. ``--compare-kube-scheduler`` then runs the same with kube-scheduler
(from the bed's bin dir, pods with schedulerName default-scheduler) on the same
bed, the cluster cleaned in between, and prints the ratio.

Clocks. The API server stamps objects in whole seconds (creationTimestamp, the
PodScheduled condition's lastTransitionTime), too coarse for milliseconds, so
the figures are taken on the benchmark's own wall clock (the same host clock
as the API server's): a pod is *created* when the POST's answer or the ADDED
event of the benchmark's own watch arrives (the first of the two), and *bound*
when the first watch event carrying spec.nodeName arrives. Throughput is
pods / (last bound - first POST sent). The ``server_clock`` figures repeat the
measurement with the API server's whole-second stamps as a cross-check.

``--precreate`` is issue 16's protocol instead: every pod (with ``--gang N``, in PodGroups of
minMember N) is created before the scheduler starts, the schedulers run one after the other
on the same bed, throughput counts from the first bind to the last, and each scheduler's CPU
is read from /proc (all it used since it started). ``--ceiling`` measures
benchmarks/minimal_binder.py (round-robin, no decision) the same way, first and last: the
binds per second this machine's API server, etcd and KWOK can take, and every figure is also
given as a fraction of the mean of the two (``--rounds N`` repeats it all, each round read
against its own binder runs, since the ceiling moves with the machine's load; plain pods
and PodGroups swap places every other round, as the bed slows while runs pile up).
``--ceiling-between`` also runs the binder between every two other runs, and each run is
then read against the binder runs just before and after it, the nearest readings of a
ceiling that moves from run to run (benchmarks/ceiling_reading.py has the figures). Each
run is also read at the pace KWOK's CPU per pod shows (``fraction_of_ceiling_at_kwok_pace``;
ceiling_reading.py says why, and what that reading cannot see), the processes' context
switches in the window are counted (``window_context_switches``: voluntary, involuntary),
and its binds are counted per second (``binds_by_second``: slow throughout, or stalled).
``--binder-events`` and ``--binder-watch`` also measure the binder posting a Scheduled Event
per bind, or holding one pod watch open as every scheduler does: what each of those costs
the bed, read against the same ceiling. ``--binder-burn MS`` also measures it spending MS of
its own CPU after each bind reading ``--binder-ballast MB ...`` of objects (one run per
size): what a scheduler's CPU, from the caches or from memory, costs the API server.
``--external CMD`` measures any other scheduler started by CMD the same way
(pods of ``--scheduler-name``; ``{kubeconfig}``, ``{namespace}``, ``{scheduler_name}`` are
filled in, ``KUBECONFIG`` is set):

    python benchmarks/e2e_throughput.py --nodes 1000 --pods 10000 --precreate --gang 10 \
        --ceiling --compare-kube-scheduler --kube-scheduler-qps 2000

Each ``--precreate`` run first waits until the control plane is about idle (the previous
run's aftermath out of its window: ``seconds_settling``), and reports besides the
scheduler's CPU what the API server, etcd, KWOK and the controller-manager used
(``bed_cpu_seconds``) and their resident MB and etcd's database size before the run
(``bed_mb_before``), the machine's CPU between the first and the last bind
(``window_cpu_seconds``, ``machine_cpu_ms_per_pod``: on two shared cores this, more than
the scheduler's own CPU, sets the rate), how long each of their threads waited for a core
in that window (``window_runqueue_wait_seconds``, summed over threads), the API server's
write counts at the last bind
and 3 s after it (``api_writes_by_last_bind``, ``api_writes``), its reads (GET, LIST and
WATCH requests) by the last bind (``api_reads_by_last_bind``), the API server's Go collector
cycles from the scheduler's start to the last bind and its live heap before
(``apiserver_gc``), the watch events and bytes
the API server sent by the last bind, by resource (``watch_sent_by_last_bind``), and with
``--gang`` the
seconds from the last bind until every PodGroup shows Running.

With ``--precreate``, ``--lone N`` first measures each scheduler (not the minimal binder,
which does not watch) on the idle cluster: started on its own once the bed is about idle
(the previous burst's aftermath done, as before a burst), one uncounted pod bound to know
it is ready, then N pods created one at a time, each timed from creation to bound as the
watch sees it (``--pods 0``: the lone pods only).

asyncsched runs from this checkout (``--source DIR``: another copy), or with
``--installed`` from the package installed for this Python, refused in one line if that
is a checkout (see target.py). The last line on stdout is one JSON object with every
figure, and the version, import folder and kernels (``native``) of the scheduler measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import ceiling_reading  # benchmarks/: this script's folder is first on sys.path
import msgspec
import perf_window
import target
import yaml

ROOT = target.ROOT
_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--source", type=Path, default=ROOT)
SOURCE: Path = _pre.parse_known_args()[0].source.resolve()
"""Where asyncsched is imported from, here and in the scheduler process (tests/ is ROOT's)."""
INSTALLED = target.put_on_path(sys.argv, SOURCE)
SCHEDULER_CWD = Path(tempfile.gettempdir()) if INSTALLED else SOURCE
"""`python -m` puts its working directory first on the path: the checkout's, or none."""
SCHEDULER_ENV = {
    **{k: v for k, v in os.environ.items() if not (INSTALLED and k == "PYTHONPATH")},
    "PYTHONUNBUFFERED": "1",
}

from asyncsched.backends.kube.client import KubeClient, KubeError, connect  # noqa: E402
from tests.e2e import kubeops  # noqa: E402
from tests.e2e.procs import Component, free_port, wait_http  # noqa: E402
from tests.e2e.scheduler_proc import (  # noqa: E402
    DEPLOY,
    NAMESPACE,
    SERVICE_ACCOUNT,
    SchedulerProcess,
    apply,
)
from tests.e2e.testbed import Testbed  # noqa: E402

CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}
BINDER = ceiling_reading.BINDER
NODE_PREFIX = "kwok-node-"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- what the benchmark decodes of a pod ------------------------------------------------


class _Condition(msgspec.Struct):
    type: str = ""
    status: str = ""
    lastTransitionTime: str | None = None


class _Meta(msgspec.Struct):
    name: str = ""
    creationTimestamp: str | None = None
    resourceVersion: str = ""


class _Spec(msgspec.Struct):
    nodeName: str = ""


class _Status(msgspec.Struct):
    conditions: list[_Condition] = []


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


class _Event(msgspec.Struct):
    type: str
    object: _Pod


class _List(msgspec.Struct):
    metadata: _Meta
    items: list[_Pod] = []


class _PhaseOnly(msgspec.Struct):
    phase: str = ""


class _PodGroup(msgspec.Struct):
    status: _PhaseOnly = msgspec.field(default_factory=_PhaseOnly)


class _PodGroupList(msgspec.Struct):
    items: list[_PodGroup] = []


class _NodeCondition(msgspec.Struct):
    type: str = ""
    status: str = ""


class _Taint(msgspec.Struct):
    key: str = ""


class _NodeSpec(msgspec.Struct):
    taints: list[_Taint] = []


class _NodeStatus(msgspec.Struct):
    conditions: list[_NodeCondition] = []


class _Node(msgspec.Struct):
    metadata: _Meta
    spec: _NodeSpec = msgspec.field(default_factory=_NodeSpec)
    status: _NodeStatus = msgspec.field(default_factory=_NodeStatus)


class _NodeList(msgspec.Struct):
    items: list[_Node] = []


def _stamp(text: str | None) -> float | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


# -- the watch ---------------------------------------------------------------------------


@dataclass
class Observed:
    posted: float | None = None  # POST sent
    answered: float | None = None  # POST answered
    added: float | None = None  # ADDED event arrived
    bound: float | None = None  # first event with spec.nodeName arrived
    server_created: float | None = None  # creationTimestamp (whole seconds)
    server_scheduled: float | None = None  # PodScheduled=True lastTransitionTime (whole s)

    @property
    def created(self) -> float | None:
        seen = [t for t in (self.answered, self.added) if t is not None]
        return min(seen) if seen else None


@dataclass
class PodWatch:
    """Watches the pods of one namespace and notes when each was seen created and bound."""

    client: KubeClient
    namespace: str
    pods: dict[str, Observed] = field(default_factory=dict)
    waiters: dict[str, asyncio.Event] = field(default_factory=dict)
    bound_count: int = 0
    all_bound: asyncio.Event = field(default_factory=asyncio.Event)
    expected: int = 0
    on_first_bound: Callable[[], None] | None = None

    def entry(self, name: str) -> Observed:
        found = self.pods.get(name)
        if found is None:
            found = self.pods[name] = Observed()
        return found

    async def run(self) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        listed = msgspec.json.decode(await self.client.get(path), type=_List)
        version = listed.metadata.resourceVersion
        decoder = msgspec.json.Decoder(_Event)
        while True:
            params = {
                "watch": "true",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "600",
            }
            async for line in self.client.stream(path, params, timeout=630):
                arrived = time.time()
                event = decoder.decode(line)
                pod = event.object
                version = pod.metadata.resourceVersion or version
                if event.type in ("BOOKMARK", "DELETED"):
                    continue
                if event.type == "ERROR":
                    raise KubeError(0, f"watch error: {line[:300]!r}")
                seen = self.entry(pod.metadata.name)
                if seen.added is None:
                    seen.added = arrived
                    seen.server_created = _stamp(pod.metadata.creationTimestamp)
                if pod.spec.nodeName and seen.bound is None:
                    seen.bound = arrived
                    self.bound_count += 1
                    if self.bound_count == 1 and self.on_first_bound is not None:
                        self.on_first_bound()
                    waiter = self.waiters.pop(pod.metadata.name, None)
                    if waiter is not None:
                        waiter.set()
                    if self.expected and self.bound_count >= self.expected:
                        self.all_bound.set()
                if seen.server_scheduled is None:
                    for c in pod.status.conditions:
                        if c.type == "PodScheduled" and c.status == "True":
                            seen.server_scheduled = _stamp(c.lastTransitionTime)


# -- figures -----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))  # nearest rank
    return ordered[rank]


def latency_figures(pods: Sequence[Observed]) -> dict[str, Any]:
    ms: list[float] = []
    from_post: list[float] = []
    for p in pods:
        created, bound = p.created, p.bound
        if bound is None or created is None:
            continue
        ms.append((bound - created) * 1000)
        if p.posted is not None:
            from_post.append((bound - p.posted) * 1000)
    server = [
        p.server_scheduled - p.server_created
        for p in pods
        if p.server_scheduled is not None and p.server_created is not None
    ]
    return {
        "bound": len(ms),
        "p50_ms": round(percentile(ms, 50), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms, default=float("nan")), 1),
        "from_post_p50_ms": round(percentile(from_post, 50), 1),
        "from_post_p99_ms": round(percentile(from_post, 99), 1),
        "server_clock": {
            "p50_s": percentile(server, 50),
            "p99_s": percentile(server, 99),
            "resolution_s": 1,
        },
    }


def burst_figures(pods: Sequence[Observed], elapsed_create: float) -> dict[str, Any]:
    figures = latency_figures(pods)
    posted = [p.posted for p in pods if p.posted is not None]
    bound = [p.bound for p in pods if p.bound is not None]
    span = max(bound) - min(posted) if bound and posted else float("nan")
    server_created = [p.server_created for p in pods if p.server_created is not None]
    server_bound = [p.server_scheduled for p in pods if p.server_scheduled is not None]
    server_span = (
        max(server_bound) - min(server_created) + 1 if server_bound and server_created else 0
    )
    figures["throughput_pods_per_s"] = round(len(bound) / span, 1) if bound and posted else 0.0
    figures["seconds_first_create_to_last_bind"] = round(span, 2)
    figures["create_seconds"] = round(elapsed_create, 2)
    figures["create_rate_pods_per_s"] = round(len(posted) / elapsed_create, 1)
    figures["server_clock"]["throughput_pods_per_s"] = (
        round(len(server_bound) / server_span, 1) if server_span else 0.0
    )
    return figures


def cpu_seconds(pid: int | None) -> float:
    """user+system CPU time of a process and its reaped children (0 if unknown)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def resident_mb(pid: int | None) -> float | None:
    """A process's resident memory now, in MB (None if unknown)."""
    if pid is None:
        return None
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def thread_cpu_seconds(pid: int | None) -> dict[str, float]:
    """user+system CPU of the process's main thread and of its other threads (those alive
    now): in asyncsched, the main thread runs the event loop (binds, watches, snapshots)
    and the others the sessions."""
    split = {"main thread": 0.0, "other threads": 0.0}
    if pid is None:
        return split
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            which = "main thread" if stat.parent.name == str(pid) else "other threads"
            split[which] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return split


def runqueue_wait_seconds(pid: int | None) -> float:
    """Seconds the process's threads (those alive now) have waited on a run queue, ready
    to run with no core free: on shared cores, what the others' work cost this one in time
    (the kernel's schedstat; 0 if unknown)."""
    if pid is None:
        return 0.0
    waited = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            waited += int(stat.read_text().split()[1])
    return waited / 1e9


def bed_waits(bed: Testbed, scheduler: Scheduler) -> dict[str, float]:
    waits = {name: runqueue_wait_seconds(comp.pid) for name, comp in bed.components.items()}
    return {**waits, "scheduler": runqueue_wait_seconds(scheduler.pid)}


def context_switches(pid: int | None) -> tuple[int, int]:
    """Voluntary and involuntary context switches of the process's threads (those alive
    now): a thread that blocks, and one the kernel took a core from."""
    counts = [0, 0]
    if pid is None:
        return (0, 0)
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            for line in status.read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches"):
                    counts[0] += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    counts[1] += int(line.split()[1])
    return (counts[0], counts[1])


def bed_switches(bed: Testbed, scheduler: Scheduler) -> dict[str, tuple[int, int]]:
    found = {name: context_switches(comp.pid) for name, comp in bed.components.items()}
    return {**found, "scheduler": context_switches(scheduler.pid)}


def binds_by_second(bound: Sequence[float]) -> list[int]:
    """Binds in each whole second from the first (the last second partial): whether a slow
    run was slow throughout or stalled."""
    if not bound:
        return []
    counts = [0] * (int(bound[-1] - bound[0]) + 1)
    for at in bound:
        counts[int(at - bound[0])] += 1
    return counts


WRITE_VERBS = ("POST", "PATCH", "PUT", "DELETE")
READ_VERBS = ("GET", "LIST", "WATCH")


async def api_writes(client: KubeClient, verbs: tuple[str, ...] = WRITE_VERBS) -> dict[str, float]:
    """The API server's count of write requests so far (or of ``verbs``), by ``VERB
    resource[/subresource]`` (its apiserver_request_total), every client together: the
    difference over a run, set against another scheduler's on the same bed, is what the
    scheduler wrote (or read)."""
    text = (await client.get("/metrics")).decode()
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line[len("apiserver_request_total{") :].rpartition("} ")
        labels = dict(
            (k, v.strip('"')) for k, _, v in (p.partition("=") for p in labels_text.split(","))
        )
        if labels.get("verb") not in verbs:
            continue
        what = labels.get("resource", "") + (
            f"/{labels['subresource']}" if labels.get("subresource") else ""
        )
        key = f"{labels['verb']} {what}"
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


async def watch_sent(client: KubeClient) -> dict[str, float]:
    """What the API server has sent to watchers so far, by resource: events and bytes
    (its apiserver_watch_events_total and apiserver_watch_events_sizes_sum), every watcher
    together; the difference over a run says which watches the scheduler's burst fed."""
    text = (await client.get("/metrics")).decode()
    sent: dict[str, float] = {}
    for line in text.splitlines():
        for metric, unit in (
            ("apiserver_watch_events_total{", "events"),
            ("apiserver_watch_events_sizes_sum{", "bytes"),
        ):
            if line.startswith(metric):
                labels_text, _, value = line[len(metric) :].rpartition("} ")
                labels = dict(
                    (k, v.strip('"'))
                    for k, _, v in (p.partition("=") for p in labels_text.split(","))
                )
                what = labels.get("resource") or labels.get("kind") or "?"
                key = f"{what} {unit}"
                sent[key] = sent.get(key, 0.0) + float(value)
    return sent


async def apiserver_heap(client: KubeClient) -> dict[str, float]:
    """The API server's Go collector so far: its cycles, and its live heap in MB. A cycle
    walks the whole live heap (1.5 GB once the watch cache holds a burst's pods), so
    whether one falls inside a run's window moves the API server's CPU for the same binds."""
    wanted = {"go_gc_cycles_total_gc_cycles_total": "gc cycles", "go_gc_heap_live_bytes": "live"}
    found: dict[str, float] = {}
    for line in (await client.get("/metrics")).decode().splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            found[wanted[name]] = float(value)
    if "live" in found:
        found["live MB"] = round(found.pop("live") / 2**20, 1)
    return found


def writes_between(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    return {
        k: int(v - before.get(k, 0.0))
        for k, v in sorted(after.items())
        if v - before.get(k, 0.0) >= 1
    }


# -- the bed -----------------------------------------------------------------------------


def pod_manifest(name: str, scheduler: str, run: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": run}},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


async def ready_kwok_nodes(client: KubeClient) -> set[str]:
    body = await client.get("/api/v1/nodes", {"labelSelector": "type=kwok"})
    ready = set()
    for node in msgspec.json.decode(body, type=_NodeList).items:
        ok = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        tainted = {t.key for t in node.spec.taints} & kubeops.NOT_READY_TAINTS
        if ok and not tainted:
            ready.add(node.metadata.name)
    return ready


async def ensure_nodes(client: KubeClient, count: int, concurrency: int = 32) -> int:
    """At least `count` Ready KWOK nodes (kwok-node-0...), created concurrently; how many."""
    body = await client.get("/api/v1/nodes", {"labelSelector": "type=kwok"})
    existing = {n.metadata.name for n in msgspec.json.decode(body, type=_NodeList).items}
    wanted = [f"{NODE_PREFIX}{i}" for i in range(count)]
    missing = [n for n in wanted if n not in existing]
    if missing:
        log(f"creating {len(missing)} KWOK nodes")
    slots = asyncio.Semaphore(concurrency)

    async def create(name: str) -> None:
        async with slots:
            manifest = kubeops.node_manifest(name, CAPACITY)
            await client.post("/api/v1/nodes", msgspec.json.encode(manifest))

    await asyncio.gather(*(create(n) for n in missing))
    deadline = time.monotonic() + max(120, count / 5)
    while not set(wanted) <= (ready := await ready_kwok_nodes(client)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(set(wanted) & ready)}/{count} KWOK nodes Ready")
        await asyncio.sleep(1)
    log(f"{len(ready)} KWOK nodes Ready")
    if len(ready) > count:
        log(f"warning: the bed has {len(ready)} nodes, more than --nodes {count}")
    return len(ready)


async def install_scheduler_rbac(bed: Testbed) -> Path:
    """deploy/scheduler/ less its Deployment and Service; a kubeconfig of its ServiceAccount."""
    async with bed.admin_client() as api:
        for path in sorted(DEPLOY.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") not in (None, "Deployment", "Service"):
                    await apply(api, doc)
        return await bed.service_account_kubeconfig(api, NAMESPACE, SERVICE_ACCOUNT, 24 * 3600)


async def new_namespace(client: KubeClient, name: str) -> None:
    body = msgspec.json.encode({"metadata": {"name": name, "labels": {"bench": "true"}}})
    await client.post("/api/v1/namespaces", body)
    for _ in range(300):  # pods are refused until the `default` ServiceAccount exists
        with contextlib.suppress(KubeError):
            await client.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no default ServiceAccount in {name}")


async def clean_namespace(client: KubeClient, name: str) -> None:
    """Force-deletes the namespace's pods (grace 0), waits until they are gone, drops it."""
    started = time.monotonic()
    options = msgspec.json.encode({"kind": "DeleteOptions", "gracePeriodSeconds": 0})
    pods = f"/api/v1/namespaces/{name}/pods"
    while True:
        with contextlib.suppress(KubeError):
            await client.request("DELETE", pods, body=options, timeout=300)
        left = msgspec.json.decode(await client.get(pods, {"limit": "1"}), type=_List).items
        if not left:
            break
        await asyncio.sleep(1)
    with contextlib.suppress(KubeError):
        await client.request("DELETE", f"/api/v1/namespaces/{name}")
    log(f"cleaned namespace {name} in {time.monotonic() - started:.1f}s")


# -- schedulers --------------------------------------------------------------------------


class Scheduler:
    """A scheduler process (or none, with --external) with its CPU accounting."""

    name = "external"
    scheduler_name = ""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    @property
    def pid(self) -> int | None:
        return None


class AsyncSched(Scheduler):
    def __init__(
        self,
        kubeconfig: Path,
        log_path: Path,
        scheduler_name: str,
        profile: Path | None,
        native: bool = False,
        bind_concurrency: int | None = None,
    ):
        self.name = "asyncsched"
        self.scheduler_name = scheduler_name
        self.metrics_port = free_port()
        binds = ["--bind-concurrency", str(bind_concurrency)] if bind_concurrency else []
        self.proc = SchedulerProcess(
            kubeconfig, log_path, "bench", "--scheduler-name", scheduler_name,
            "--metrics-host", "127.0.0.1", "--metrics-port", str(self.metrics_port), *binds,
        )  # fmt: skip
        self.profile = profile
        self.native = native
        """Profile with native frames (the compiled core's functions by name): py-spy then
        stops the process at each sample, so the run's rate is not a figure."""
        self.profiler: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc.log.unlink(missing_ok=True)  # "informers synced" of this run only
        with self.proc.log.open("ab") as out:  # SchedulerProcess.start, but from SOURCE
            self.proc.proc = subprocess.Popen(
                self.proc.argv, stdout=out, stderr=subprocess.STDOUT, cwd=SCHEDULER_CWD,
                env=SCHEDULER_ENV, start_new_session=True,
            )  # fmt: skip
        self.proc.wait_for_line("informers synced", 300)

    def metrics(self) -> dict[str, float]:
        """Session and bind counters from its /metrics."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        wanted = {
            "asyncsched_sessions_total": "sessions",
            "asyncsched_session_duration_seconds_sum": "session_seconds",
            "asyncsched_binds_total": "binds",
            "asyncsched_bind_failures_total": "bind_failures",
            "asyncsched_podgroup_stale_echoes_total": "stale_echoes",
            "asyncsched_events_dropped_total": "events_dropped",
        }
        found: dict[str, float] = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name in wanted:
                found[wanted[name]] = float(value)
            elif name.startswith("asyncsched_session_causes_total{"):
                cause = name.partition('cause="')[2].partition('"')[0]
                found[f"woken by {cause}"] = float(value)
        return found

    def start_profile(self, phase: str) -> None:
        """py-spy on the process, into <profile dir>/asyncsched-profile-<phase>.txt: only the
        thread holding the GIL is sampled, so the stacks share out the CPU (a thread waiting
        for the GIL while a session runs would otherwise show where it waits)."""
        if self.profile is None or self.pid is None:
            return
        py_spy = shutil.which("py-spy")
        if py_spy is None:
            log("py-spy is not installed (pip install py-spy): no profile")
            return
        sampling = ["--native"] if self.native else ["--nonblocking"]
        self.profiler = subprocess.Popen(
            [py_spy, "record", "--pid", str(self.pid), "--rate", "200", "--format", "raw",
             "--threads", "--output", str(self.profile / f"asyncsched-profile-{phase}.txt"),
             "--gil", *sampling],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def stop_profile(self) -> None:
        if self.profiler is not None:
            self.profiler.send_signal(signal.SIGINT)
            self.profiler.wait(60)
            self.profiler = None
            log(f"py-spy profile (collapsed stacks) in {self.profile}")

    def stop(self) -> None:
        self.stop_profile()
        if self.proc.alive():
            try:
                self.proc.terminate(60)
            except subprocess.TimeoutExpired:
                log("asyncsched still running 60 s after SIGTERM: killed")
                self.proc.kill()

    @property
    def pid(self) -> int | None:
        return self.proc.proc.pid if self.proc.proc is not None else None


class KubeScheduler(Scheduler):
    def __init__(self, bed: Testbed, qps: int) -> None:
        self.name = "kube-scheduler"
        self.scheduler_name = "default-scheduler"
        self.port = free_port()
        self.qps = qps
        argv = [
            str(bed.bin_dir / "kube-scheduler"), f"--kubeconfig={bed.kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={self.port}",
        ]  # fmt: skip
        if qps:
            argv += [f"--kube-api-qps={qps}", f"--kube-api-burst={qps}"]
        self.component = Component("kube-scheduler", argv, bed.dir / "kube-scheduler.log")

    def start(self) -> None:
        self.component.start(die_with_parent=True)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.port}/healthz"
        wait_http(self.component, url, lambda b: b == b"ok", 60, context=insecure)

    def stop(self) -> None:
        self.component.stop()

    @property
    def pid(self) -> int | None:
        return self.component.pid


class CommandScheduler(Scheduler):
    """Any scheduler given as a command line (``--external CMD``), or the minimal binder
    (``--ceiling``): started like the others, its CPU read from /proc. ``{kubeconfig}``,
    ``{namespace}`` and ``{scheduler_name}`` in the command are filled in at start, and
    ``KUBECONFIG`` is set to the bed's admin kubeconfig."""

    def __init__(
        self, name: str, argv: list[str], bed: Testbed, scheduler_name: str, log_path: Path
    ) -> None:
        self.name = name
        self.scheduler_name = scheduler_name
        self.argv = argv
        self.bed = bed
        self.log_path = log_path
        self.namespace = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        fill = {
            "kubeconfig": str(self.bed.kubeconfig),
            "namespace": self.namespace,
            "scheduler_name": self.scheduler_name,
        }
        argv = [part.format(**fill) for part in self.argv]
        env = {**SCHEDULER_ENV, "KUBECONFIG": str(self.bed.kubeconfig)}
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, cwd=SCHEDULER_CWD, env=env,
                start_new_session=True,
            )  # fmt: skip

    def stop(self) -> None:
        """The command's whole process group: a wrapper (py-spy, say) leaves no scheduler."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None


def minimal_binder(
    bed: Testbed,
    scheduler_name: str,
    events: bool = False,
    watch: bool = False,
    burn: tuple[float, float] | None = None,
    concurrency: int | None = None,
) -> CommandScheduler:
    """``burn``: (ms of CPU after each bind, MB of ballast it reads; see minimal_binder.py);
    ``concurrency``: binds in flight (None: the binder's default)."""
    argv = [
        sys.executable, str(Path(__file__).resolve().parent / "minimal_binder.py"),
        "--kubeconfig", "{kubeconfig}", "--namespace", "{namespace}",
        "--scheduler-name", "{scheduler_name}", *(["--events"] if events else []),
        *(["--watch"] if watch else []),
        *(["--burn", str(burn[0]), "--ballast", str(burn[1])] if burn else []),
        *(["--concurrency", str(concurrency)] if concurrency else []),
    ]  # fmt: skip
    name = "minimal-binder" + ("-events" if events else "") + ("-watch" if watch else "")
    name += f"-burn{burn[0]:g}ms-{burn[1]:g}mb" if burn else ""
    return CommandScheduler(name, argv, bed, scheduler_name, bed.dir / f"{name}.log")


# -- one measured run --------------------------------------------------------------------


async def create_pod(client: KubeClient, path: str, body: bytes) -> None:
    for attempt in range(20):
        try:
            await client.post(path, body)
            return
        except KubeError as exc:
            if exc.status not in (0, 429, 500, 503, 504) or attempt == 19:
                raise
            await asyncio.sleep(0.1 * (attempt + 1))


async def one_pod(
    client: KubeClient,
    watch: PodWatch,
    scheduler: Scheduler,
    run: str,
    name: str,
    gap: float,
    timeout: float = 30.0,
) -> Observed:
    """Create one pod, wait until the watch sees it bound, then ``gap`` seconds."""
    seen = watch.entry(name)
    waiter = watch.waiters[name] = asyncio.Event()
    body = msgspec.json.encode(pod_manifest(name, scheduler.scheduler_name, run))
    seen.posted = time.time()
    await create_pod(client, f"/api/v1/namespaces/{watch.namespace}/pods", body)
    seen.answered = time.time()
    await asyncio.wait_for(waiter.wait(), timeout)
    await asyncio.sleep(gap)
    return seen


async def measure_lone(
    client: KubeClient,
    scheduler: Scheduler,
    args: argparse.Namespace,
    run: str,
    bed: Testbed,
) -> dict[str, Any]:
    """Lone pods on the idle cluster, the scheduler started for them: ``--lone`` pods created
    one at a time, each waited for, timed from creation to bound as the watch sees them. A
    first pod, not counted, waits until the scheduler has listed the cluster and binds.
    The scheduler starts once the bed is about idle (``settle``): after a burst, KWOK's
    backlog of status writes and the namespace sweep run for a minute or more."""
    namespace = f"bench-{run}"
    await new_namespace(client, namespace)
    result: dict[str, Any] = {
        "scheduler": scheduler.name,
        "schedulerName": scheduler.scheduler_name,
        "protocol": "lone",
    }
    if isinstance(scheduler, KubeScheduler):
        result["kube_api_qps"] = scheduler.qps or "default"
    watch = PodWatch(client, namespace)
    watcher = asyncio.create_task(watch.run())
    try:
        await asyncio.sleep(0.5)  # the watch is open
        result["seconds_settling"] = await settle(bed)
        if isinstance(scheduler, CommandScheduler):
            scheduler.namespace = namespace
        scheduler.start()
        await one_pod(client, watch, scheduler, run, "warm-up", 2.0, timeout=300)
        result["load_before"] = [round(x, 2) for x in os.getloadavg()]
        result["lone"] = await lone_pods(client, watch, scheduler, run, args)
        result["load_after"] = [round(x, 2) for x in os.getloadavg()]
        log(f"{scheduler.name} lone: {json.dumps(result)}")
    finally:
        await asyncio.to_thread(scheduler.stop)
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, KubeError):
            await watcher
    return result


async def lone_pods(
    client: KubeClient, watch: PodWatch, scheduler: Scheduler, run: str, args: argparse.Namespace
) -> dict[str, Any]:
    """``--lone`` pods created one at a time, ``--lone-gap`` apart: their latency figures."""
    if isinstance(scheduler, AsyncSched):
        scheduler.start_profile("lone")
    lone = [
        await one_pod(client, watch, scheduler, run, f"lone-{i:04d}", args.lone_gap)
        for i in range(args.lone)
    ]
    if isinstance(scheduler, AsyncSched):
        scheduler.stop_profile()
    return latency_figures(lone)


async def measure(
    client: KubeClient, scheduler: Scheduler, args: argparse.Namespace, run: str
) -> dict[str, Any]:
    namespace = f"bench-{run}"
    await new_namespace(client, namespace)
    watch = PodWatch(client, namespace)
    watcher = asyncio.create_task(watch.run())
    path = f"/api/v1/namespaces/{namespace}/pods"
    result: dict[str, Any] = {
        "scheduler": scheduler.name,
        "schedulerName": scheduler.scheduler_name,
    }
    if isinstance(scheduler, KubeScheduler):
        result["kube_api_qps"] = scheduler.qps or "default"
    try:
        await asyncio.sleep(0.5)  # the watch is open
        if args.lone:
            result["lone"] = await lone_pods(client, watch, scheduler, run, args)
            log(f"{scheduler.name} lone: {json.dumps(result['lone'])}")
            await asyncio.sleep(2)  # KWOK's status updates of the lone pods settle

        if args.pods:
            result["load_before"] = [round(x, 2) for x in os.getloadavg()]
            names = [f"burst-{i:05d}" for i in range(args.pods)]
            bodies = [
                msgspec.json.encode(pod_manifest(n, scheduler.scheduler_name, run)) for n in names
            ]
            burst = [watch.entry(n) for n in names]
            watch.expected = watch.bound_count + args.pods
            cpu_before = cpu_seconds(scheduler.pid)
            metrics_before = scheduler.metrics() if isinstance(scheduler, AsyncSched) else {}
            if isinstance(scheduler, AsyncSched):
                scheduler.start_profile("burst")
            queue = iter(range(args.pods))
            began = time.time()

            async def worker() -> None:
                for i in queue:
                    burst[i].posted = time.time()
                    await create_pod(client, path, bodies[i])
                    burst[i].answered = time.time()

            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            created = time.time() - began
            log(f"{args.pods} pods created in {created:.1f}s; waiting for binds")
            timeout = args.timeout or max(120.0, args.pods / 20)
            try:
                await asyncio.wait_for(watch.all_bound.wait(), timeout)
            except TimeoutError:
                log(f"timed out: {watch.bound_count} bound")
            if isinstance(scheduler, AsyncSched):
                scheduler.stop_profile()
            result["burst"] = burst_figures(burst, created)
            result["burst"]["scheduler_cpu_seconds"] = round(
                cpu_seconds(scheduler.pid) - cpu_before, 1
            )
            if isinstance(scheduler, AsyncSched):
                after = scheduler.metrics()
                during = {k: round(v - metrics_before.get(k, 0.0), 2) for k, v in after.items()}
                if during.get("sessions"):
                    during["mean_session_ms"] = round(
                        during["session_seconds"] / during["sessions"] * 1000, 1
                    )
                result["burst"]["scheduler_metrics"] = during
            log(f"{scheduler.name} burst: {json.dumps(result['burst'])}")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, KubeError):
            await watcher
    return result


def podgroup_manifest(name: str, min_member: int, run: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": {"bench": run}},
        "spec": {"minMember": min_member, "queue": "default"},
    }


async def ensure_default_queue(client: KubeClient) -> None:
    body = msgspec.json.encode({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True},
    })  # fmt: skip
    with contextlib.suppress(KubeError):  # 409: it exists
        await client.post("/apis/scheduling.volcano.sh/v1beta1/queues", body)


def bed_cpu(bed: Testbed) -> dict[str, float]:
    """CPU seconds each control-plane process has used so far: the difference over a run
    is what serving that scheduler cost the API server, etcd and KWOK on the shared cores."""
    return {name: cpu_seconds(comp.pid) for name, comp in bed.components.items()}


def bed_state(bed: Testbed) -> dict[str, float]:
    """Resident MB of each control-plane process, and etcd's database file in MB: what a bed
    carries from run to run (the same binds cost its API server more on an older bed)."""
    state: dict[str, float] = {}
    for name, comp in bed.components.items():
        rss = resident_mb(comp.pid)
        if rss is not None:
            state[f"{name} rss"] = rss
    with contextlib.suppress(OSError):
        db = bed.dir / "etcd-data" / "member" / "snap" / "db"
        state["etcd db"] = round(db.stat().st_size / 2**20, 1)
    return state


def machine_pace_ms(tries: int = 3) -> float:
    """CPU ms that one fixed piece of Python work takes in this process now (best of
    ``tries``).

    The work is the same every time, so a larger figure means a slower machine, not more
    work: on a shared host the same binds have cost every process of the bed 1.5 times the
    CPU seconds minutes apart. Read as a run starts (the bed settled) and at its last bind,
    and once a second in between (``PaceSamples``), so a run that met another machine than
    its round's binder runs can be told."""
    best = float("inf")
    for _ in range(tries):
        began = time.process_time()
        total = 0
        for i in range(200_000):
            total += i * i % 7
        best = min(best, time.process_time() - began)
    return round(best * 1000, 2)


class PaceSamples:
    """``machine_pace_ms`` once a second (one try, ~10 ms of this process's CPU, the same in
    every run) while a run goes on: whether the machine was slow inside the window, which
    the readings at its two ends cannot show."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            self.samples.append((time.time(), machine_pace_ms(tries=1)))
            await asyncio.sleep(1.0)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def between(self, first: float, last: float) -> dict[str, float] | None:
        """Median and max of the samples taken from ``first`` to ``last`` (epoch seconds)."""
        inside = sorted(pace for at, pace in self.samples if first <= at <= last)
        if not inside:
            return None
        return {"median": inside[len(inside) // 2], "max": inside[-1], "samples": len(inside)}


async def settle(bed: Testbed, idle_cores: float = 0.6, longest: float = 120.0) -> float:
    """Wait until the control plane is about idle (its 1,000 nodes' lease renewals alone use
    ~0.4 core here): the previous run's aftermath (KWOK's backlog of pod status writes, the
    namespace sweep) must not run inside the next scheduler's window. Seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < longest:
        before = sum(bed_cpu(bed).values())
        await asyncio.sleep(2.0)
        if (sum(bed_cpu(bed).values()) - before) / 2.0 < idle_cores:
            break
    return round(time.monotonic() - began, 1)


async def measure_precreated(
    client: KubeClient,
    scheduler: Scheduler,
    args: argparse.Namespace,
    run: str,
    gang: int,
    bed: Testbed,
) -> dict[str, Any]:
    """The protocol of issue 16: every pod (in PodGroups of ``gang`` when > 1) exists before
    the scheduler starts; throughput counts from the first bind to the last; the scheduler's
    CPU is read from /proc at the last bind (all it used since it started)."""
    namespace = f"bench-{run}"
    await new_namespace(client, namespace)
    path = f"/api/v1/namespaces/{namespace}/pods"
    result: dict[str, Any] = {
        "scheduler": scheduler.name,
        "schedulerName": scheduler.scheduler_name,
        "protocol": "precreated",
        "gang": gang,
    }
    if isinstance(scheduler, KubeScheduler):
        result["kube_api_qps"] = scheduler.qps or "default"
    names = [f"pod-{i:05d}" for i in range(args.pods)]
    manifests = [pod_manifest(n, scheduler.scheduler_name, run) for n in names]
    if gang > 1:
        await ensure_default_queue(client)
        groups = [f"pg-{i:05d}" for i in range((args.pods + gang - 1) // gang)]
        group_path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups"
        group_bodies = [msgspec.json.encode(podgroup_manifest(g, gang, run)) for g in groups]
        await _create_all(client, group_path, group_bodies, args.concurrency)
        for i, manifest in enumerate(manifests):
            annotations = {"scheduling.k8s.io/group-name": groups[i // gang]}
            manifest["metadata"]["annotations"] = annotations
    began = time.time()
    await _create_all(client, path, [msgspec.json.encode(m) for m in manifests], args.concurrency)
    result["create_seconds"] = round(time.time() - began, 1)
    log(f"{args.pods} pods created in {result['create_seconds']}s before {scheduler.name} starts")
    watch = PodWatch(client, namespace)
    watch.expected = args.pods
    at_first_bind: dict[str, float] = {}
    waits_at_first_bind: dict[str, float] = {}
    switches_at_first_bind: dict[str, tuple[int, int]] = {}
    perf = perf_window.PerfWindow(bed.dir / f"perf-{run}.data") if args.perf else None

    def first_bound() -> None:
        if perf is not None:
            perf.start()
        at_first_bind.update(bed_cpu(bed), scheduler=cpu_seconds(scheduler.pid))
        at_first_bind.update(thread_cpu_seconds(scheduler.pid))
        waits_at_first_bind.update(bed_waits(bed, scheduler))
        switches_at_first_bind.update(bed_switches(bed, scheduler))
        if isinstance(scheduler, AsyncSched):
            scheduler.start_profile(f"precreated-g{gang}")

    watch.on_first_bound = first_bound
    watcher = asyncio.create_task(watch.run())
    try:
        await asyncio.sleep(1.0)  # the watch has listed what exists
        result["seconds_settling"] = await settle(bed)
        if isinstance(scheduler, CommandScheduler):
            scheduler.namespace = namespace
        result["load_before"] = [round(x, 2) for x in os.getloadavg()]
        result["machine_pace_ms_before"] = machine_pace_ms()
        result["bed_mb_before"] = bed_state(bed)
        writes_before = await api_writes(client)
        reads_before = await api_writes(client, READ_VERBS)
        heap_before = await apiserver_heap(client)
        sent_before = await watch_sent(client)
        served_before = bed_cpu(bed)
        paces = PaceSamples()
        paces.start()
        scheduler.start()
        started = time.time()
        timeout = args.timeout or max(120.0, args.pods / 20)
        try:
            await asyncio.wait_for(watch.all_bound.wait(), timeout)
        except TimeoutError:
            log(f"timed out: {watch.bound_count} bound")
        cpu = cpu_seconds(scheduler.pid)  # from the process's start: its first listing too
        threads = thread_cpu_seconds(scheduler.pid)
        if perf is not None:
            perf.stop()
        paces.stop()
        rss_at_last_bind = resident_mb(scheduler.pid)
        pace_at_last_bind = machine_pace_ms()
        at_last_bind = bed_cpu(bed)
        waits = bed_waits(bed, scheduler)
        waited = {k: round(v - waits_at_first_bind.get(k, v), 2) for k, v in waits.items()}
        switched = {
            k: [now - then for now, then in zip(v, switches_at_first_bind.get(k, v), strict=True)]
            for k, v in bed_switches(bed, scheduler).items()
        }
        served = {k: round(v - served_before.get(k, 0.0), 1) for k, v in at_last_bind.items()}
        in_window = {**at_last_bind, "scheduler": cpu}
        in_window = {k: round(v - at_first_bind.get(k, v), 2) for k, v in in_window.items()}
        writes_by_last_bind = writes_between(writes_before, await api_writes(client))
        reads_by_last_bind = writes_between(reads_before, await api_writes(client, READ_VERBS))
        heap_at_last_bind = await apiserver_heap(client)
        sent_by_last_bind = writes_between(sent_before, await watch_sent(client))
        if isinstance(scheduler, AsyncSched):
            scheduler.stop_profile()
        bound = sorted(p.bound for p in watch.pods.values() if p.bound is not None)
        span = bound[-1] - bound[0] if len(bound) > 1 else float("nan")
        result.update({
            "bound": len(bound),
            "throughput_pods_per_s": round(len(bound) / span, 1) if span == span else 0.0,
            "seconds_start_to_first_bind": round(bound[0] - started, 2) if bound else None,
            "seconds_first_to_last_bind": round(span, 2),
            "scheduler_cpu_seconds": round(cpu, 1),
            "scheduler_cpu_ms_per_pod": round(cpu / len(bound) * 1000, 2) if bound else None,
            "scheduler_mb_at_last_bind": rss_at_last_bind,
            "bed_cpu_seconds": served,
            "window_cpu_seconds": in_window,
            "window_runqueue_wait_seconds": waited,
            "window_context_switches": switched,
            "window_scheduler_threads_cpu_seconds": {
                k: round(v - at_first_bind.get(k, v), 2) for k, v in threads.items()
            },
            "machine_cpu_ms_per_pod": (
                round(sum(in_window.values()) / len(bound) * 1000, 3) if bound else None
            ),
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "machine_pace_ms_at_last_bind": pace_at_last_bind,
            "machine_pace_ms_in_window": paces.between(bound[0], bound[-1]) if bound else None,
            "binds_by_second": binds_by_second(bound),
        })  # fmt: skip
        if gang > 1:
            result["seconds_last_bind_to_podgroups_running"] = await podgroups_running(
                client, group_path, bound[-1] if bound else time.time()
            )
        await asyncio.sleep(3.0)  # status writes and Events that follow the last bind
        result["api_writes"] = writes_between(writes_before, await api_writes(client))
        result["api_writes_by_last_bind"] = writes_by_last_bind
        result["api_reads_by_last_bind"] = reads_by_last_bind
        result["apiserver_gc"] = {
            "cycles by the last bind": heap_at_last_bind.get("gc cycles", 0.0)
            - heap_before.get("gc cycles", 0.0),
            "live MB before": heap_before.get("live MB"),
        }
        result["watch_sent_by_last_bind"] = sent_by_last_bind
        if perf is not None:
            named = {name: comp.pid for name, comp in bed.components.items()}
            named["scheduler"] = scheduler.pid
            result["perf_window"] = perf.summary(named, ("scheduler", "kube-apiserver"))
        if isinstance(scheduler, AsyncSched):
            result["scheduler_metrics"] = scheduler.metrics()
        log(f"{scheduler.name} precreated: {json.dumps(result)}")
    finally:
        stopping = time.time()
        await asyncio.to_thread(scheduler.stop)
        result["seconds_to_stop"] = round(time.time() - stopping, 1)
        log(f"{scheduler.name} stopped in {result['seconds_to_stop']} s")
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, KubeError):
            await watcher
    return result


async def podgroups_running(client: KubeClient, path: str, last_bind: float) -> float | None:
    """Seconds from the last bind until every PodGroup shows phase Running in the cluster
    (None if not within a minute): how long its status writes trail the binds."""
    while time.time() - last_bind < 60.0:
        listed = msgspec.json.decode(await client.get(path), type=_PodGroupList).items
        if all(group.status.phase == "Running" for group in listed):
            return round(time.time() - last_bind, 1)
        await asyncio.sleep(0.25)
    return None


async def _create_all(client: KubeClient, path: str, bodies: list[bytes], concurrency: int) -> None:
    queue = iter(bodies)

    async def worker() -> None:
        for body in queue:
            await create_pod(client, path, body)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def run_precreated(bed: Testbed, args: argparse.Namespace) -> dict[str, Any]:
    """Each scheduler in turn on the same bed: the minimal binder (``--ceiling``),
    kube-scheduler on plain pods, asyncsched (or ``--external CMD``) on plain pods and on
    PodGroups of ``--gang``; every figure also as a fraction of the ceiling.

    The ceiling moves with the machine's load, so with ``--ceiling`` the binder runs first
    and last in every round (``--rounds``) and each figure is read against the mean of the
    two binder runs around it; ``fractions`` gathers them per scheduler over the rounds."""
    client = await connect(str(bed.kubeconfig))
    try:
        nodes_ready = await ensure_nodes(client, args.nodes)
        kubeconfig = bed.kubeconfig
        if not args.external and args.rbac == "deploy":
            kubeconfig = await install_scheduler_rbac(bed)
        runs: list[dict[str, Any]] = []
        stamp = time.strftime("%H%M%S")
        for round_ in range(args.rounds):
            plans = _round_plans(bed, args, kubeconfig, round_)
            measured: list[dict[str, Any]] = []
            for i, (scheduler, gang) in enumerate(plans):
                label = re.sub(r"[^a-z0-9-]+", "-", scheduler.name.lower()).strip("-")
                run = f"{stamp}-r{round_}-{i}-{label}-g{gang}"  # part of a namespace's name
                if args.lone and gang == 1 and not scheduler.name.startswith("minimal"):
                    try:
                        figures = await measure_lone(client, scheduler, args, f"{run}-lone", bed)
                        measured.append({**figures, "round": round_})
                    finally:
                        await clean_namespace(client, f"bench-{run}-lone")
                if not args.pods:
                    continue
                try:
                    figures = await measure_precreated(client, scheduler, args, run, gang, bed)
                    measured.append({**figures, "round": round_})
                finally:
                    await clean_namespace(client, f"bench-{run}")
            ceiling_reading.read_against_ceiling(measured)
            runs += measured
        found = ceiling_reading.readings(runs)
        for reading, per_scheduler in found.items():
            for key, values in per_scheduler.items():
                log(f"{key}: {reading} {values}")
        return {"nodes_ready": nodes_ready, "runs": runs, **found}
    finally:
        await client.close()


def _round_plans(
    bed: Testbed, args: argparse.Namespace, kubeconfig: Path, round_: int
) -> list[tuple[Scheduler, int]]:
    plans: list[tuple[Scheduler, int]] = []

    def binder(**variant: Any) -> tuple[Scheduler, int]:
        """The minimal binder at ``--binder-concurrency``: the ceiling, or one ``variant``."""
        return (minimal_binder(bed, BINDER, concurrency=args.binder_concurrency, **variant), 1)

    if args.ceiling:
        plans.append(binder())
    if args.binder_events:
        plans.append(binder(events=True))
    if args.binder_watch:
        plans.append(binder(watch=True))
    for megabytes in args.binder_ballast if args.binder_burn > 0 else []:
        plans.append(binder(burn=(args.binder_burn, megabytes)))
    if args.compare_kube_scheduler:
        for qps in args.kube_scheduler_qps or [0]:
            plans.append((KubeScheduler(bed, qps), 1))
    if args.external:
        argv = shlex.split(args.external)
        external = CommandScheduler(
            Path(argv[0]).name, argv, bed, args.scheduler_name, bed.dir / "external.log"
        )
        plans += [(external, gang) for gang in _shapes(args, round_)]
    else:
        for gang in _shapes(args, round_):
            log_path = bed.dir / f"asyncsched-r{round_}-gang{gang}.log"
            plans.append((_asyncsched(args, bed, kubeconfig, log_path), gang))
    if args.ceiling_between:
        plans = _binder_between(bed, plans, args.binder_concurrency)
    if args.ceiling and len(plans) > 1:
        plans.append(binder())
    return plans


def _asyncsched(
    args: argparse.Namespace, bed: Testbed, kubeconfig: Path, log_path: Path
) -> AsyncSched:
    """asyncsched as the flags ask: profiled (how), and its binds in flight."""
    profiled = args.profile or args.profile_native or args.profile_compiled
    return AsyncSched(
        kubeconfig, log_path, args.scheduler_name, bed.dir if profiled else None,
        native=args.profile_native, bind_concurrency=args.bind_concurrency,
    )  # fmt: skip


def _binder_between(
    bed: Testbed, plans: list[tuple[Scheduler, int]], concurrency: int | None
) -> list[tuple[Scheduler, int]]:
    """The minimal binder between every two runs that are not the binder's, so each is
    read against the binder runs on either side of it, the nearest in time, rather than
    against a round's first and last, up to ten minutes away."""
    spaced: list[tuple[Scheduler, int]] = []
    for plan in plans:
        if spaced and spaced[-1][0].name != BINDER and plan[0].name != BINDER:
            spaced.append((minimal_binder(bed, BINDER, concurrency=concurrency), 1))
        spaced.append(plan)
    return spaced


def _shapes(args: argparse.Namespace, round_: int) -> list[int]:
    """The scheduler's runs of one round by gang size: plain pods (1) unless ``--gang-only``,
    then PodGroups of ``--gang``; the other way round every other round, since the bed slows
    as runs pile up."""
    shapes = ([] if args.gang_only else [1]) + ([args.gang] if args.gang > 1 else [])
    return shapes[::-1] if round_ % 2 else shapes


async def run_all(bed: Testbed, args: argparse.Namespace) -> dict[str, Any]:
    client = await connect(str(bed.kubeconfig))
    try:
        nodes_ready = await ensure_nodes(client, args.nodes)
        schedulers: list[Scheduler] = []
        if args.external:
            external = Scheduler()
            external.scheduler_name = args.scheduler_name
            schedulers.append(external)
        else:
            kubeconfig = bed.kubeconfig
            if args.rbac == "deploy":
                kubeconfig = await install_scheduler_rbac(bed)
            schedulers.append(_asyncsched(args, bed, kubeconfig, bed.dir / "asyncsched.log"))
        if args.compare_kube_scheduler:
            for qps in args.kube_scheduler_qps or [0]:
                schedulers.append(KubeScheduler(bed, qps))
        runs = []
        stamp = time.strftime("%H%M%S")
        for i, scheduler in enumerate(schedulers):
            run = f"{stamp}-{i}-{scheduler.name}"
            log(f"starting {scheduler.name} (load {os.getloadavg()[0]:.2f})")
            scheduler.start()  # main thread: its process dies with the benchmark
            try:
                runs.append(await measure(client, scheduler, args, run))
            finally:
                await asyncio.to_thread(scheduler.stop)
                await clean_namespace(client, f"bench-{run}")
        return {"nodes_ready": nodes_ready, "runs": runs}
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000, help="pods in the burst (0: none)")
    parser.add_argument("--scheduler-name", default="asyncsched", help="pods' schedulerName")
    parser.add_argument(
        "--external",
        nargs="?",
        const=True,
        default=None,
        metavar="CMD",
        help="alone: start no scheduler, one is running; with CMD (one string, split as a "
        "shell would; {kubeconfig}, {namespace}, {scheduler_name} filled in): start CMD as "
        "the scheduler and measure it as the others",
    )
    parser.add_argument(
        "--precreate",
        action="store_true",
        help="issue 16's protocol: create every pod before the scheduler starts, count from "
        "the first bind, one scheduler after the other on the same bed",
    )
    parser.add_argument("--gang", type=int, default=1, help="with --precreate: PodGroups of N")
    parser.add_argument("--gang-only", action="store_true",
                        help="with --gang: measure the scheduler on PodGroups only, not also "
                             "on plain pods")  # fmt: skip
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="with --precreate: first measure benchmarks/minimal_binder.py, which decides nothing",
    )
    parser.add_argument("--ceiling-between", action="store_true",
                        help="with --ceiling: the binder also runs between every two other "
                             "runs, each read against the binder runs either side of "
                             "it")  # fmt: skip
    parser.add_argument("--binder-events", action="store_true",
                        help="with --precreate: also measure the minimal binder posting "
                             "a Scheduled Event per bind")  # fmt: skip
    parser.add_argument("--binder-watch", action="store_true",
                        help="with --precreate: also measure the minimal binder holding one "
                             "pod watch open, as any scheduler does")  # fmt: skip
    parser.add_argument("--binder-burn", type=float, default=0.0,
                        help="with --precreate: also measure the minimal binder spending "
                             "this many ms of CPU after each bind, reading each "
                             "--binder-ballast")  # fmt: skip
    parser.add_argument("--binder-ballast", type=float, nargs="+", default=[1.0, 256.0],
                        help="MB of objects the burning binder reads (one run each)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --precreate: repeat the whole plan (plain pods and "
                             "PodGroups swapped every other round); with --ceiling the "
                             "binder runs first and last in each round")  # fmt: skip
    parser.add_argument("--bed", type=Path, help="a bed's directory: reuse it (start it there)")
    parser.add_argument("--lone", type=int, default=0,
                        help="pods created one at a time first (with --precreate: on the idle "
                             "cluster, before each scheduler's precreated run)")  # fmt: skip
    parser.add_argument("--lone-gap", type=float, default=0.3, help="seconds between lone pods")
    parser.add_argument("--concurrency", type=int, default=32, help="creates in flight")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds to wait for binds")
    parser.add_argument("--rbac", choices=["deploy", "admin"], default="deploy",
                        help="asyncsched runs as deploy/'s ServiceAccount or admin")  # fmt: skip
    parser.add_argument("--compare-kube-scheduler", action="store_true")
    parser.add_argument("--kube-scheduler-qps", type=int, action="append",
                        help="kube-scheduler's --kube-api-qps and burst (0: its default, "
                             "50/100); repeat for one run each")  # fmt: skip
    parser.add_argument("--source", type=Path, default=ROOT,
                        help="a copy of the repository to run asyncsched from")  # fmt: skip
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    parser.add_argument("--profile", action="store_true",
                        help="py-spy asyncsched during the lone pods and the burst (with "
                             "--precreate: from the first bind to the last, the window its "
                             "rate is read over)")  # fmt: skip
    parser.add_argument(
        "--bind-concurrency",
        type=int,
        default=None,
        metavar="BINDS",
        help="asyncsched's --bind-concurrency (default: its own)",
    )
    parser.add_argument(
        "--binder-concurrency",
        type=int,
        default=None,
        metavar="BINDS",
        help="the minimal binder's --concurrency (default: its own, 128)",
    )
    parser.add_argument("--perf", action="store_true",
                        help="with --precreate: perf record on every core from the first bind "
                             "to the last; each run's share of samples per process, and the "
                             "scheduler's and the API server's per shared object and symbol "
                             "(benchmarks/perf_window.py)")  # fmt: skip
    parser.add_argument("--profile-compiled", action="store_true",
                        help="as --profile, with the compiled core left on (py-spy "
                             "--nonblocking: the interpreted parts by name, each compiled "
                             "call inside the frame that made it)")  # fmt: skip
    parser.add_argument("--profile-native", action="store_true",
                        help="as --profile, with the compiled core left on and its functions "
                             "named (py-spy --native: it stops the process at each sample, so "
                             "the rates of profiled runs are not figures)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.ceiling_between and not args.ceiling:
        parser.error("--ceiling-between needs --ceiling")
    if args.precreate and args.external is True:
        parser.error("--precreate needs --external CMD (the command that runs the scheduler)")
    if args.installed and args.source.resolve() != ROOT:
        parser.error("--installed and --source exclude each other")
    measured: dict[str, Any] = {}
    if not args.external:  # what the scheduler process will import, asked the same way
        measured = target.identity_of(sys.executable, SCHEDULER_CWD, SCHEDULER_ENV)
        if args.installed:
            target.refuse_checkout(measured)
        log(f"measuring {json.dumps(measured)}")
    if args.external and args.compare_kube_scheduler and args.scheduler_name == "asyncsched":
        log("--external measures pods of --scheduler-name; kube-scheduler runs after it")

    own_bed = args.bed is None
    directory = Path(tempfile.mkdtemp(prefix="asyncsched-bench-")) if own_bed else args.bed
    if not own_bed and (directory / "bed.json").exists():
        bed = Testbed.load(directory)
        stopped = sorted(name for name, comp in bed.components.items() if not comp.alive())
        if stopped:
            parser.error(
                f"--bed {directory}: its bed is not running ({', '.join(stopped)} stopped); "
                "give another folder, or delete its bed.json to start a new bed there"
            )
        log(f"reusing the bed in {directory}")
    else:
        bed = Testbed(directory, nodes=0, capacity=CAPACITY, die_with_parent=own_bed)
        log(f"starting a bed in {directory}")
        bed.start()
    started = time.time()
    try:
        runner = run_precreated if args.precreate else run_all
        figures = asyncio.run(runner(bed, args))
    finally:
        if own_bed:
            bed.stop()
    report: dict[str, Any] = {
        "benchmark": "e2e_throughput",
        "nodes": args.nodes,
        "pods": args.pods,
        "lone": args.lone,
        "concurrency": args.concurrency,
        "cpus": os.cpu_count(),
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "wall_seconds": round(time.time() - started, 1),
        "asyncsched_identity": None if args.external else args.rbac,
        **measured,
        **figures,
    }
    if args.precreate:
        print(json.dumps(report))
        return 0
    ours = figures["runs"][0].get("burst", {}).get("throughput_pods_per_s", 0.0)
    for run in figures["runs"][1:]:
        theirs = run.get("burst", {}).get("throughput_pods_per_s", 0.0)
        if ours and theirs:
            key = f"throughput_ratio_vs_kube_scheduler_qps_{run['kube_api_qps']}"
            report[key] = round(ours / theirs, 3)
            log(f"{key}: {report[key]}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
