"""Workloads for benchmarks/simulate_scale.py, as manifest documents (plain dicts).

Two kinds, both deterministic for a seed:

- ``synthetic``: a contended cluster that drains. GPU and CPU nodes; PodGroup
  gangs of various minMember (some elastic, some with minResources, GPU gangs
  that need the whole group to progress) with their pods; lone pods; three
  weighted queues and two PriorityClasses; and, when the mix asks for them,
  Volcano Jobs and Deployments. Every pod (but a Deployment's) has a duration;
  submissions are spread so the offered work is about 125% of what the cluster
  can do in that window, then the backlog drains.
- ``openb``: Alibaba's openb trace (shared/traces/openb) replayed as its paper
  does: the nodes of ``openb_node_list_all_node.csv``, the pods of
  ``openb_pod_list_default.csv`` arriving one per simulated second in list
  order and never leaving, then pods drawn at random from the list until the
  arrived GPU demand reaches 130% of the cluster's GPUs. GPU sharing is not
  modelled yet: every pod asks ``nvidia.com/gpu: num_gpu`` whole GPUs, so a
  pod with num_gpu 1 and gpu_milli < 1000 takes a whole GPU.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Document = dict[str, Any]

GROUP = "scheduling.k8s.io/group-name"
QUEUE = "scheduling.volcano.sh/queue-name"
SUBMIT_AT = "simulation.asyncsched.io/submit-at"
DURATION = "simulation.asyncsched.io/duration"
WHOLE_GROUP = "simulation.asyncsched.io/needs-whole-group"
GPU = "nvidia.com/gpu"

OPENB = Path("/work/shared/traces/openb")
OPENB_ARRIVED_GPU_SHARE = 1.3

DEFAULT_MIX = {"podgroup": 0.75, "lone": 0.25, "vcjob": 0.0, "deployment": 0.0}
QUEUES = (("batch", 1), ("research", 2), ("prod", 4))
NAMESPACES = ("team-a", "team-b", "team-c", "team-d")


@dataclass
class Workload:
    """The documents to simulate, and what the benchmark reports about them."""

    documents: list[Document]
    pods: int
    nodes: int
    notes: dict[str, Any] = field(default_factory=dict)


def parse_mix(text: str) -> dict[str, float]:
    """``podgroup=0.6,lone=0.2,vcjob=0.1,deployment=0.1``: shares of the pods by kind."""
    mix = dict.fromkeys(DEFAULT_MIX, 0.0)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name not in mix:
            raise ValueError(f"--mix: unknown kind {name!r} (known: {', '.join(mix)})")
        mix[name] = float(value)
    if sum(mix.values()) <= 0:
        raise ValueError("--mix: the shares add up to nothing")
    return mix


# -- synthetic ------------------------------------------------------------------


def _meta(name: str, namespace: str | None = None, **annotations: str) -> Document:
    meta: Document = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = annotations
    return meta


def _pod_meta(name: str, namespace: str, **annotations: str) -> Document:
    """A pod's metadata (the simulated API server gives it its uid, as a real one does)."""
    return _meta(name, namespace, **annotations)


def _requests(cpu_milli: int, memory_mib: int, gpu: int) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": f"{cpu_milli}m"}
    if memory_mib:
        requests["memory"] = f"{memory_mib}Mi"
    if gpu:
        requests[GPU] = str(gpu)
    return requests


