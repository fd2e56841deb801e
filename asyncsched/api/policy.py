"""policy/v1 PodDisruptionBudget: how many of an application's pods may be disrupted at once.

The scheduler reads ``status.disruptionsAllowed`` and ``status.disruptedPods``
(the disruption controller's and the Eviction API's bookkeeping) to keep
preempt and reclaim from choosing victims the Eviction API would refuse. The
checks are the API server's (``ValidatePodDisruptionBudgetSpec``), and
``scaled`` is its rounding of a percentage (``GetScaledValueFromIntOrPercent``,
rounding up).
"""

from __future__ import annotations

import re

import msgspec

from asyncsched.api.meta import Condition, Int32, ObjectMeta
from asyncsched.api.selectors import LabelSelector, selector_problems

__all__ = [
    "EVICTION_POLICIES",
    "IntOrPercent",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "pdb_problems",
    "scaled",
]

IntOrPercent = Int32 | str
"""An ``IntOrString`` field: a count, or a percentage written ``"N%"``."""
EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
"""``spec.unhealthyPodEvictionPolicy``: may a pod that is not ready be evicted when the
budget is short (IfHealthyBudget, the default: only if the application is healthy)."""
_PERCENT = re.compile(r"[0-9]+%\Z")


class PodDisruptionBudgetSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    selector: LabelSelector | None = None
    """None selects no pod; an empty selector every pod of the namespace (policy/v1)."""
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    observed_generation: int = 0
    disrupted_pods: dict[str, str] = {}
    """Pods (by name) whose eviction the API server let through and the disruption
    controller has not yet seen go, with when."""
    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0
    conditions: list[Condition] = []


class PodDisruptionBudget(
    msgspec.Struct,
    rename="camel",
    omit_defaults=True,
    tag_field="kind",
    tag="PodDisruptionBudget",
    gc=False,
):
    api_version: str = "policy/v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


def pdb_problems(pdb: PodDisruptionBudget) -> list[str]:
    """What the API server refuses in a PodDisruptionBudget's spec, each naming its field."""
    spec = pdb.spec
    problems = []
    if spec.min_available is not None and spec.max_unavailable is not None:
        problems.append("spec: minAvailable and maxUnavailable cannot be both set")
    for field, value in (
        ("spec.minAvailable", spec.min_available),
        ("spec.maxUnavailable", spec.max_unavailable),
    ):
        if value is not None:
            problems += _int_or_percent_problems(value, field)
    if spec.selector is not None:
        problems += selector_problems(spec.selector, "spec.selector")
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in EVICTION_POLICIES:
        problems.append(
            f"spec.unhealthyPodEvictionPolicy {policy!r} must be {' or '.join(EVICTION_POLICIES)}"
        )
    return problems


def _int_or_percent_problems(value: int | str, field: str) -> list[str]:
    if isinstance(value, int):
        return [f"{field} {value} must be greater than or equal to 0"] if value < 0 else []
    if not _PERCENT.match(value):
        return [f"{field} {value!r} must be a number or a percentage such as '10%'"]
    if int(value[:-1]) > 100:
        return [f"{field} {value!r} must not be greater than 100%"]
    return []


def scaled(value: int | str, total: int) -> int:
    """A count, or a percentage of ``total`` rounded up (as the disruption controller
    rounds both minAvailable and maxUnavailable)."""
    if isinstance(value, int):
        return value
    return -(-int(value[:-1]) * total // 100)
