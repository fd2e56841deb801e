"""The status of a PodDisruptionBudget, as Kubernetes' disruption controller computes it.

``status.disruptionsAllowed`` is what the Eviction API spends: the budget's
healthy pods less the pods it wants healthy, never below 0, and 0 while the
budget expects no pods. The rules are those of
``pkg/controller/disruption`` (Kubernetes):

- the budget's pods are the pods of its namespace its selector selects
  (policy/v1: an empty selector selects them all, a missing one none);
- healthy: not being deleted, not listed in ``disruptedPods`` (an eviction the
  API server let through less than two minutes ago) and Ready;
- ``minAvailable: N``: N pods wanted healthy, out of the pods there are;
- ``maxUnavailable`` or a percentage: out of the pods the budget's controllers
  (Deployments, ReplicaSets, StatefulSets...) want, their replicas summed, the
  percentage rounded up; pods no controller owns are not counted. A pod whose
  controller has no scale (a Volcano Job) makes the sync fail, and the
  controller's fail-safe then allows no disruption at all.

The shell says what it knows of controllers through ``ScaleOf``; everything here
is a pure function of the objects given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from asyncsched.api import Pod
from asyncsched.api.meta import Condition, OwnerReference
from asyncsched.api.policy import PodDisruptionBudget, PodDisruptionBudgetStatus, scaled
from asyncsched.api.selectors import Selector
from asyncsched.model.timestamps import format_timestamp, parse_timestamp

__all__ = [
    "DELETION_TIMEOUT",
    "DISRUPTION_ALLOWED",
    "ScaleOf",
    "budget_pods",
    "budget_status",
    "pod_ready",
]

DELETION_TIMEOUT = 120.0
"""Seconds an eviction stays in ``disruptedPods`` waiting for the pod to be deleted."""
DISRUPTION_ALLOWED = "DisruptionAllowed"

ScaleOf = Callable[[str, OwnerReference], "tuple[str, int] | str | None"]
"""(namespace, a pod's controller reference) -> (the uid of the controller whose replicas
count, its replicas); None when no such controller exists, or why its replicas cannot be
read (either makes the sync fail)."""


def pod_ready(pod: Pod) -> bool:
    """The pod's Ready condition is True (what the controller counts as healthy)."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def budget_pods(pdb: PodDisruptionBudget, pods: Sequence[Pod]) -> list[Pod]:
    """The pods of the budget's namespace that its selector selects."""
    selector = Selector.of(pdb.spec.selector)
    namespace = pdb.metadata.namespace
    return [
        p for p in pods if p.metadata.namespace == namespace and selector.matches(p.metadata.labels)
    ]


def budget_status(
    pdb: PodDisruptionBudget, pods: Sequence[Pod], scale_of: ScaleOf, now: float
) -> PodDisruptionBudgetStatus:
    """The status the disruption controller writes, ``pods`` being the budget's pods (see
    ``budget_pods``) and ``now`` the time in seconds since the epoch."""
    counted = _expected(pdb, pods, scale_of)
    if isinstance(counted, str):
        return _fail_safe(pdb, counted, now)
    expected, desired = counted
    disrupted = {}
    for pod in pods:
        when = pdb.status.disrupted_pods.get(pod.metadata.name)
        if (
            pod.metadata.deletion_timestamp is None
            and when is not None
            and parse_timestamp(when) + DELETION_TIMEOUT >= now
        ):
            disrupted[pod.metadata.name] = when
    healthy = sum(
        1
        for p in pods
        if p.metadata.deletion_timestamp is None
        and p.metadata.name not in disrupted
        and pod_ready(p)
    )
    allowed = healthy - desired if expected > 0 else 0
    return PodDisruptionBudgetStatus(
        observed_generation=pdb.metadata.generation,
        disrupted_pods=disrupted,
        disruptions_allowed=max(allowed, 0),
        current_healthy=healthy,
        desired_healthy=desired,
        expected_pods=expected,
        conditions=_allowed_condition(pdb, max(allowed, 0), now),
    )


def _expected(
    pdb: PodDisruptionBudget, pods: Sequence[Pod], scale_of: ScaleOf
) -> tuple[int, int] | str:
    """(expected pods, desired healthy), or why they cannot be told."""
    spec = pdb.spec
    if spec.max_unavailable is not None:
        expected = _expected_scale(pods, scale_of)
        if isinstance(expected, str):
            return expected
        return expected, max(expected - scaled(spec.max_unavailable, expected), 0)
    if isinstance(spec.min_available, int):
        return len(pods), spec.min_available
    if spec.min_available is not None:
        expected = _expected_scale(pods, scale_of)
        if isinstance(expected, str):
            return expected
        return expected, scaled(spec.min_available, expected)
    return 0, 0


def _expected_scale(pods: Sequence[Pod], scale_of: ScaleOf) -> int | str:
    """The replicas the pods' controllers want, each controller once; pods with none are
    left out (the controller warns of them and goes on)."""
    scales: dict[str, int] = {}
    for pod in pods:
        ref = next((r for r in pod.metadata.owner_references if r.controller), None)
        if ref is None or ref.uid in scales:
            continue
        found = scale_of(pod.metadata.namespace, ref)
        if found is None:
            return f"found no controllers for pod {pod.metadata.name!r}"
        if isinstance(found, str):
            return found
        scales[found[0]] = found[1]
    return sum(scales.values())


def _fail_safe(pdb: PodDisruptionBudget, why: str, now: float) -> PodDisruptionBudgetStatus:
    """What the controller writes when it cannot sync: no disruption allowed, and why."""
    condition = Condition(DISRUPTION_ALLOWED, "False", "SyncFailed", why)
    return PodDisruptionBudgetStatus(
        observed_generation=pdb.status.observed_generation,
        disrupted_pods=dict(pdb.status.disrupted_pods),
        disruptions_allowed=0,
        current_healthy=pdb.status.current_healthy,
        desired_healthy=pdb.status.desired_healthy,
        expected_pods=pdb.status.expected_pods,
        conditions=_with_condition(pdb, condition, now),
    )


def _allowed_condition(pdb: PodDisruptionBudget, allowed: int, now: float) -> list[Condition]:
    if allowed > 0:
        condition = Condition(DISRUPTION_ALLOWED, "True", "SufficientPods")
    else:
        condition = Condition(DISRUPTION_ALLOWED, "False", "InsufficientPods")
    return _with_condition(pdb, condition, now)


def _with_condition(pdb: PodDisruptionBudget, condition: Condition, now: float) -> list[Condition]:
    """The budget's conditions with ``condition`` set; its transition time moves only when
    its status does."""
    old = next((c for c in pdb.status.conditions if c.type == condition.type), None)
    when = old.last_transition_time if old is not None and old.status == condition.status else None
    condition.last_transition_time = when or format_timestamp(now)
    others = [c for c in pdb.status.conditions if c.type != condition.type]
    return [*others, condition]
