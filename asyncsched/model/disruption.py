"""DisruptionBudget: a PodDisruptionBudget as the scheduler sees it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.selectors import Selector

__all__ = ["DisruptionBudget"]


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """Which pods a budget guards and how many of them may be disrupted now. Immutable:
    snapshots share it, and a plugin spends its budget on a count of its own."""

    namespace: str
    name: str
    selector: Selector
    allowed: int
    """``status.disruptionsAllowed`` as last seen."""
    disrupted: frozenset[str]
    """``status.disruptedPods``: names of pods whose eviction the API server already let
    through, counted in ``allowed`` before the disruption controller sees them go."""

    @classmethod
    def of(cls, pdb: PodDisruptionBudget) -> DisruptionBudget:
        meta, status = pdb.metadata, pdb.status
        return cls(
            namespace=meta.namespace,
            name=meta.name,
            selector=Selector.of(pdb.spec.selector),
            allowed=status.disruptions_allowed,
            disrupted=frozenset(status.disrupted_pods),
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def guards(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod of ``namespace`` with ``labels`` is one of the budget's pods, as the
        Eviction API decides it (policy/v1: an empty selector takes every pod)."""
        return namespace == self.namespace and self.selector.matches(labels)
