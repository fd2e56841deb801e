"""What an object asks for that the run will not do as written: one warning line each.

Valid input is never refused for these, and never silently ignored either: a
task's ``partitionPolicy.networkTopology`` (sub-job placement) is read but not
enforced yet, and a Queue of weight 0 gets weight 1, as Volcano's mutating
webhook gives it.
"""

from __future__ import annotations

import msgspec

from asyncsched.api import Job, Queue
from asyncsched.backends.sim.objects import SimObject

__all__ = ["caveats", "with_volcano_defaults"]

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
    """``obj`` as Volcano's mutating webhooks would store it (so far: a Queue's weight)."""
    if isinstance(obj, Queue) and obj.spec.weight == 0:
        return msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, weight=1))
    return obj


def _topology_fields(obj: SimObject) -> list[str]:
    """Where ``obj`` asks for network-topology placement that is not enforced yet."""
    if isinstance(obj, Job):
        return [
            f"spec.tasks[{i}].partitionPolicy.networkTopology"
            for i, task in enumerate(obj.spec.tasks)
            if (task.partition_policy or {}).get("networkTopology")
        ]
    return []
