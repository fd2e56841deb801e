"""PodGroups for plain pods, named and shaped as Volcano's podgroup controller makes them."""

from __future__ import annotations

from asyncsched.api import GROUP_NAME_ANNOTATION, Pod
from asyncsched.api.core import Container, PodSpec, ResourceRequirements
from asyncsched.api.meta import ObjectMeta, OwnerReference
from asyncsched.controllers.podgroup import podgroup_for_pod

OURS = ("volcano", "asyncsched")


def _pod(
    *,
    annotations: dict[str, str] | None = None,
    owner: OwnerReference | None = None,
    scheduler: str = "volcano",
) -> Pod:
    return Pod(
        metadata=ObjectMeta(
            name="web-1",
            namespace="apps",
            uid="pod-uid",
            annotations=dict(annotations or {}),
            owner_references=[owner] if owner else [],
        ),
        spec=PodSpec(
            scheduler_name=scheduler,
            priority_class_name="high",
            containers=[
                Container(
                    name="c",
                    resources=ResourceRequirements(requests={"cpu": "500m", "memory": "1Gi"}),
                )
            ],
        ),
    )


def test_bare_pod_gets_its_own_group() -> None:
    found = podgroup_for_pod(_pod(annotations={"scheduling.volcano.sh/queue-name": "team-a"}), OURS)
    assert found is not None
    pg = found.podgroup
    assert pg.metadata.name == "podgroup-pod-uid"
    assert pg.metadata.namespace == "apps"
    assert pg.spec.min_member == 1
    assert pg.spec.queue == "team-a"
    assert pg.spec.priority_class_name == "high"
    assert pg.spec.min_resources == {"cpu": "500m", "memory": "1Gi"}
    owner = pg.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        "web-1",
        "pod-uid",
        True,
    )
    assert found.pod_annotations == {GROUP_NAME_ANNOTATION: "podgroup-pod-uid"}


def test_replicaset_pods_share_the_owner_group_with_min_member_from_owner() -> None:
    rs = OwnerReference(
        api_version="apps/v1", kind="ReplicaSet", name="web-abc", uid="rs-uid", controller=True
    )
    found = podgroup_for_pod(
        _pod(owner=rs),
        OURS,
        owner_annotations={
            "scheduling.volcano.sh/group-min-member": "2",
            "volcano.sh/preemptable": "true",
            "other/key": "x",
        },
    )
    assert found is not None
    assert found.podgroup.metadata.name == "podgroup-rs-uid"
    assert found.podgroup.spec.min_member == 2
    assert found.podgroup.spec.min_resources == {"cpu": "1", "memory": "2Gi"}
    assert found.podgroup.metadata.owner_references == [rs]
    assert found.podgroup.metadata.annotations == {"volcano.sh/preemptable": "true"}
    assert found.podgroup.spec.queue == "default"


def test_grouped_or_foreign_pods_are_left_alone() -> None:
    assert podgroup_for_pod(_pod(annotations={GROUP_NAME_ANNOTATION: "pg"}), OURS) is None
    assert podgroup_for_pod(_pod(scheduler="default-scheduler"), OURS) is None


def test_network_topology_from_pod_annotations() -> None:
    found = podgroup_for_pod(
        _pod(
            annotations={
                "volcano.sh/network-topology-mode": "soft",
                "volcano.sh/network-topology-highest-tier": "2",
            }
        ),
        OURS,
    )
    assert found is not None
    assert found.podgroup.spec.network_topology == {"mode": "soft", "highestTierAllowed": 2}