def _pod_spec(requests: dict[str, Any], priority_class: str) -> Document:
    spec: Document = {
        "schedulerName": "volcano",
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return spec


class _Synthetic:
    """Draws jobs until the pod count is reached; then spreads their submissions."""

    def __init__(self, pods: int, nodes: int, seed: int, mix: dict[str, float]) -> None:
        self.rng = random.Random(seed)
        self.target = pods
        self.node_count = nodes
        total = sum(mix.values())
        self.kinds = [k for k, v in mix.items() if v > 0]
        self.weights = [mix[k] / total for k in self.kinds]
        self.pods = 0
        self.jobs: list[tuple[float, list[Document]]] = []
        """(work in cpu-core-seconds equivalents, documents) per job, before submit-at."""
        self.cpu_seconds = 0.0
        self.gpu_seconds = 0.0
        # A gang asks at most 1/8 of the cluster: the smallest queue's share (1/7 when
        # all three want more) then always holds it once the backlog drains.
        self.gpu_capacity = 8 * sum(1 for i in range(nodes) if i % 4 == 3)
        self.cpu_capacity = sum(32 if i % 4 != 3 else 64 for i in range(nodes))

    # what a pod costs the cluster, to size the submission window
    def _account(self, cpu_milli: int, gpu: int, seconds: float, count: int) -> None:
        self.cpu_seconds += cpu_milli / 1000 * seconds * count
        self.gpu_seconds += gpu * seconds * count

    def _queue_and_priority(self) -> tuple[str, str]:
        queue = self.rng.choices([q for q, _ in QUEUES], weights=(3, 2, 1))[0]
        priority = "high" if self.rng.random() < 0.2 else ""
        return queue, priority

    def _cpu_pod_shape(self) -> tuple[int, int]:
        cpu = self.rng.choice((500, 1000, 2000, 4000, 8000))
        return cpu, cpu * self.rng.choice((2, 4)) * 1024 // 1000

    def podgroup(self, index: int) -> list[Document]:
        rng = self.rng
        name = f"pg-{index:06d}"
        namespace = rng.choice(NAMESPACES)
        queue, priority = self._queue_and_priority()
        if rng.random() < 0.2:
            gpu = rng.choice((1, 2, 4, 8))
            min_member = rng.choice((1, 2, 4, 8))
            min_member = max(1, min(min_member, self.gpu_capacity // 8 // gpu))
            gpu = min(gpu, max(self.gpu_capacity // 8, 1))
            replicas = min_member
            cpu, memory = gpu * 6000, gpu * 48 * 1024
            seconds = rng.randrange(300, 3600)
            notes = {DURATION: str(seconds), WHOLE_GROUP: "true"}
        else:
            min_member = rng.choice((1, 2, 3, 4, 8, 16, 32))
            replicas = min_member + (rng.randrange(1, 5) if rng.random() < 0.25 else 0)
            gpu = 0
            cpu, memory = self._cpu_pod_shape()
            replicas = max(1, min(replicas, self.cpu_capacity * 1000 // 8 // cpu))
            seconds = rng.randrange(60, 1800)
            notes = {DURATION: str(seconds)}
        replicas = min(replicas, max(self.target - self.pods, 1))
        min_member = min(min_member, replicas)
        requests = _requests(cpu, memory, gpu)
        spec: Document = {"minMember": min_member, "queue": queue}
        if priority:
            spec["priorityClassName"] = priority
        if rng.random() < 0.5:
            spec["minResources"] = _requests(
                cpu * min_member, memory * min_member, gpu * min_member
            )
        docs: list[Document] = [
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": _meta(name, namespace),
                "spec": spec,
            }
        ]
        for i in range(replicas):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _pod_meta(f"{name}-{i}", namespace, **{GROUP: name}, **notes),
                    "spec": _pod_spec(requests, priority),
                }
            )
        self.pods += replicas
        self._account(cpu, gpu, seconds, replicas)
        return docs

    def lone(self, index: int) -> list[Document]:
        rng = self.rng
        queue, priority = self._queue_and_priority()
        gpu = 1 if rng.random() < 0.1 else 0
        cpu = rng.choice((250, 500, 1000, 2000))
        seconds = rng.randrange(30, 900)
        notes = {QUEUE: queue, DURATION: str(seconds)}
        self.pods += 1
        self._account(cpu, gpu, seconds, 1)
        return [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": _pod_meta(f"lone-{index:06d}", rng.choice(NAMESPACES), **notes),
                "spec": _pod_spec(_requests(cpu, cpu * 2 * 1024 // 1000, gpu), priority),
            }
        ]

    def vcjob(self, index: int) -> list[Document]:
        rng = self.rng
        queue, priority = self._queue_and_priority()
        tasks = []
        total = 0
        for role in ("master", "worker")[: rng.choice((1, 2))]:
            replicas = 1 if role == "master" else rng.choice((1, 2, 4, 8))
            replicas = min(replicas, max(self.target - self.pods - total, 1))
            cpu, memory = self._cpu_pod_shape()
            seconds = rng.randrange(60, 1800)
            self._account(cpu, 0, seconds, replicas)
            total += replicas
            tasks.append(
                {
                    "name": role,
                    "replicas": replicas,
                    "template": {
                        "metadata": {"annotations": {DURATION: str(seconds)}},
                        "spec": _pod_spec(_requests(cpu, memory, 0), priority),
                    },
                }
            )
        self.pods += total
        return [
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": _meta(f"vcjob-{index:06d}", rng.choice(NAMESPACES)),
                "spec": {
                    "schedulerName": "volcano",
                    "queue": queue,
                    "minAvailable": total,
                    "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                    "tasks": tasks,
                },
            }
        ]

    def deployment(self, index: int) -> list[Document]:
        rng = self.rng
        replicas = min(rng.choice((1, 2, 3)), max(self.target - self.pods, 1))
        cpu = rng.choice((250, 500, 1000))
        name = f"svc-{index:06d}"
        self.pods += replicas
        spec = _pod_spec(_requests(cpu, cpu * 2 * 1024 // 1000, 0), "")
        return [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": _meta(name, rng.choice(NAMESPACES)),
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
                },
            }
        ]

    def nodes(self) -> list[Document]:
        docs = []
        for i in range(self.node_count):
            if i % 4 == 3:
                allocatable = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
            else:
                allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110"}
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": _meta(f"node-{i:05d}"),
                    "status": {"allocatable": allocatable, "capacity": allocatable},
                }
            )
        return docs

    def build(self) -> Workload:
        makers = {
            "podgroup": self.podgroup,
            "lone": self.lone,
            "vcjob": self.vcjob,
            "deployment": self.deployment,
        }
        groups: list[list[Document]] = []
        while self.pods < self.target:
            kind = self.rng.choices(self.kinds, weights=self.weights)[0]
            groups.append(makers[kind](len(groups)))
        busy = max(
            self.cpu_seconds / max(self.cpu_capacity, 1),
            self.gpu_seconds / self.gpu_capacity if self.gpu_capacity else 0.0,
        )
        window = max(int(busy / 1.25), 1)
        documents = self._cluster_objects() + self.nodes()
        for docs in groups:
            at = str(self.rng.randrange(window))
            for doc in docs:
                doc["metadata"].setdefault("annotations", {})[SUBMIT_AT] = at
            documents.extend(docs)
        return Workload(
            documents,
            pods=self.pods,
            nodes=self.node_count,
            notes={"submission_window_s": window, "jobs": len(groups)},
        )

    @staticmethod
    def _cluster_objects() -> list[Document]:
        docs: list[Document] = [
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": _meta(name),
                "spec": {"weight": weight, "reclaimable": True},
            }
            for name, weight in QUEUES
        ]
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": _meta("high"),
                "value": 1000,
            }
        )
        return docs


