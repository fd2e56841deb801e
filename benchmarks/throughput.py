"""Throughput of the scheduling core alone on a synthetic cluster.

    python benchmarks/throughput.py --nodes 1000 --jobs 1000 --tasks-per-job 10

Mixed node shapes (CPU-only and 8-GPU nodes), gang jobs spread over four
queues, the default configuration. Every pod is pending at the start; sessions
run until nothing more can be placed. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.framework import Registry, run_session
from tests.builders import node, pod, podgroup, queue


def build(nodes: int, jobs: int, tasks: int) -> ClusterCache:
    cache = ClusterCache()
    for q in range(4):
        cache.upsert_queue(queue(f"q{q}", weight=q + 1))
    for i in range(nodes):
        if i % 4 == 3:
            cache.upsert_node(node(f"n{i:05d}", cpu="96", memory="768Gi", gpu=8))
        else:
            cache.upsert_node(node(f"n{i:05d}", cpu="64", memory="256Gi"))
    for j in range(jobs):
        q = f"q{j % 4}"
        gpu = 1 if j % 5 == 0 else 0
        cache.upsert_podgroup(podgroup(f"job{j:05d}", tasks, namespace=q, queue=q, phase="Pending"))
        for t in range(tasks):
            cache.upsert_pod(
                pod(
                    f"job{j:05d}-{t}",
                    cpu="2",
                    memory="4Gi",
                    gpu=gpu,
                    namespace=q,
                    group=f"job{j:05d}",
                )
            )
    return cache


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--tasks-per-job", type=int, default=10)
    parser.add_argument("--max-sessions", type=int, default=50)
    args = parser.parse_args()

    cache = build(args.nodes, args.jobs, args.tasks_per_job)
    loaded = ConfigSource(Registry()).current
    bound = 0
    durations = []
    start = time.perf_counter()
    for n in range(args.max_sessions):
        began = time.perf_counter()
        result, _ = run_session(cache.snapshot(), loaded, uid=f"s{n}")
        for update in result.podgroups:
            cache.set_podgroup_phase(update.job, update.phase)
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
        durations.append(time.perf_counter() - began)
        bound += len(result.binds)
        if not result.binds and not result.enqueued:
            break
    elapsed = time.perf_counter() - start
    durations.sort()
    p99 = durations[min(len(durations) - 1, int(0.99 * len(durations)))]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{bound} pods bound in {len(durations)} sessions, {elapsed:.2f}s", file=sys.stderr)
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": bound,
                "pods_per_s": round(bound / elapsed, 1),
                "session_p99_ms": round(p99 * 1000, 1),
                "rss_mb": round(rss_mb, 1),
                "native": False,
            }
        )
    )


if __name__ == "__main__":
    main()
