"""One LoadAware descheduling pass (the pure decision alone) on a synthetic cluster.

    python benchmarks/descheduler_pass.py --nodes 1000 --pods-per-node 20

Nodes of 32 CPUs; each runs ``--pods-per-node`` pods of a ReplicaSet (500m requested,
0.1-2 cores used, seeded); a third of the nodes at 10% CPU, a third at 50%, a third at
90%; seed 000's policy (thresholds 30/30, targets 80/85, nodeFit). The clock runs over
``deschedule`` only, not over building the cluster. The last line is one JSON object:
{"nodes", "pods", "seconds", "evictions"}.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncsched.api import Pod
from asyncsched.api.meta import OwnerReference
from asyncsched.descheduler.passes import deschedule
from asyncsched.descheduler.plan import NodeUsage, PodUsage, UsageFigures
from asyncsched.descheduler.policy import parse_policy
from tests.builders import cache_of, node, pod

POLICY = (
    Path(__file__).resolve().parents[1] / "tests/scenarios/yaml/descheduler-seed000-policy.yaml"
)


def _owned(made: Pod) -> Pod:
    made.metadata.owner_references = [OwnerReference(kind="ReplicaSet", name="rs", controller=True)]
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(1)
    objects: list[object] = [node(f"n{i}", cpu="32", memory="128Gi") for i in range(args.nodes)]
    pods: dict[str, PodUsage] = {}
    for i in range(args.nodes):
        for j in range(args.pods_per_node):
            name = f"p{i}-{j}"
            objects.append(_owned(pod(name, cpu="500m", namespace="work", node_name=f"n{i}",
                                      phase="Running")))  # fmt: skip
            pods[f"work/{name}"] = PodUsage(rng.uniform(0.1, 2.0), 2**30)
    snapshot = cache_of(*objects).snapshot()  # type: ignore[arg-type]
    levels = (0.1, 0.5, 0.9)
    usage = UsageFigures({f"n{i}": NodeUsage(levels[i % 3], 0.3) for i in range(args.nodes)}, pods)
    policy = parse_policy(POLICY.read_text(), str(POLICY))
    began = time.perf_counter()
    plan = deschedule(snapshot, usage, policy)
    seconds = time.perf_counter() - began
    print(json.dumps({"nodes": args.nodes, "pods": len(pods), "seconds": round(seconds, 3),
                      "evictions": len(plan.evictions)}))  # fmt: skip


if __name__ == "__main__":
    main()
