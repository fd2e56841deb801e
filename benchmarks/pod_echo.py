"""What the pod watch's echo of a burst of binds costs the cache and the next snapshot.

    python benchmarks/pod_echo.py --nodes 1000 --pods 10000 [--gang 10] [--installed]

A cache of ``--nodes`` nodes and ``--pods`` pending pods (plain, or in PodGroups of
``--gang``) takes one bind per pod (``mark_binding``, as the shells do when a session
decides), then a snapshot; then every pod's new version from the API server with its
``nodeName`` (the bind coming back), then a snapshot; then every pod Running (the kubelet's
report), then a snapshot. Each step is timed on the process's CPU clock and given in µs per
pod. The last line is one JSON object: {"nodes", "pods", "gang", "us_per_pod": {step: µs},
plus target.py's identity}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import target

target.put_on_path(sys.argv)

import msgspec  # noqa: E402

from asyncsched.model.gcpause import freeze_long_lived  # noqa: E402
from tests.builders import cache_of, node, pod, podgroup, queue  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--gang", type=int, default=1, help="pods per PodGroup (1: plain)")
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    args = parser.parse_args()
    measured = target.checked_identity(args.installed)
    gang, count = max(1, args.gang), args.pods
    nodes = [node(f"n{i}") for i in range(args.nodes)]
    groups = [podgroup(f"g{j}", gang) for j in range(count // gang)] if gang > 1 else []
    pods = [
        pod(f"p{i}", cpu="100m", memory="100Mi", created="2026-01-01T00:00:00Z",
            group=f"g{i // gang}" if gang > 1 else None)
        for i in range(count)
    ]  # fmt: skip
    placed = [f"n{i % args.nodes}" for i in range(count)]
    cache = cache_of(queue("default"), *nodes, *groups, *pods)
    freeze_long_lived()  # as the scheduler does once its informers have synced
    cache.snapshot(freeze=True)  # and with its first snapshot
    echoes = [
        msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=where))
        for p, where in zip(pods, placed, strict=True)
    ]
    running = [
        msgspec.structs.replace(p, status=msgspec.structs.replace(p.status, phase="Running"))
        for p in echoes
    ]
    times: dict[str, float] = {}

    def timed(step: str, work: Callable[[], object]) -> None:
        began = time.process_time()
        work()
        times[step] = round((time.process_time() - began) / count * 1e6, 2)

    timed(
        "mark_binding",
        lambda: [cache.mark_binding(f"default/p{i}", n) for i, n in enumerate(placed)],
    )
    timed("snapshot_after_binds", cache.snapshot)
    timed("bind_echo", lambda: [cache.upsert_pod(p) for p in echoes])
    timed("snapshot_after_echo", cache.snapshot)
    timed("running", lambda: [cache.upsert_pod(p) for p in running])
    timed("snapshot_after_running", cache.snapshot)
    print(json.dumps({"nodes": args.nodes, "pods": count, "gang": gang, "us_per_pod": times,
                      **measured}))  # fmt: skip


if __name__ == "__main__":
    main()
