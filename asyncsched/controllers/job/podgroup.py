"""The PodGroup of a Job: its gang (minMember), per-task minimums, queue and minimum resources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from asyncsched.api.batch import Job, TaskSpec, template_spec
from asyncsched.api.core import Pod
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.quantity import format_units
from asyncsched.api.volcano import PodGroup, PodGroupSpec
from asyncsched.controllers.job import keys
from asyncsched.model.resource import Resource
from asyncsched.model.task import pod_requests

__all__ = ["build_podgroup", "min_resources", "min_task_member", "podgroup_spec_update"]


def min_task_member(task: TaskSpec) -> int:
    if task.min_available is not None:
        return task.min_available
    partition = task.partition_policy or {}
    min_partitions = int(partition.get("minPartitions") or 0)
    size = int(partition.get("partitionSize") or 0)
    if min_partitions and size:
        return min_partitions * size
    return task.replicas


def _pod_usage(task: TaskSpec) -> Resource:
    _, init = pod_requests(Pod(spec=template_spec(task)))
    return init


def min_resources(job: Job, priorities: Mapping[str, int]) -> dict[str, str | int | float]:
    """Resources of the first minAvailable pods, highest task priority first (Volcano's rule)."""
    ordered = sorted(
        job.spec.tasks,
        key=lambda t: (
            -priorities.get(str((t.template.get("spec") or {}).get("priorityClassName") or ""), 0)
        ),
    )
    total_min = sum(min_task_member(t) for t in job.spec.tasks)
    want = job.spec.min_available
    need = Resource()
    if want < total_min:
        count = want
        for task in ordered:
            take = min(count, task.replicas)
            need = need + _pod_usage(task).scale(take)
            count -= take
            if count <= 0:
                break
    else:
        placed = 0
        for task in ordered:
            if task.min_available is None:
                continue
            take = min(task.min_available, want - placed)
            need = need + _pod_usage(task).scale(take)
            placed += take
            if placed >= want:
                break
        left = want - placed
        for task in ordered:
            if left <= 0:
                break
            spare = task.replicas - (task.min_available if task.min_available is not None else 0)
            if spare <= 0:
                continue
            take = min(spare, left)
            need = need + _pod_usage(task).scale(take)
            left -= take
    return {name: format_units(name, units) for name, units in sorted(need.items()) if units}


def _network_topology(job: Job) -> dict[str, Any] | None:
    nt = job.spec.network_topology
    if nt is None:
        return None
    out: dict[str, Any] = {"mode": nt.mode}
    if nt.highest_tier_allowed is not None:
        out["highestTierAllowed"] = nt.highest_tier_allowed
    elif nt.highest_tier_name:
        out["highestTierName"] = nt.highest_tier_name
    return out


def build_podgroup(job: Job, priorities: Mapping[str, int]) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(
            name=keys.podgroup_name(job),
            namespace=job.metadata.namespace,
            labels=dict(job.metadata.labels),
            annotations=dict(job.metadata.annotations),
            owner_references=[keys.job_owner_reference(job)],
        ),
        spec=PodGroupSpec(
            min_member=job.spec.min_available,
            min_task_member={t.name: min_task_member(t) for t in job.spec.tasks},
            queue=job.spec.queue or keys.DEFAULT_QUEUE,
            priority_class_name=job.spec.priority_class_name,
            min_resources=min_resources(job, priorities),
            network_topology=_network_topology(job),
        ),
    )


def podgroup_spec_update(pg: PodGroup, job: Job, priorities: Mapping[str, int]) -> PodGroup | None:
    """The PodGroup with the fields a Job may change brought up to date, or None if they are."""
    spec = pg.spec
    wanted_tasks = dict(spec.min_task_member)
    for task in job.spec.tasks:
        wanted_tasks[task.name] = min_task_member(task)
    resources = min_resources(job, priorities)
    new = msgspec.structs.replace(
        spec,
        priority_class_name=job.spec.priority_class_name,
        min_member=job.spec.min_available,
        min_resources=resources,
        min_task_member=wanted_tasks,
    )
    if new == spec:
        return None
    return msgspec.structs.replace(pg, spec=new)