def synthetic(pods: int, nodes: int, seed: int, mix: dict[str, float]) -> Workload:
    workload = _Synthetic(pods, nodes, seed, mix).build()
    workload.notes["mix"] = {k: v for k, v in mix.items() if v}
    return workload


# -- openb ------------------------------------------------------------------------


def openb(seed: int, pod_list: str = "openb_pod_list_default.csv") -> Workload:
    """The openb trace replay (see the module docstring)."""
    with (OPENB / "openb_node_list_all_node.csv").open() as f:
        node_rows = list(csv.DictReader(f))
    with (OPENB / pod_list).open() as f:
        pod_rows = list(csv.DictReader(f))
    documents: list[Document] = []
    cluster_gpus = 0
    for row in node_rows:
        gpus = int(row["gpu"])
        cluster_gpus += gpus
        allocatable = {
            "cpu": f"{row['cpu_milli']}m",
            "memory": f"{row['memory_mib']}Mi",
            "pods": "110",
        }
        labels = {}
        if gpus:
            allocatable[GPU] = str(gpus)
            labels["openb.trace/gpu-model"] = row["model"]
        meta = _meta(row["sn"])
        if labels:
            meta["labels"] = labels
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": meta,
                "status": {"allocatable": allocatable, "capacity": allocatable},
            }
        )

    def demand_milli(row: dict[str, str]) -> int:
        gpus = int(row["num_gpu"])
        return int(row["gpu_milli"]) if gpus == 1 else gpus * 1000

    arrivals = list(pod_rows)
    arrived = sum(demand_milli(r) for r in arrivals)
    rng = random.Random(seed)
    goal = OPENB_ARRIVED_GPU_SHARE * cluster_gpus * 1000
    while arrived < goal:
        row = rng.choice(pod_rows)
        arrivals.append(row)
        arrived += demand_milli(row)
    requested_gpus = 0
    shared = 0
    for second, row in enumerate(arrivals):
        gpus = int(row["num_gpu"])
        requested_gpus += gpus
        shared += gpus == 1 and int(row["gpu_milli"]) < 1000
        annotations = {
            SUBMIT_AT: str(second),
            "openb.trace/gpu-milli": row["gpu_milli"],
        }
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": _pod_meta(f"{row['name']}-{second:05d}", "default", **annotations),
                "spec": _pod_spec(
                    _requests(int(row["cpu_milli"]), int(row["memory_mib"]), gpus), ""
                ),
            }
        )
    return Workload(
        documents,
        pods=len(arrivals),
        nodes=len(node_rows),
        notes={
            "pod_list": pod_list,
            "cluster_gpus": cluster_gpus,
            "trace_pods": len(pod_rows),
            "appended_pods": len(arrivals) - len(pod_rows),
            "arrived_gpu_demand_share": round(arrived / (cluster_gpus * 1000), 4),
            "requested_whole_gpus": requested_gpus,
            "gpu_sharing": (
                f"not modelled: each pod asks nvidia.com/gpu: num_gpu; {shared} pods with "
                "num_gpu 1 and gpu_milli < 1000 ask a whole GPU"
            ),
        },
    )
