"""Kubernetes' disruption controller, in the simulator: every PodDisruptionBudget's status
kept current as pods come, become ready, end and go.

The status is computed by ``asyncsched.controllers.disruption``; this shell
says which budgets to compute again (those of a namespace where a pod, a
ReplicaSet or a Deployment changed, and budgets that changed) and what the
pods' controllers want (a Deployment's or a ReplicaSet's replicas; a Volcano
Job has no scale, as on a real cluster). Like the API server, the store gives a
new budget generation 1 and no status.

``disruptedPods`` entries would expire after two minutes; here evicted pods are
deleted at once, so the next sync drops them and none waits that long.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from asyncsched.api import Pod
from asyncsched.api.meta import OwnerReference
from asyncsched.api.policy import PodDisruptionBudget, PodDisruptionBudgetStatus
from asyncsched.backends.sim.objects import Deployment, ReplicaSet
from asyncsched.backends.sim.store import EPOCH, ObjectStore, WatchEvent
from asyncsched.backends.sim.workqueue import WorkQueue
from asyncsched.controllers.disruption import budget_pods, budget_status

__all__ = ["DisruptionController", "admit_budget"]

DISRUPTION_CONTROLLER = "disruption-controller"
_APPS = ("apps", "extensions")


def admit_budget(pdb: PodDisruptionBudget) -> PodDisruptionBudget:
    """The API server's create strategy: generation 1, and no status (only the controller
    and the Eviction API write it)."""
    meta = msgspec.structs.replace(pdb.metadata, generation=1)
    return msgspec.structs.replace(pdb, metadata=meta, status=PodDisruptionBudgetStatus())


class DisruptionController:
    def __init__(self, store: ObjectStore, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock
        self._pods: dict[str, dict[str, None]] = {}
        """Namespace -> keys of its pods."""
        self._budgets: dict[str, dict[str, None]] = {}
        """Namespace -> keys of its budgets."""
        self._dirty = WorkQueue()
        """Namespaces whose budgets to compute again."""
        store.admit(PodDisruptionBudget, admit_budget)
        store.watch((Pod,), self._pod)
        store.watch((PodDisruptionBudget,), self._budget)
        store.watch((ReplicaSet, Deployment), self._workload)

    def _pod(self, change: WatchEvent) -> None:
        namespace = change.obj.metadata.namespace
        pods = self._pods.setdefault(namespace, {})
        if change.event == "DELETED":
            pods.pop(change.key, None)
        else:
            pods[change.key] = None
        if namespace in self._budgets:
            self._dirty.add(namespace)

    def _budget(self, change: WatchEvent) -> None:
        namespace = change.obj.metadata.namespace
        budgets = self._budgets.setdefault(namespace, {})
        if change.event == "DELETED":
            budgets.pop(change.key, None)
            if not budgets:
                del self._budgets[namespace]
            return
        budgets[change.key] = None
        if change.actor != DISRUPTION_CONTROLLER:
            self._dirty.add(namespace)

    def _workload(self, change: WatchEvent) -> None:
        namespace = change.obj.metadata.namespace
        if namespace in self._budgets:
            self._dirty.add(namespace)

    def sync(self) -> bool:
        if not self._dirty:
            return False
        namespaces = self._dirty.take()
        now = EPOCH + self.clock()
        for namespace in namespaces:
            pods = [
                pod
                for key in self._pods.get(namespace, {})
                if (pod := self.store.get(Pod, key)) is not None
            ]
            for key in sorted(self._budgets.get(namespace, {})):
                pdb = self.store.get(PodDisruptionBudget, key)
                if pdb is not None:
                    self._sync(pdb, pods, now)
        return True

    def _sync(self, pdb: PodDisruptionBudget, pods: list[Pod], now: float) -> None:
        status = budget_status(pdb, budget_pods(pdb, pods), self._scale_of, now)
        if status != pdb.status:
            self.store.update(
                msgspec.structs.replace(pdb, status=status), actor=DISRUPTION_CONTROLLER
            )

    def _scale_of(self, namespace: str, ref: OwnerReference) -> tuple[str, int] | str | None:
        """The controller finders of the disruption controller, over what the simulator
        runs: a ReplicaSet counts its Deployment's replicas if a Deployment controls it,
        else its own; anything else has no scale subresource here."""
        group = ref.api_version.split("/")[0] if "/" in ref.api_version else ""
        if ref.kind == "ReplicaSet" and group in _APPS:
            rs = self.store.get(ReplicaSet, f"{namespace}/{ref.name}")
            if rs is None or rs.metadata.uid != ref.uid:
                return None
            owner = next((r for r in rs.metadata.owner_references if r.controller), None)
            if owner is not None and owner.kind == "Deployment":
                deploy = self.store.get(Deployment, f"{namespace}/{owner.name}")
                if deploy is not None and deploy.metadata.uid == owner.uid:
                    return deploy.metadata.uid, deploy.spec.replicas
            return rs.metadata.uid, rs.spec.replicas
        if ref.kind == "Deployment" and group in _APPS:
            deploy = self.store.get(Deployment, f"{namespace}/{ref.name}")
            if deploy is None or deploy.metadata.uid != ref.uid:
                return None
            return deploy.metadata.uid, deploy.spec.replicas
        resource = f"{ref.kind.lower()}s.{group}" if group else f"{ref.kind.lower()}s"
        return f"{resource} does not implement the scale subresource"
