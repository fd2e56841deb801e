"""Volcano's batch.volcano.sh/v1alpha1 Job.

Field names follow Volcano's CRD so users' YAML decodes as is. A task's pod
template stays a plain dict: pods are built from it, and a Struct would drop
every field it does not declare (ports, volume mounts, probes...).
"""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api.core import PodSpec
from asyncsched.api.meta import Int32, ObjectMeta

__all__ = [
    "DependsOn",
    "Job",
    "JobCondition",
    "JobSpec",
    "JobState",
    "JobStatus",
    "LifecyclePolicy",
    "NetworkTopologySpec",
    "TaskSpec",
    "TaskState",
    "VolumeSpec",
    "template_spec",
]


class LifecyclePolicy(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    action: str = ""
    event: str = ""
    events: list[str] = []
    exit_code: Int32 | None = None
    timeout: str | None = None
    """A Go duration (``90s``, ``5m``): the action waits this long after the event."""


class DependsOn(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    name: list[str] = []
    iteration: str = ""
    """``any`` or ``all`` (the default)."""


class NetworkTopologySpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    mode: str = ""
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""


class VolumeSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    mount_path: str = ""
    volume_claim_name: str = ""
    volume_claim: dict[str, Any] | None = None


class TaskSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    name: str = ""
    replicas: Int32 = 0
    min_available: Int32 | None = None
    template: dict[str, Any] = {}
    """The PodTemplateSpec exactly as written: ``{"metadata": ..., "spec": ...}``."""
    policies: list[LifecyclePolicy] = []
    topology_policy: str = ""
    max_retry: Int32 = 0
    depends_on: DependsOn | None = None
    partition_policy: dict[str, Any] | None = None


class JobSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    scheduler_name: str = ""
    min_available: Int32 = 0
    volumes: list[VolumeSpec] = []
    tasks: list[TaskSpec] = []
    policies: list[LifecyclePolicy] = []
    plugins: dict[str, list[str]] = {}
    running_estimate: str | None = None
    queue: str = ""
    max_retry: Int32 = 3
    ttl_seconds_after_finished: Int32 | None = None
    priority_class_name: str = ""
    min_success: Int32 | None = None
    network_topology: NetworkTopologySpec | None = None


class JobState(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    phase: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class TaskState(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    phase: dict[str, int] = {}


class JobCondition(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    status: str = ""
    last_transition_time: str | None = None


class JobStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    state: JobState = msgspec.field(default_factory=JobState)
    min_available: int = 0
    task_status_count: dict[str, TaskState] = {}
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    running_duration: str | None = None
    controlled_resources: dict[str, str] = {}
    conditions: list[JobCondition] = []


class Job(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Job", gc=False
):
    api_version: str = "batch.volcano.sh/v1alpha1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)
    status: JobStatus = msgspec.field(default_factory=JobStatus)


def template_spec(task: TaskSpec) -> PodSpec:
    """The scheduling view of a task's pod template (requests, hostname-free fields)."""
    return msgspec.convert(task.template.get("spec") or {}, PodSpec)
