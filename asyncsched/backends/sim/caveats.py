"""What an object asks for that the run will not do as written: one warning line each.

Valid input is never refused for these, and never silently ignored either:
network-topology constraints are read but not enforced yet (placement ignores
HyperNodes for now), and a Queue of weight 0 gets weight 1, as Volcano's
mutating webhook gives it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api import Job, Pod, PodGroup, Queue
from asyncsched.backends.sim.fields import template_annotations
from asyncsched.backends.sim.objects import Deployment, SimObject
from asyncsched.controllers.podgroup import NETWORK_TOPOLOGY_MODE, NETWORK_TOPOLOGY_TIER

__all__ = ["caveats", "with_volcano_defaults"]

_NOT_ENFORCED = (
    "network-topology placement is not enforced yet: its pods may be placed on any nodes"
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
    """Where ``obj`` asks for network-topology-aware placement."""
    if isinstance(obj, Job):
        fields = ["spec.networkTopology"] if obj.spec.network_topology is not None else []
        for i, task in enumerate(obj.spec.tasks):
            policy = task.partition_policy or {}
            if policy.get("networkTopology"):
                fields.append(f"spec.tasks[{i}].partitionPolicy.networkTopology")
        return fields
    if isinstance(obj, PodGroup):
        return ["spec.networkTopology"] if obj.spec.network_topology is not None else []
    if isinstance(obj, Pod):
        return _annotation_fields(obj.metadata.annotations, "")
    if isinstance(obj, Deployment):
        notes = template_annotations(obj.spec.template)
        return _annotation_fields(notes, "spec.template.metadata: ")
    return []


def _annotation_fields(notes: dict[str, Any], at: str) -> list[str]:
    keys = [k for k in (NETWORK_TOPOLOGY_MODE, NETWORK_TOPOLOGY_TIER) if k in notes]
    return [f"{at}annotation {' and '.join(keys)}"] if keys else []
