"""Volcano's label and annotation keys and object names, so existing tools keep working."""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api.batch import Job
from asyncsched.api.meta import OwnerReference

__all__ = [
    "COOLDOWN_TIME",
    "DEFAULT_QUEUE",
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_TASK_SPEC",
    "GROUP_NAME",
    "JDB_MAX_UNAVAILABLE",
    "JDB_MIN_AVAILABLE",
    "JOB_API_VERSION",
    "JOB_NAME",
    "JOB_NAMESPACE",
    "JOB_RETRY_COUNT",
    "JOB_VERSION",
    "NUMA_POLICY",
    "OUT_OF_SYNC",
    "PARTITION_ID",
    "POD_PREEMPTABLE",
    "POD_TEMPLATE",
    "QUEUE_NAME",
    "REVOCABLE_ZONE",
    "TASK_INDEX",
    "TASK_SPEC",
    "job_owner_reference",
    "pod_name",
    "podgroup_name",
]

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"

TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
JOB_VERSION = "volcano.sh/job-version"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
POD_TEMPLATE = "volcano.sh/template-uid"
PARTITION_ID = "volcano.sh/partition-id"
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"
"""Set on a pod the controller is about to delete, so its deletion raises no policy."""
GROUP_NAME = "scheduling.k8s.io/group-name"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
POD_PREEMPTABLE = "volcano.sh/preemptable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"

DEFAULT_TASK_SPEC = "default"
DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER_NAME = "volcano"


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def podgroup_name(job: Job) -> str:
    """``<job>-<job uid>``, as Volcano has named it since 1.5 (``<job>`` alone is the legacy name).

    A Job without a uid yet (not stored by an API server) falls back to the legacy name.
    """
    meta = job.metadata
    return f"{meta.name}-{meta.uid}" if meta.uid else meta.name


def job_owner_reference(job: Job) -> OwnerReference:
    return OwnerReference(
        api_version=JOB_API_VERSION,
        kind="Job",
        name=job.metadata.name,
        uid=job.metadata.uid,
        controller=True,
        block_owner_deletion=True,
    )


def owner_metadata(job: Job, name: str) -> dict[str, Any]:
    """Metadata of an object the Job owns, so the garbage collector removes it with the Job."""
    return {
        "name": name,
        "namespace": job.metadata.namespace,
        "ownerReferences": [msgspec.to_builtins(job_owner_reference(job))],
    }
