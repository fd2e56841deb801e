"""PodGroups for pods that no Volcano Job owns, so the gang scheduler can schedule them.

Volcano names the group after the pod's controlling owner (one PodGroup per
ReplicaSet, StatefulSet or batch/v1 Job, all its pods sharing it) or, for a
bare pod, after the pod itself: ``podgroup-<uid>``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any

from asyncsched.api.core import Pod
from asyncsched.api.meta import ObjectMeta, OwnerReference
from asyncsched.api.quantity import format_units
from asyncsched.api.volcano import GROUP_NAME_ANNOTATION, PodGroup, PodGroupSpec, PodGroupStatus
from asyncsched.model.task import pod_requests

__all__ = [
    "GROUP_MIN_MEMBER_ANNOTATION",
    "PlainPodGroup",
    "podgroup_for_pod",
    "podgroup_name_for_pod",
]

GROUP_MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
NETWORK_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER = "volcano.sh/network-topology-highest-tier"
_INHERITED_PREFIX = "volcano.sh/"
_COPIED_ANNOTATIONS = (
    "volcano.sh/preemptable",
    "volcano.sh/cooldown-time",
    "volcano.sh/revocable-zone",
)
_COPIED_LABELS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")


@dataclass(frozen=True)
class PlainPodGroup:
    """Create ``podgroup`` unless it exists, then merge ``pod_annotations`` into the pod."""

    podgroup: PodGroup
    pod_annotations: dict[str, str]


def _controller(pod: Pod) -> OwnerReference | None:
    return next((r for r in pod.metadata.owner_references if r.controller), None)


def podgroup_name_for_pod(pod: Pod) -> str:
    owner = _controller(pod)
    return f"podgroup-{owner.uid if owner is not None else pod.metadata.uid}"


def _min_member(owner_annotations: Mapping[str, str]) -> int:
    try:
        value = int(owner_annotations.get(GROUP_MIN_MEMBER_ANNOTATION, "1"))
    except ValueError:
        return 1
    return value if value >= 0 else 1


def _network_topology(notes: Mapping[str, str]) -> dict[str, Any] | None:
    if NETWORK_TOPOLOGY_MODE not in notes and NETWORK_TOPOLOGY_TIER not in notes:
        return None
    mode = notes.get(NETWORK_TOPOLOGY_MODE, "hard").lower()
    out: dict[str, Any] = {"mode": mode if mode in ("hard", "soft") else "hard"}
    tier = notes.get(NETWORK_TOPOLOGY_TIER, "")
    if tier.lstrip("-").isdigit():
        out["highestTierAllowed"] = int(tier)
    return out


def podgroup_for_pod(
    pod: Pod,
    scheduler_names: Container[str],
    *,
    owner_annotations: Mapping[str, str] | None = None,
) -> PlainPodGroup | None:
    """The PodGroup a plain pod needs, or None (another scheduler's pod, or already grouped).

    ``owner_annotations`` are the annotations of the pod's controlling owner
    (ReplicaSet, StatefulSet...): ``scheduling.volcano.sh/group-min-member``
    sets minMember and ``volcano.sh/*`` keys are inherited, as Volcano does by default.
    """
    meta = pod.metadata
    if pod.spec.scheduler_name not in scheduler_names or meta.annotations.get(
        GROUP_NAME_ANNOTATION
    ):
        return None
    owners = dict(owner_annotations or {})
    name = podgroup_name_for_pod(pod)
    min_member = _min_member(owners)
    _, init = pod_requests(pod)
    resources: dict[str, str | int | float] = {
        k: format_units(k, v * min_member) for k, v in sorted(init.items()) if v
    }
    owner_refs = (
        list(meta.owner_references)
        if _controller(pod) is not None
        else [
            OwnerReference(
                api_version="v1",
                kind="Pod",
                name=meta.name,
                uid=meta.uid,
                controller=True,
                block_owner_deletion=True,
            )
        ]
    )
    annotations = {k: v for k, v in owners.items() if k.startswith(_INHERITED_PREFIX)}
    annotations.update(
        {k: meta.annotations[k] for k in _COPIED_ANNOTATIONS if k in meta.annotations}
    )
    for key in ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"):
        if key in meta.annotations:
            annotations[key] = meta.annotations[key]
            break
    podgroup = PodGroup(
        metadata=ObjectMeta(
            name=name,
            namespace=meta.namespace,
            owner_references=owner_refs,
            annotations=annotations,
            labels={k: meta.labels[k] for k in _COPIED_LABELS if k in meta.labels},
        ),
        spec=PodGroupSpec(
            min_member=min_member,
            queue=meta.annotations.get(QUEUE_NAME_ANNOTATION, "default"),
            priority_class_name=pod.spec.priority_class_name,
            min_resources=resources,
            network_topology=_network_topology(meta.annotations),
        ),
        status=PodGroupStatus(phase="Pending"),
    )
    return PlainPodGroup(podgroup, {GROUP_NAME_ANNOTATION: name})
