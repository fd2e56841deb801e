"""``asyncsched simulate`` on one very large Job, and on very many Deployments.

    python benchmarks/simulate_large_objects.py --replicas 10000 --deployments 3000
        [--source DIR]

Work that grows with the size of one object (all the pods of one Job, one gang) or with
the number of objects of a kind (every ReplicaSet) shows here as time that grows with
the square. Two inputs are written to a temporary folder: one Volcano Job of
``--replicas`` pods (1 cpu each, 600 s, needing the whole gang to progress) on nodes of
128 cpu, and ``--deployments`` Deployments of 1-3 replicas on nodes of 110 pods. Each is
simulated to the end in a child process (``python -m asyncsched simulate -f FILE``, with
``--source`` first on PYTHONPATH when given, to measure another checkout); the figures
are its user CPU seconds and its event count. The last line is one JSON object:
{"replicas", "deployment_count", "big_job": {"cpu_s", "events"}, "deployments": {...},
"source"}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _nodes(count: int, cpu: int, pods: int) -> list[str]:
    return [
        f"""apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 2Ti, pods: "{pods}"}}}}
"""
        for i in range(count)
    ]


def big_job(replicas: int) -> str:
    job = f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: big}}
spec:
  minAvailable: {replicas}
  schedulerName: volcano
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata:
        annotations:
          simulation.asyncsched.io/duration: "600"
          simulation.asyncsched.io/needs-whole-group: "true"
      spec:
        restartPolicy: OnFailure
        containers:
        - {{name: main, image: trainer, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
"""
    return "---\n".join([*_nodes(-(-replicas // 128), 128, 200), job])


def deployments(count: int) -> str:
    made = [
        f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: svc-{i}}}
spec:
  replicas: {1 + i % 3}
  selector: {{matchLabels: {{app: svc-{i}}}}}
  template:
    metadata: {{labels: {{app: svc-{i}}}}}
    spec:
      schedulerName: volcano
      containers:
      - {{name: main, image: server, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
"""
        for i in range(count)
    ]
    return "---\n".join([*_nodes(-(-2 * count // 100), 128, 110), *made])


def simulate(path: Path, source: str) -> dict[str, float]:
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH", "")]))
    events = path.with_suffix(".jsonl")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    done = subprocess.run(
        [sys.executable, "-m", "asyncsched", "simulate", "-f", str(path), "--events", str(events)],
        env=env,
        cwd=path.parent,  # not a checkout: PYTHONPATH or the installed package decides
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"simulate {path.name}: {done.stderr.strip().splitlines()[-1]}")
    spent = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    with events.open() as lines:
        count = sum(1 for _ in lines)
    return {"cpu_s": round(spent, 2), "events": count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=10000)
    parser.add_argument("--deployments", type=int, default=3000)
    parser.add_argument("--source", default="", help="a checkout to measure (PYTHONPATH)")
    args = parser.parse_args()
    report: dict[str, object] = {"replicas": args.replicas, "deployment_count": args.deployments}
    with tempfile.TemporaryDirectory() as folder:
        for name, text in (
            ("big_job", big_job(args.replicas)),
            ("deployments", deployments(args.deployments)),
        ):
            path = Path(folder) / f"{name}.yaml"
            path.write_text(text)
            report[name] = simulate(path, args.source)
            print(f"{name}: {report[name]}", file=sys.stderr)
    report["source"] = args.source or str(ROOT)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
