"""What a node coming to the scheduler's cache costs when the cache holds many pods.

    python benchmarks/node_arrivals.py --nodes 1000 --pods 100000 [--installed]

A scheduler's start where the pod watch lists first: ``--pods`` running pods spread over
``--nodes`` nodes the cache does not hold yet, then every node comes (the cache books each
node's pods). Then a scale-up: as many empty nodes again come. Then a tenth of the first
nodes are deleted with their pods on them and made again. Each step is timed on the
process's CPU clock and given in µs per node. The last line is one JSON object: {"nodes",
"pods", "us_per_node": {step: µs}, plus target.py's identity}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import target

target.put_on_path(sys.argv)

from asyncsched.cache import ClusterCache  # noqa: E402
from asyncsched.model.gcpause import freeze_long_lived  # noqa: E402
from tests.builders import node, pod  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=100000)
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    args = parser.parse_args()
    measured = target.checked_identity(args.installed)
    cache = ClusterCache()
    for i in range(args.pods):
        cache.upsert_pod(
            pod(f"p{i}", cpu="10m", memory="10Mi", node_name=f"n{i % args.nodes}",
                phase="Running", created="2026-01-01T00:00:00Z")
        )  # fmt: skip
    first = [node(f"n{i}", cpu="1000", memory="1000Gi", pods=1000) for i in range(args.nodes)]
    more = [node(f"m{i}", cpu="1000", memory="1000Gi", pods=1000) for i in range(args.nodes)]
    freeze_long_lived()
    report: dict[str, float] = {}

    began = time.process_time()
    for made in first:
        cache.upsert_node(made)
    report["pods_listed_first"] = (time.process_time() - began) / len(first) * 1e6
    began = time.process_time()
    for made in more:
        cache.upsert_node(made)
    report["empty_nodes"] = (time.process_time() - began) / len(more) * 1e6
    again = first[: max(1, args.nodes // 10)]
    began = time.process_time()
    for made in again:
        cache.delete_node(made.metadata.name)
    report["deleted_with_pods"] = (time.process_time() - began) / len(again) * 1e6
    began = time.process_time()
    for made in again:
        cache.upsert_node(made)
    report["made_again"] = (time.process_time() - began) / len(again) * 1e6

    booked = sum(len(info.tasks) for info in cache.nodes.values())
    if booked != args.pods:
        raise SystemExit(f"node_arrivals: {booked} pods booked, {args.pods} expected")
    rounded = {step: round(us, 1) for step, us in report.items()}
    print(f"µs per node: {rounded}", file=sys.stderr)
    print(json.dumps({"nodes": args.nodes, "pods": args.pods, "us_per_node": rounded, **measured}))


if __name__ == "__main__":
    main()
