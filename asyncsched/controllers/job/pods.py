"""Building a task's pods from its template, with Volcano's names, labels and annotations."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from asyncsched.api.batch import Job, TaskSpec
from asyncsched.api.core import Pod
from asyncsched.controllers.job import keys
from asyncsched.controllers.job.plugins import PLUGINS

__all__ = ["build_pod", "dependencies_ready", "task_of"]

_JOB_ANNOTATIONS_TO_POD = (
    keys.POD_PREEMPTABLE,
    keys.COOLDOWN_TIME,
    keys.REVOCABLE_ZONE,
)


def task_of(pod: Pod) -> str:
    return pod.metadata.annotations.get(keys.TASK_SPEC) or keys.DEFAULT_TASK_SPEC


def _volume_name(job: Job, claim: str) -> str:
    """Volcano appends a random suffix; a hash keeps the same name on every run instead."""
    digest = hashlib.sha256(f"{job.metadata.uid}/{claim}".encode()).hexdigest()[:12]
    return f"{job.metadata.name}-{digest}"


def build_pod(job: Job, task: TaskSpec, index: int, podgroup: str) -> dict[str, Any]:
    """The pod ``<job>-<task>-<index>`` as a JSON-ready dict; the template's fields all survive."""
    template = copy.deepcopy(task.template)
    meta_in: dict[str, Any] = template.get("metadata") or {}
    spec: dict[str, Any] = template.get("spec") or {}
    name = keys.pod_name(job.metadata.name, task.name, index)
    labels: dict[str, str] = dict(meta_in.get("labels") or {})
    annotations: dict[str, str] = dict(meta_in.get("annotations") or {})
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **keys.owner_metadata(job, name),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }
    if not spec.get("schedulerName"):
        spec["schedulerName"] = job.spec.scheduler_name or keys.DEFAULT_SCHEDULER_NAME
    if not spec.get("priorityClassName") and job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    seen: set[str] = set()
    for volume in job.spec.volumes:
        claim = volume.volume_claim_name
        if not claim or claim in seen:
            continue
        seen.add(claim)
        vname = _volume_name(job, claim)
        spec.setdefault("volumes", []).append(
            {"name": vname, "persistentVolumeClaim": {"claimName": claim}}
        )
        for container in spec.get("containers") or []:
            container.setdefault("volumeMounts", []).append(
                {"mountPath": volume.mount_path, "name": vname}
            )
    task_key = task.name or keys.DEFAULT_TASK_SPEC
    queue = job.spec.queue or keys.DEFAULT_QUEUE
    annotations.update(
        {
            keys.TASK_INDEX: str(index),
            keys.TASK_SPEC: task_key,
            keys.GROUP_NAME: podgroup,
            keys.JOB_NAME: job.metadata.name,
            keys.QUEUE_NAME: queue,
            keys.JOB_VERSION: str(job.status.version),
            keys.POD_TEMPLATE: f"{job.metadata.name}-{task.name}",
            keys.JOB_RETRY_COUNT: str(job.status.retry_count),
        }
    )
    if task.topology_policy:
        annotations[keys.NUMA_POLICY] = task.topology_policy
    job_annotations = job.metadata.annotations
    for key in _JOB_ANNOTATIONS_TO_POD:
        if key in job_annotations:
            annotations[key] = job_annotations[key]
    if keys.JDB_MIN_AVAILABLE in job_annotations:
        annotations[keys.JDB_MIN_AVAILABLE] = job_annotations[keys.JDB_MIN_AVAILABLE]
    elif keys.JDB_MAX_UNAVAILABLE in job_annotations:
        annotations[keys.JDB_MAX_UNAVAILABLE] = job_annotations[keys.JDB_MAX_UNAVAILABLE]
    labels.update(
        {
            keys.TASK_INDEX: str(index),
            keys.JOB_NAME: job.metadata.name,
            keys.TASK_SPEC: task_key,
            keys.JOB_NAMESPACE: job.metadata.namespace,
            keys.QUEUE_NAME: queue,
        }
    )
    for key in (keys.POD_PREEMPTABLE, keys.COOLDOWN_TIME):
        if key in job.metadata.labels:
            labels[key] = job.metadata.labels[key]
    partition = task.partition_policy
    if partition is not None:
        size = int(partition.get("partitionSize") or 0)
        labels[keys.PARTITION_ID] = str(index // size if size > 0 else 0)
    for plugin_name, args in job.spec.plugins.items():
        plugin = PLUGINS.get(plugin_name)
        if plugin is not None:
            plugin.on_pod_create(pod, job, list(args))
    return pod


def _pod_ready(pod: Pod) -> bool:
    return pod.status.phase in ("Running", "Succeeded") and pod.metadata.deletion_timestamp is None


def dependencies_ready(job: Job, task: TaskSpec, pods: Mapping[str, Pod]) -> bool:
    """Whether ``task``'s dependencies run, so its pods may be created (Volcano's dependsOn).

    A dependency is ready when at least its minAvailable pods are Running (or
    Succeeded); with ``iteration: any`` and several names, one ready dependency suffices.
    Container readiness is not in our slim Pod, so a Running pod counts as ready.
    """
    depends = task.depends_on
    if depends is None:
        return True

    def ready(name: str) -> bool:
        spec = next((t for t in job.spec.tasks if t.name == name), None)
        if spec is None:
            return False
        running = 0
        for i in range(spec.replicas):
            pod = pods.get(keys.pod_name(job.metadata.name, name, i))
            if pod is not None and _pod_ready(pod):
                running += 1
        need = spec.min_available if spec.min_available is not None else spec.replicas
        return running >= need

    if len(depends.name) > 1 and depends.iteration == "any":
        return any(ready(n) for n in depends.name)
    return all(ready(n) for n in depends.name)
