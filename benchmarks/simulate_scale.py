"""Scale of ``asyncsched simulate``: load and run time, memory, sessions, per simulated pod.

    python benchmarks/simulate_scale.py --case 1k|10k|100k|134k|openb [--profile]
    python benchmarks/simulate_scale.py --pods 5000 --nodes 100 [--mix ...] [--yaml]

The workloads are in benchmarks/sim_workloads.py (synthetic mixes and the openb
trace replay). By default the manifests are built in memory and decoded into
api objects (what ``load_s`` measures); ``--yaml`` writes them to a YAML file
first (in a child process, cached under ``--yaml-dir``, not measured) and times
the real loader, ``load_manifests``, on it, as ``asyncsched simulate -f`` does.
The 134k case always goes through YAML. ``run_s`` covers ``Simulation.run``;
``report_s`` the summary the CLI prints. ``--max-wall S`` stops the run after
about S seconds of wall time (the run advances in slices of virtual time) and
reports how far it got. ``--profile`` prints a cProfile of load, run and report
to stderr: the top functions and self time by file.

The last line on stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import msgspec  # noqa: E402
import sim_workloads  # noqa: E402
import yaml  # noqa: E402

import asyncsched  # noqa: E402
from asyncsched.api import Job, Node, Pod, PodGroup, PriorityClass, Queue  # noqa: E402
from asyncsched.backends.config_source import ConfigSource  # noqa: E402
from asyncsched.backends.sim import Manifest, Simulation, load_manifests, summarize  # noqa: E402
from asyncsched.backends.sim.manifests import check_references  # noqa: E402
from asyncsched.backends.sim.objects import Deployment  # noqa: E402
from asyncsched.framework import Registry  # noqa: E402
from asyncsched.model import kernels  # noqa: E402

CASES: dict[str, dict[str, Any]] = {
    "1k": {"pods": 1_000, "nodes": 20},
    "10k": {"pods": 10_000, "nodes": 200},
    "100k": {"pods": 100_000, "nodes": 2_000},
    "134k": {"pods": 134_000, "nodes": 2_000, "yaml": True},
    "openb": {"workload": "openb"},
}
KINDS: dict[str, type[Any]] = {
    "Pod": Pod,
    "Node": Node,
    "PodGroup": PodGroup,
    "Queue": Queue,
    "PriorityClass": PriorityClass,
    "Job": Job,
    "Deployment": Deployment,
}
CLUSTER_SCOPED = ("Node", "Queue", "PriorityClass")


def build(args: argparse.Namespace) -> sim_workloads.Workload:
    if args.workload == "openb":
        return sim_workloads.openb(args.seed)
    return sim_workloads.synthetic(args.pods, args.nodes, args.seed, args.mix)


def in_memory(documents: list[dict[str, Any]]) -> list[Manifest]:
    """The documents as the loader would give them, without YAML."""
    manifests = []
    for doc in documents:
        kind = doc["kind"]
        if kind not in CLUSTER_SCOPED:
            doc["metadata"].setdefault("namespace", "default")
        obj = msgspec.convert(doc, KINDS[kind])
        at = float(obj.metadata.annotations.get(sim_workloads.SUBMIT_AT, 0))
        manifests.append(Manifest(obj=obj, submit_at=at, source=f"{kind} {obj.metadata.name}"))
    check_references(manifests)
    return manifests


def yaml_path(args: argparse.Namespace) -> Path:
    key = f"{args.workload}-{args.pods}-{args.nodes}-{args.seed}-{sorted(args.mix.items())}"
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    return Path(args.yaml_dir) / f"simulate-scale-{args.workload}-{digest}.yaml"


def write_yaml(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    workload = build(args)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as out:
        yaml.dump_all(workload.documents, out, Dumper=yaml.CSafeDumper, sort_keys=False)
    partial.rename(path)
    info = {"pods": workload.pods, "nodes": workload.nodes, "notes": workload.notes}
    path.with_suffix(".json").write_text(json.dumps(info))
    return info


def ensure_yaml(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The workload's YAML file, written by a child process so this one's RSS stays honest."""
    path = yaml_path(args)
    if not path.exists():
        began = time.perf_counter()
        command = [sys.executable, __file__, "--write-yaml", *sys.argv[1:]]
        subprocess.run(command, check=True)
        print(f"wrote {path} in {time.perf_counter() - began:.1f}s", file=sys.stderr)
    info: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())
    return path, info


def run(sim: Simulation, max_wall: float | None, step: float) -> Any:
    if max_wall is None:
        return sim.run()
    began = time.perf_counter()
    until = step
    while True:
        outcome = sim.run(until=until)
        if outcome.reason != "until" or time.perf_counter() - began > max_wall:
            return outcome
        until += step


def gpu_figures(sim: Simulation, cluster_gpus: int) -> dict[str, Any]:
    held = 0
    milli = 0
    for pod in sim.store.list(Pod).values():
        if not pod.spec.node_name:
            continue
        gpus = sum(int(c.resources.requests.get(sim_workloads.GPU, 0)) for c in pod.spec.containers)
        held += gpus
        share = int(pod.metadata.annotations.get("openb.trace/gpu-milli", 1000))
        milli += share if gpus == 1 else gpus * 1000
    return {
        "gpu_allocation_ratio": round(held / cluster_gpus, 4),
        "gpu_milli_allocation_ratio": round(milli / (cluster_gpus * 1000), 4),
    }


