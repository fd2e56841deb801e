"""The Eviction API of the simulated API server: what it refuses, and the budget it spends.

Kubernetes' ``pods/eviction`` subresource, over the store:

- a pod that has not started, has ended or is being deleted goes without asking
  any PodDisruptionBudget;
- a pod that two budgets select is refused (the subresource does not support it);
- a pod that is not Ready goes without spending its budget when the budget's
  ``unhealthyPodEvictionPolicy`` is AlwaysAllow, or when the application is healthy
  (``currentHealthy >= desiredHealthy > 0``);
- otherwise its budget must have been seen by the disruption controller since its
  last change and allow a disruption; the eviction spends one and lists the pod in
  ``status.disruptedPods`` until the controller sees it gone.
"""

from __future__ import annotations

import msgspec

from asyncsched.api import Pod
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.backends.sim.store import ObjectStore
from asyncsched.controllers.disruption import DISRUPTION_ALLOWED, budget_pods, pod_ready
from asyncsched.model.timestamps import format_timestamp

__all__ = ["EVICTION_API", "MAX_DISRUPTED_PODS", "spend_budget"]

EVICTION_API = "eviction-api"
"""The actor of the budget updates an eviction makes."""
MAX_DISRUPTED_PODS = 2000
_REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def spend_budget(store: ObjectStore, pod: Pod, now: float) -> str:
    """Ask the Eviction API to let ``pod`` go at ``now`` (seconds since the epoch): '' when
    it may be deleted (its budget, if it spent one, updated), else why it is refused."""
    if pod.status.phase in ("Pending", "Succeeded", "Failed") or pod.metadata.deletion_timestamp:
        return ""
    namespace = pod.metadata.namespace
    in_namespace = sorted(
        (key, pdb)
        for key, pdb in store.list(PodDisruptionBudget).items()
        if pdb.metadata.namespace == namespace
    )
    budgets = [pdb for _, pdb in in_namespace if budget_pods(pdb, [pod])]
    if len(budgets) > 1:
        return (
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support."
        )
    if not budgets:
        return ""
    (pdb,) = budgets
    status = pdb.status
    if not pod_ready(pod):
        if pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow":
            return ""
        if status.current_healthy >= status.desired_healthy > 0:
            return ""
    name = pdb.metadata.name
    if status.observed_generation < pdb.metadata.generation:
        return f"{_REFUSED} The disruption budget {name} is still being processed by the server."
    if status.disruptions_allowed < 0:
        return f"poddisruptionbudget {name!r} is forbidden: pdb disruptions allowed is negative"
    if len(status.disrupted_pods) > MAX_DISRUPTED_PODS:
        return (
            f"poddisruptionbudget {name!r} is forbidden: DisruptedPods map too big - too many "
            "evictions not confirmed by PDB controller"
        )
    if status.disruptions_allowed == 0:
        return (
            f"{_REFUSED} The disruption budget {name} needs {status.desired_healthy} healthy "
            f"pods and has {status.current_healthy} currently"
        )
    _spend(store, pdb, pod.metadata.name, now)
    return ""


def _spend(store: ObjectStore, pdb: PodDisruptionBudget, pod: str, now: float) -> None:
    status = pdb.status
    disrupted = {**status.disrupted_pods, pod: format_timestamp(now)}
    allowed = status.disruptions_allowed - 1
    conditions = status.conditions
    if allowed == 0:
        conditions = [
            msgspec.structs.replace(
                c,
                status="False",
                reason="InsufficientPods",
                last_transition_time=format_timestamp(now),
            )
            if c.type == DISRUPTION_ALLOWED and c.status != "False"
            else c
            for c in conditions
        ]
    status = msgspec.structs.replace(
        status, disruptions_allowed=allowed, disrupted_pods=disrupted, conditions=conditions
    )
    store.update(msgspec.structs.replace(pdb, status=status), actor=EVICTION_API)
