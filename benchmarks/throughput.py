"""Throughput of the scheduling core alone on a synthetic cluster.

    python benchmarks/throughput.py --nodes 1000 --jobs 1000 --tasks-per-job 10 [--pure]
        [--installed]
    python benchmarks/throughput.py --evict --nodes 1000 [--running 10000] [--waiting 100]
    python benchmarks/throughput.py --pod-rules anti-affinity|spread --nodes 1000 ...

``--evict`` measures preempt and reclaim instead: every node is full of
running low-priority pods of queue q0 (``--running`` in all, 2 cpu each), then
``--waiting`` high-priority pods of q0 (preempt) and as many pods of the empty
queue q1 (reclaim) arrive; one session of "enqueue, allocate, preempt,
reclaim, backfill" runs, and the JSON line says how long it took and how many
pods it evicted.

Mixed node shapes (CPU-only and 8-GPU nodes), gang jobs spread over four
queues, the default configuration. ``--pod-rules`` gives the nodes hostname and
zone labels (10 zones) and every other job's pods a rule about the job's other
pods: ``anti-affinity`` (required, per hostname) or ``spread`` (DoNotSchedule,
maxSkew 1 over zones). Every pod is pending at the start; sessions
run until nothing more can be placed. The clock runs over the sessions only
(snapshot, session, applying the binds and PodGroup statuses to the cache as the
shells do), not over building the
synthetic cluster. ``--pure`` uses the NumPy twins of the compiled kernels
(ASYNCSCHED_PURE=1). ``--profile`` prints the top of a cProfile of the
sessions to stderr. ``--installed`` measures the installed package instead of this
checkout (see target.py). The last line is one JSON object: {"nodes", "pods",
"pods_per_s", "session_p99_ms", "session_p99_cpu_ms" (the process's CPU clock, for a loaded
machine), "pods_per_cpu_s", "sessions", "session_budget", "rss_mb", "native",
"asyncsched_version", "asyncsched_path"}. The cache is frozen out of the garbage
collector's reach once built, as the scheduler does once its informers have synced, and
so is the first snapshot, as the scheduler does with its own first.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import sys
import time
from pathlib import Path
from typing import Any

import target

target.put_on_path(sys.argv)

if "--pure" in sys.argv:  # before asyncsched is imported: the facade picks its path once
    os.environ["ASYNCSCHED_PURE"] = "1"

import msgspec  # noqa: E402

from asyncsched.api.meta import ObjectMeta  # noqa: E402
from asyncsched.api.topology import HyperNode, HyperNodeSpec  # noqa: E402
from asyncsched.api.volcano import PodGroupStatus  # noqa: E402
from asyncsched.backends.config_source import ConfigSource  # noqa: E402
from asyncsched.cache import ClusterCache  # noqa: E402
from asyncsched.framework import Registry, load_configuration, run_session  # noqa: E402
from asyncsched.framework.results import PodGroupUpdate  # noqa: E402
from asyncsched.model.gcpause import freeze_long_lived  # noqa: E402
from tests.builders import (  # noqa: E402
    HOSTNAME,
    ZONE,
    anti_affinity,
    full_of_low_priority,
    node,
    pod,
    podgroup,
    queue,
    spread,
)

EVICT_CONFIG = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def measure_evictions(args: argparse.Namespace, measured: dict[str, str]) -> None:
    cache = full_of_low_priority(args.nodes, args.running, args.waiting)
    loaded = load_configuration(EVICT_CONFIG, Registry())
    start = time.perf_counter()
    cpu_start = time.process_time()
    result, _ = run_session(cache.snapshot(), loaded, uid="evict")
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    by_reason: dict[str, int] = {}
    for eviction in result.evictions:
        by_reason[eviction.reason] = by_reason.get(eviction.reason, 0) + 1
    print(
        f"one session: {len(result.evictions)} evictions {by_reason}, "
        f"{len(result.nominations)} nominations in {elapsed:.2f}s ({cpu:.2f}s CPU)",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "running": args.running,
                "waiting": 2 * args.waiting,
                "evicted": by_reason,
                "session_s": round(elapsed, 2),
                **measured,
            }
        )
    )


def network(cache: ClusterCache, nodes: int) -> None:
    """Three tiers of HyperNodes: racks of 16 nodes, spines of 16 racks, one top switch."""
    names = [f"n{i:05d}" for i in range(nodes)]

    def hypernode(name: str, tier: int, kind: str, members: list[str]) -> HyperNode:
        chosen = [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members]
        return HyperNode(
            metadata=ObjectMeta(name=name), spec=HyperNodeSpec(tier=tier, members=chosen)
        )

    racks = [f"rack{r:04d}" for r in range((nodes + 15) // 16)]
    for r, rack in enumerate(racks):
        cache.upsert_hypernode(hypernode(rack, 1, "Node", names[16 * r : 16 * r + 16]))
    spines = [f"spine{s:03d}" for s in range((len(racks) + 15) // 16)]
    for s, spine in enumerate(spines):
        cache.upsert_hypernode(hypernode(spine, 2, "HyperNode", racks[16 * s : 16 * s + 16]))
    cache.upsert_hypernode(hypernode("top", 3, "HyperNode", spines))


def build(
    nodes: int, jobs: int, tasks: int, rules: str = "", topology: bool = False
) -> ClusterCache:
    cache = ClusterCache()
    if topology:
        network(cache, nodes)
    for q in range(4):
        cache.upsert_queue(queue(f"q{q}", weight=q + 1))
    for i in range(nodes):
        name = f"n{i:05d}"
        # Zones of four neighbouring nodes: every zone has GPU nodes.
        labels = {HOSTNAME: name, ZONE: f"z{i // 4 % 10}"} if rules else {}
        if i % 4 == 3:
            cache.upsert_node(node(name, cpu="96", memory="768Gi", gpu=8, labels=labels))
        else:
            cache.upsert_node(node(name, cpu="64", memory="256Gi", labels=labels))
    for j in range(jobs):
        q = f"q{j % 4}"
        gpu = 1 if j % 5 == 0 else 0
        group = f"job{j:05d}"
        pg = podgroup(group, tasks, namespace=q, queue=q, phase="Pending")
        if topology:  # every job within one spine (tier 2), as tight as it fits
            spec = {"mode": "hard", "highestTierAllowed": 2}
            pg = msgspec.structs.replace(
                pg, spec=msgspec.structs.replace(pg.spec, network_topology=spec)
            )
        cache.upsert_podgroup(pg)
        extra: dict[str, Any] = {}
        if rules and j % 2 == 0:
            own = {"job": group}
            extra["labels"] = own
            if rules == "anti-affinity":
                extra["affinity"] = anti_affinity(own)
            else:
                extra["topology_spread_constraints"] = [spread(own)]
        for t in range(tasks):
            cache.upsert_pod(
                pod(
                    f"{group}-{t}",
                    cpu="2",
                    memory="4Gi",
                    gpu=gpu,
                    namespace=q,
                    group=group,
                    **extra,
                )
            )
    return cache


AREAS = (
    ("snapshots", "cluster_cache.py:snapshot"),
    ("sessions", "cycle.py:_run_session"),
    ("enqueue", "enqueue.py:execute"),
    ("allocate", "allocate.py:execute"),
    ("- find_node", "placement.py:find_node"),
    ("- - scores (all_node_scores)", "scoring.py:all_node_scores"),
    ("- - fit masks", "placement.py:fits"),
    ("- - best node", "placement.py:best"),
    ("- - batch predicates", "session.py:batch_predicate"),
    ("- Statement.allocate", "statement.py:allocate"),
    ("- Statement.commit", "statement.py:commit"),
    ("- job order", "orders.py:job_order"),
    ("- allocatable", "session.py:allocatable"),
    ("- job_ready", "session.py:job_ready"),
    ("backfill", "backfill.py:execute"),
    ("report jobs", "cycle.py:_report_jobs"),
    ("binds applied to the cache", "cluster_cache.py:mark_binding"),
    ("statuses applied to the cache", "cluster_cache.py:set_podgroup_status"),
)


def written_status(update: PodGroupUpdate) -> PodGroupStatus:
    """The PodGroup status a shell writes and then holds in its cache (kube after its patch,
    the simulator through its store): all of it, so a placed gang's status is in sync and
    the gang settles, as it does in a scheduler."""
    return PodGroupStatus(
        phase=update.phase,
        conditions=list(update.conditions),
        running=update.running,
        succeeded=update.succeeded,
        failed=update.failed,
    )


def _areas(stats: pstats.Stats) -> str:
    """Cumulative CPU seconds of the main parts of a session (from the profile)."""
    table: dict[str, float] = {}
    for (path, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(path).name}:{function}"
        table[where] = table.get(where, 0.0) + row[3]
    lines = ["cumulative CPU seconds by part:"]
    lines += [f"  {label:32s} {table.get(where, 0.0):8.2f}" for label, where in AREAS]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--tasks-per-job", type=int, default=10)
    parser.add_argument("--max-sessions", type=int, default=500)
    parser.add_argument(
        "--session-budget",
        type=int,
        default=None,
        metavar="TASKS",
        help="tasks a session may place before it stops (the scheduler's --session-budget)",
    )
    parser.add_argument("--pure", action="store_true", help="use the NumPy kernels")
    parser.add_argument("--profile", action="store_true", help="cProfile the sessions")
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    parser.add_argument("--evict", action="store_true", help="measure preempt and reclaim")
    parser.add_argument(
        "--topology",
        action="store_true",
        help="HyperNodes in 3 tiers (racks of 16 nodes, spines of 16 racks) and every job "
        "in hard mode within one spine",
    )
    parser.add_argument("--running", type=int, default=10000, help="running pods (--evict)")
    parser.add_argument("--waiting", type=int, default=100, help="waiting pods per queue")
    parser.add_argument(
        "--pod-rules",
        choices=("anti-affinity", "spread"),
        default="",
        help="every other job's pods keep apart (per node) or spread (over zones)",
    )
    args = parser.parse_args()
    measured = target.checked_identity(args.installed)
    print(f"measuring {json.dumps(measured)}", file=sys.stderr)
    if args.evict:
        measure_evictions(args, measured)
        return

    cache = build(args.nodes, args.jobs, args.tasks_per_job, args.pod_rules, args.topology)
    freeze_long_lived()  # as the scheduler does once its informers have synced
    loaded = ConfigSource(Registry()).current
    bound = 0
    durations = []
    cpu_durations = []
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    if profiler is not None:
        profiler.enable()
    start = time.perf_counter()
    cpu_start = time.process_time()
    for n in range(args.max_sessions):
        began = time.perf_counter()
        cpu_began = time.process_time()
        # as the scheduler does: frozen with its first, and naming the session's configuration
        snapshot = cache.snapshot(freeze=n == 0, configuration=loaded.configuration)
        result, _ = run_session(snapshot, loaded, uid=f"s{n}", budget=args.session_budget)
        for update in result.podgroups:
            cache.set_podgroup_status(update.job, written_status(update))
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
        durations.append(time.perf_counter() - began)
        cpu_durations.append(time.process_time() - cpu_began)
        bound += len(result.binds)
        if not result.binds and not result.enqueued and not result.deferred:
            break
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    if profiler is not None:
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(30)
        print(out.getvalue(), file=sys.stderr)
        print(_areas(stats), file=sys.stderr)
    durations.sort()
    p99 = durations[min(len(durations) - 1, int(0.99 * len(durations)))]
    cpu_durations.sort()
    cpu_p99 = cpu_durations[min(len(cpu_durations) - 1, int(0.99 * len(cpu_durations)))]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{bound} pods bound in {len(durations)} sessions, {elapsed:.2f}s "
        f"({cpu:.2f}s CPU; load average {os.getloadavg()[0]:.2f})",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "topology": args.topology,
                **({"pod_rules": args.pod_rules} if args.pod_rules else {}),
                "pods": bound,
                "pods_per_s": round(bound / elapsed, 1),
                "session_p99_ms": round(p99 * 1000, 1),
                "session_p99_cpu_ms": round(cpu_p99 * 1000, 1),
                "pods_per_cpu_s": round(bound / cpu, 1),
                "sessions": len(durations),
                "session_budget": args.session_budget,
                "rss_mb": round(rss_mb, 1),
                **measured,
            }
        )
    )


if __name__ == "__main__":
    main()
