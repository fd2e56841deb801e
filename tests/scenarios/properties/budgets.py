"""Invariants of PodDisruptionBudgets, checked from the ``evicted`` and ``refused`` events.

The simulator is the cluster: its disruption controller keeps each budget's status and
its Eviction API refuses what a budget forbids. What a budget allows is worked out here
again from the budgets' specs and the event stream, by Kubernetes' rules and without the
scheduler's or the simulator's code: a budget guards the pods of its namespace its
selector selects (an empty selector all of them, a missing one none); its healthy pods
are those that started and have not ended; it wants ``minAvailable`` of them healthy,
or, for a percentage or ``maxUnavailable``, that share (rounded up) of the replicas
their controllers want (pods without a controller left out); a budget that counts on
a controller without a replica count (a Volcano Job), or that expects no pod, allows no
disruption. The Eviction API evicts no pod two budgets guard.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.scenarios.properties.invariants import Invariant, describe
from tests.scenarios.properties.ledger import REMOVES, Ledger, PodKey
from tests.scenarios.properties.world import BudgetFacts

__all__ = ["EvictionKeepsBudgets", "NoEvictionRefused", "guards", "wanted_healthy"]


def guards(budget: BudgetFacts, namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether the budget's selector takes a pod of ``namespace`` with ``labels``."""
    if budget.namespace != namespace or budget.selector is None:
        return False
    for key, value in (budget.selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in budget.selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        has = key in labels
        if operator == "In" and not (has and labels[key] in values):
            return False
        if operator == "NotIn" and has and labels[key] in values:
            return False
        if operator == "Exists" and not has:
            return False
        if operator == "DoesNotExist" and has:
            return False
    return True


def _share(value: int | str, total: int) -> int:
    if isinstance(value, int):
        return value
    percent = int(value.rstrip("%"))
    return (percent * total + 99) // 100


def wanted_healthy(budget: BudgetFacts, pods: list[PodKey], ledger: Ledger) -> int | None:
    """How many of the budget's pods (``pods``: every live one it guards) it wants healthy;
    None when it allows no disruption whatever."""
    if budget.max_unavailable is None and not isinstance(budget.min_available, str):
        if budget.min_available is None or not pods:
            return None
        return budget.min_available
    wanted: dict[str, int] = {}
    for key in pods:
        facts = ledger.pods[key].facts
        owner = facts.controller if facts is not None else None
        if owner is None:
            continue
        kind, name, uid = owner
        replicas = ledger.world.replicas(key[0], kind, name, uid)
        if replicas is None:
            return None
        wanted[f"{kind}/{name}"] = replicas
    expected = sum(wanted.values())
    if expected <= 0:
        return None
    if budget.max_unavailable is not None:
        return max(expected - _share(budget.max_unavailable, expected), 0)
    assert budget.min_available is not None
    return _share(budget.min_available, expected)


class EvictionKeepsBudgets(Invariant):
    """No eviction takes the healthy pods of a PodDisruptionBudget guarding the victim below
    what the budget wants healthy, and none evicts a healthy pod two budgets guard."""

    name = "disruption budget"

    def __init__(self) -> None:
        self.healthy: set[PodKey] = set()

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod":
            return
        key = (event["namespace"], event["name"])
        what = event["event"]
        if what == "evicted" and key in self.healthy:
            self._judge(key, ledger)
        if what == "started":
            self.healthy.add(key)
        elif what in REMOVES or what in ("completed", "failed"):
            self.healthy.discard(key)

    def _judge(self, victim: PodKey, ledger: Ledger) -> None:
        record = ledger.pods.get(victim)
        if record is None or record.facts is None:
            return
        labels = record.facts.labels
        budgets = [b for b in ledger.world.budgets() if guards(b, victim[0], labels)]
        obj = describe("Pod", *victim)
        if len(budgets) > 1:
            names = " and ".join(b.name for b in budgets)
            self.fail(ledger, obj, f"evicted although two budgets guard it ({names})")
        if not budgets:
            return
        (budget,) = budgets
        pods = [
            key
            for key, pod in ledger.pods.items()
            if pod.facts is not None and guards(budget, key[0], pod.facts.labels)
        ]
        want = wanted_healthy(budget, pods, ledger)
        healthy = sum(1 for key in pods if key in self.healthy)
        where = f"budget {budget.namespace}/{budget.name}"
        if want is None:
            self.fail(ledger, obj, f"evicted although its {where} allows no disruption")
        if healthy - 1 < want:
            self.fail(
                ledger,
                obj,
                f"evicted, leaving {healthy - 1} healthy where its {where} wants {want}",
            )


class NoEvictionRefused(Invariant):
    """With the pdb plugin the scheduler chooses no victim the Eviction API refuses."""

    name = "pdb plugin"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] == "Pod" and event["event"] == "refused":
            obj = describe("Pod", event["namespace"], event["name"])
            self.fail(ledger, obj, f"chosen as a victim and refused: {event.get('reason')}")
