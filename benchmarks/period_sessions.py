"""What the sessions after a burst of plain pods cost, in the scheduling core alone.

    python benchmarks/period_sessions.py [--nodes 1000] [--pods 10000] [--wave 500]
        [--pure] [--installed] [--profile]

The shape of issue 16's real test bed for plain pods: ``--nodes`` nodes (32 cpu,
256Gi, 110 pods, as e2e_throughput's KWOK nodes) and ``--pods`` pods of 10m/16Mi
with schedulerName volcano and no PodGroup, each its own job as the kube backend
makes them, all pending at the start. The first session places them (budget 10,000,
the scheduler's default) and its binds are applied to the cache. Then the pods come
back from the API server in waves of ``--wave``, two updates each as the watch brings
them (bound to the node, then Running), and a session runs after each wave: on the
bed such updates wake no session, so the scheduler's period (1 s) runs one while the
binds flow, and what it costs is taken from the event loop and the bind slots. The
clock is the process's CPU clock (a loaded machine changes it least) over the
snapshot, the session (with the plugins' gauges, which the kube backend exports) and
applying its results; applying the watch's updates is not counted. The last line
is one JSON object: {"nodes", "pods", "wave", "first_session_cpu_ms",
"period_sessions", "period_mean_cpu_ms", "period_max_cpu_ms", "load_average",
"rss_mb", "native", "asyncsched_version", "asyncsched_path"}.
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

import target

target.put_on_path(sys.argv)

if "--pure" in sys.argv:  # before asyncsched is imported: the facade picks its path once
    os.environ["ASYNCSCHED_PURE"] = "1"

import msgspec  # noqa: E402

from asyncsched.api import Pod  # noqa: E402
from asyncsched.backends.config_source import ConfigSource  # noqa: E402
from asyncsched.cache import ClusterCache  # noqa: E402
from asyncsched.framework import LoadedConfiguration, Registry, run_session  # noqa: E402
from asyncsched.model.gcpause import freeze_long_lived  # noqa: E402
from tests.builders import node, pod  # noqa: E402

BUDGET = 10000
"""The scheduler's default session budget (``asyncsched.cli.scheduler``)."""


def _session(cache: ClusterCache, loaded: LoadedConfiguration, n: int) -> tuple[int, float]:
    """One session as the kube shell runs it; (binds, CPU seconds)."""
    began = time.process_time()
    snapshot = cache.snapshot(now=float(n), configuration=loaded.configuration)  # as the shells
    result, _ = run_session(snapshot, loaded, uid=f"s{n}", budget=BUDGET)
    for bind in result.binds:
        cache.mark_binding(bind.uid, bind.node)
    return len(result.binds), time.process_time() - began


def _came_back(original: Pod, node_name: str) -> tuple[Pod, Pod]:
    """The two updates the watch brings for a bound pod: bound, then Running."""
    bound = msgspec.structs.replace(
        original, spec=msgspec.structs.replace(original.spec, node_name=node_name)
    )
    running = msgspec.structs.replace(
        bound, status=msgspec.structs.replace(bound.status, phase="Running")
    )
    return bound, running


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--wave", type=int, default=500, help="pods back per period session")
    parser.add_argument("--pure", action="store_true", help="use the NumPy kernels")
    parser.add_argument("--profile", action="store_true", help="cProfile the period sessions")
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    args = parser.parse_args()
    measured = target.checked_identity(args.installed)
    print(f"measuring {json.dumps(measured)}", file=sys.stderr)

    cache = ClusterCache()
    for i in range(args.nodes):
        cache.upsert_node(node(f"n{i:05d}", cpu="32", memory="256Gi"))
    pods = {}
    for j in range(args.pods):
        made = pod(f"p{j:05d}", cpu="10m", memory="16Mi", namespace="bench")
        pods[f"bench/{made.metadata.name}"] = made
        cache.upsert_pod(made)
    freeze_long_lived()  # as the scheduler does once its informers have synced
    loaded = ConfigSource(Registry()).current

    placed, first = _session(cache, loaded, 0)
    where = {key: task.node_name for key, task in cache.tasks.items() if task.node_name}
    print(f"first session: {placed} pods placed, {first * 1000:.0f} ms CPU", file=sys.stderr)
    keys = list(where)
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    costs = []
    for n, start in enumerate(range(0, len(keys), args.wave), 1):
        for key in keys[start : start + args.wave]:
            for update in _came_back(pods[key], where[key]):
                cache.upsert_pod(update)
        if profiler is not None:
            profiler.enable()
        _, cpu = _session(cache, loaded, n)
        if profiler is not None:
            profiler.disable()
        costs.append(cpu)
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
        print(out.getvalue(), file=sys.stderr)
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": args.pods,
                "wave": args.wave,
                "first_session_cpu_ms": round(first * 1000, 1),
                "period_sessions": len(costs),
                "period_mean_cpu_ms": round(sum(costs) / max(1, len(costs)) * 1000, 1),
                "period_max_cpu_ms": round(max(costs, default=0.0) * 1000, 1),
                "load_average": round(os.getloadavg()[0], 2),
                "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                **measured,
            }
        )
    )


if __name__ == "__main__":
    main()
