"""What an object asks for that the run will not do as written: one warning line each.

Valid input is never refused for these, and never silently ignored either: a
task's ``partitionPolicy.networkTopology`` (sub-job placement) is read but not
enforced yet, and a Queue of weight 0 gets weight 1, as Volcano's mutating
webhook gives it.
"""

from __future__ import annotations

import msgspec

from asyncsched.api import Job, Queue
from asyncsched.api.cronjob import CronJob
from asyncsched.backends.sim.objects import SimObject
from asyncsched.controllers.cron import template_job

__all__ = ["caveats", "with_volcano_defaults"]

SUCCESSFUL_JOBS_KEPT = 3
FAILED_JOBS_KEPT = 1
"""The CronJob CRD's defaults for its history limits, which the API server fills in."""
_NOT_ENFORCED = (
    "network-topology placement of sub-jobs (partitions) is not enforced yet: only the "
    "job-level networkTopology is; the partitions' pods may be placed anywhere within it"
)


def caveats(obj: SimObject) -> list[str]:
    """The warnings ``obj`` deserves, each naming the field (the caller adds file and object)."""
    fields = _topology_fields(obj)
    found = [f"{', '.join(fields)}: {_NOT_ENFORCED}"] if fields else []
    if isinstance(obj, Queue) and obj.spec.weight == 0:
        found.append("spec.weight 0 is taken as 1, as Volcano's mutating webhook does")
    return found


def with_volcano_defaults(obj: SimObject) -> SimObject:
    """``obj`` as Volcano's mutating webhooks and CRD defaults would store it (so far: a
    Queue's weight, a CronJob's history limits)."""
    if isinstance(obj, Queue) and obj.spec.weight == 0:
        return msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, weight=1))
    if isinstance(obj, CronJob):
        spec = obj.spec
        kept = spec.successful_jobs_history_limit
        failed = spec.failed_jobs_history_limit
        return msgspec.structs.replace(obj, spec=msgspec.structs.replace(
            spec,
            successful_jobs_history_limit=SUCCESSFUL_JOBS_KEPT if kept is None else kept,
            failed_jobs_history_limit=FAILED_JOBS_KEPT if failed is None else failed,
        ))  # fmt: skip
    return obj


def _topology_fields(obj: SimObject) -> list[str]:
    """Where ``obj`` asks for network-topology placement that is not enforced yet."""
    if isinstance(obj, CronJob):
        return [f"spec.jobTemplate.{f}" for f in _topology_fields(template_job(obj))]
    if isinstance(obj, Job):
        return [
            f"spec.tasks[{i}].partitionPolicy.networkTopology"
            for i, task in enumerate(obj.spec.tasks)
            if (task.partition_policy or {}).get("networkTopology")
        ]
    return []
