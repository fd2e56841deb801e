"""Volcano's batch.volcano.sh/v1alpha1 CronJob: a Volcano Job made on a cron schedule.

Field names follow Volcano's CRD (itself shaped as Kubernetes' batch/v1 CronJob) so
users' YAML decodes as is. The defaults are the CRD's, which the API server fills in;
the simulator fills them in the same way when it reads a file.
"""

from __future__ import annotations

import msgspec

from asyncsched.api.batch import JobSpec
from asyncsched.api.meta import Int32, ObjectMeta

__all__ = [
    "CONCURRENCY_POLICIES",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "CronJob",
    "CronJobSpec",
    "CronJobStatus",
    "JobReference",
    "JobTemplateSpec",
]

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
SCHEDULED_TIMESTAMP_ANNOTATION = "volcano.sh/cronjob-scheduled-timestamp"
"""On each Job made: the scheduled time it was made for, RFC 3339 in the CronJob's zone."""


class JobTemplateSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


class CronJobSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    schedule: str = ""
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str = "Allow"
    suspend: bool | None = None
    job_template: JobTemplateSpec = msgspec.field(default_factory=JobTemplateSpec)
    successful_jobs_history_limit: Int32 | None = None
    failed_jobs_history_limit: Int32 | None = None


class JobReference(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """A core/v1 ObjectReference to one Job the CronJob made."""

    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    resource_version: str = ""


class CronJobStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    active: list[JobReference] = []
    last_schedule_time: str | None = None
    last_successful_time: str | None = None


class CronJob(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="CronJob", gc=False
):
    api_version: str = "batch.volcano.sh/v1alpha1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CronJobSpec = msgspec.field(default_factory=CronJobSpec)
    status: CronJobStatus = msgspec.field(default_factory=CronJobStatus)