def self_time_by_file(stats: pstats.Stats) -> str:
    table: dict[str, float] = {}
    for (path, _, _), row in stats.stats.items():  # type: ignore[attr-defined]
        where = path
        if "asyncsched/" in path:
            where = "asyncsched/" + path.rsplit("asyncsched/", 1)[1]
        elif path.startswith("~") or path.startswith("<"):
            where = "builtins"
        else:
            where = "other: " + Path(path).name
        table[where] = table.get(where, 0.0) + row[2]
    total = sum(table.values()) or 1.0
    lines = ["self CPU seconds by file:"]
    for where, seconds in sorted(table.items(), key=lambda kv: -kv[1])[:30]:
        lines.append(f"  {seconds:8.2f}  {100 * seconds / total:5.1f}%  {where}")
    return "\n".join(lines)


def source_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--workload", choices=("synthetic", "openb"), default="synthetic")
    parser.add_argument("--pods", type=int, default=1_000)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--mix",
        type=sim_workloads.parse_mix,
        default=dict(sim_workloads.DEFAULT_MIX),
        help="shares of the pods by kind: podgroup=..,lone=..,vcjob=..,deployment=.. "
        "(default podgroup=0.75,lone=0.25)",
    )
    parser.add_argument("--yaml", action="store_true", help="load through load_manifests")
    parser.add_argument("--yaml-dir", default="/tmp/asyncsched-bench")
    parser.add_argument("--max-wall", type=float, help="stop the run after about this long")
    parser.add_argument("--step", type=float, default=60.0, help="virtual seconds per slice")
    parser.add_argument("--profile", action="store_true", help="cProfile to stderr")
    parser.add_argument("--profile-out", metavar="FILE", help="also dump the cProfile stats")
    parser.add_argument("--write-yaml", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        for name, value in CASES[args.case].items():
            setattr(args, name, value)
    if args.write_yaml:
        write_yaml(args, yaml_path(args))
        return

    profiler = cProfile.Profile() if args.profile else None
    commit = source_commit()  # now: the tree may change while a long run goes on
    print(kernels.describe(), file=sys.stderr)
    path = None
    if args.yaml:
        path, info = ensure_yaml(args)
        pods, nodes, notes = info["pods"], info["nodes"], info["notes"]
    else:
        workload = build(args)
        pods, nodes, notes = workload.pods, workload.nodes, workload.notes
    rss_before_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    if profiler is not None:
        profiler.enable()
    began = time.perf_counter()
    if path is not None:
        manifests = load_manifests([path])
    else:
        manifests = in_memory(workload.documents)
        del workload
    load_s = time.perf_counter() - began
    rss_after_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    config = ConfigSource(Registry())
    began = time.perf_counter()
    cpu_began = time.process_time()
    sim = Simulation(manifests, config, keep_events=False)  # as `asyncsched simulate` runs
    del manifests
    outcome = run(sim, args.max_wall, args.step)
    run_s = time.perf_counter() - began
    run_cpu_s = time.process_time() - cpu_began
    began = time.perf_counter()
    summarize(sim, outcome).render()
    report_s = time.perf_counter() - began
    if profiler is not None:
        profiler.disable()

    bound = len(sim.bound_at)
    figures: dict[str, Any] = {
        "case": args.case or "custom",
        "workload": args.workload,
        "pods": pods,
        "nodes": nodes,
        "loaded_from": "yaml" if path is not None else "memory",
        "load_s": round(load_s, 2),
        "run_s": round(run_s, 2),
        "run_cpu_s": round(run_cpu_s, 2),
        "report_s": round(report_s, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_mb_before_load": round(rss_before_load, 1),
        "rss_mb_after_load": round(rss_after_load, 1),
        "sessions": sim.sessions,
        "sim_end_s": outcome.end,
        "outcome": outcome.reason,
        "pods_bound": bound,
        "wall_ms_per_pod": round(1000 * run_s / max(bound, 1), 3),
        "native": kernels.NATIVE,
        "kernels": kernels.describe(),
        "asyncsched_version": _version(),
        "asyncsched_commit": commit,
        "asyncsched_path": str(Path(asyncsched.__file__).parent),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "notes": notes,
    }
    if args.max_wall is not None and outcome.reason == "until":
        figures["stopped_early"] = f"--max-wall {args.max_wall:g}s reached at t={outcome.end:g}s"
    if args.workload == "openb":
        figures.update(gpu_figures(sim, notes["cluster_gpus"]))
    if profiler is not None:
        if args.profile_out:
            profiler.dump_stats(args.profile_out)
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(35)
        stats.sort_stats("cumulative").print_stats(45)
        print(out.getvalue(), file=sys.stderr)
        print(self_time_by_file(stats), file=sys.stderr)
    print(json.dumps(figures))


def _version() -> str:
    try:
        return version("asyncsched")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    main()
