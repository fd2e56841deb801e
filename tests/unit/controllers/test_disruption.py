"""A PodDisruptionBudget's status, as Kubernetes' disruption controller computes it."""

from __future__ import annotations

import msgspec

from asyncsched.api import Pod
from asyncsched.api.meta import Condition, OwnerReference
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.controllers.disruption import budget_pods, budget_status
from asyncsched.model.timestamps import format_timestamp
from tests.builders import disruption_budget, pod

NOW = 1_767_225_600.0 + 1000
WEB = {"app": "web"}
RS = OwnerReference(
    api_version="apps/v1", kind="ReplicaSet", name="web-1", uid="rs", controller=True
)
JOB = OwnerReference(
    api_version="batch.volcano.sh/v1alpha1", kind="Job", name="train", uid="job", controller=True
)


def web(
    name: str,
    *,
    ready: bool = True,
    owner: OwnerReference | None = None,
    namespace: str = "shop",
    **extra: str,
) -> Pod:
    made = pod(name, namespace=namespace, node_name="n1", phase="Running", labels=WEB)
    conditions = [Condition(type="Ready", status="True" if ready else "False")]
    meta = made.metadata
    if owner is not None:
        meta = msgspec.structs.replace(meta, owner_references=[owner])
    if extra:
        meta = msgspec.structs.replace(meta, **extra)
    status = msgspec.structs.replace(made.status, conditions=conditions)
    return msgspec.structs.replace(made, metadata=meta, status=status)


def replicas(namespace: str, ref: OwnerReference) -> tuple[str, int] | str | None:
    """A ReplicaSet that wants 4 replicas; a Volcano Job, which has no scale."""
    if ref.kind == "ReplicaSet":
        return "deployment-uid", 4
    return "jobs.batch.volcano.sh does not implement the scale subresource"


def status_of(pdb: PodDisruptionBudget, pods: list[Pod]) -> tuple[int, int, int, int]:
    found = budget_status(pdb, budget_pods(pdb, pods), replicas, NOW)
    return (
        found.disruptions_allowed,
        found.current_healthy,
        found.desired_healthy,
        found.expected_pods,
    )


def test_min_available_counts_the_ready_pods_the_selector_picks() -> None:
    pdb = disruption_budget("web", namespace="shop", match=WEB, min_available=2)
    pods = [
        web("a"),
        web("b"),
        web("c"),
        web("starting", ready=False),
        web("elsewhere", namespace="lab"),
    ]
    assert status_of(pdb, pods) == (1, 3, 2, 4)


def test_pods_being_deleted_or_just_evicted_are_not_healthy() -> None:
    evicted_at = format_timestamp(NOW - 30)
    pdb = disruption_budget("web", namespace="shop", match=WEB, min_available=1)
    pdb = msgspec.structs.replace(
        pdb, status=msgspec.structs.replace(pdb.status, disrupted_pods={"b": evicted_at})
    )
    pods = [web("a"), web("b"), web("c", deletion_timestamp=format_timestamp(NOW))]
    found = budget_status(pdb, budget_pods(pdb, pods), replicas, NOW)
    assert (found.current_healthy, found.disruptions_allowed) == (1, 0)
    assert found.disrupted_pods == {"b": evicted_at}
    # Two minutes on, an eviction that never deleted its pod is forgotten.
    later = budget_status(pdb, budget_pods(pdb, pods), replicas, NOW + 200)
    assert (later.current_healthy, later.disruptions_allowed, later.disrupted_pods) == (2, 1, {})


def test_percentages_and_max_unavailable_count_the_controllers_replicas_rounding_up() -> None:
    pods = [web("a", owner=RS), web("b", owner=RS), web("c", owner=RS), web("bare")]
    half = disruption_budget("web", namespace="shop", match=WEB, min_available="50%")
    assert status_of(half, pods) == (2, 4, 2, 4)
    most = disruption_budget("web", namespace="shop", match=WEB, min_available="51%")
    assert status_of(most, pods) == (1, 4, 3, 4)
    one = disruption_budget("web", namespace="shop", match=WEB, max_unavailable=1)
    assert status_of(one, pods) == (1, 4, 3, 4)
    quarter = disruption_budget("web", namespace="shop", match=WEB, max_unavailable="30%")
    assert status_of(quarter, pods) == (2, 4, 2, 4)


def test_a_budget_expecting_no_pods_allows_no_disruption() -> None:
    pdb = disruption_budget("web", namespace="shop", match=WEB, max_unavailable=1)
    assert status_of(pdb, [web("bare-a"), web("bare-b")]) == (0, 2, 0, 0)
    assert status_of(disruption_budget("none", namespace="shop", match=WEB), [web("a")]) == (
        0,
        1,
        0,
        0,
    )


def test_a_controller_without_a_scale_makes_the_sync_fail_safe() -> None:
    pdb = disruption_budget("web", namespace="shop", match=WEB, max_unavailable="50%", allowed=3)
    found = budget_status(pdb, [web("a", owner=JOB), web("b", owner=JOB)], replicas, NOW)
    assert found.disruptions_allowed == 0
    (condition,) = found.conditions
    assert (condition.status, condition.reason) == ("False", "SyncFailed")
    assert "does not implement the scale subresource" in condition.message


def test_the_condition_says_whether_a_disruption_is_allowed() -> None:
    pdb = disruption_budget("web", namespace="shop", match=WEB, min_available=1)
    found = budget_status(pdb, [web("a"), web("b")], replicas, NOW)
    (condition,) = found.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
    )
    again = msgspec.structs.replace(pdb, status=found)
    assert budget_status(again, [web("a"), web("b")], replicas, NOW + 50) == found
