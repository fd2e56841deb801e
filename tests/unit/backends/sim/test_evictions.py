"""The simulated Eviction API: what a PodDisruptionBudget lets go, and what it refuses."""

from __future__ import annotations

import msgspec

from asyncsched.api import Pod
from asyncsched.api.meta import Condition
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.selectors import LabelSelector
from asyncsched.backends.sim.evictions import spend_budget
from asyncsched.backends.sim.store import EPOCH, ObjectStore
from tests.builders import disruption_budget, pod

WEB = {"app": "web"}
NOW = EPOCH + 10


def web(name: str, *, phase: str = "Running", ready: bool = True) -> Pod:
    made = pod(name, node_name="n1", phase=phase, labels=WEB)
    status = msgspec.structs.replace(
        made.status, conditions=[Condition(type="Ready", status="True" if ready else "False")]
    )
    return msgspec.structs.replace(made, status=status)


def store_with(*budgets: PodDisruptionBudget) -> ObjectStore:
    store = ObjectStore(clock=lambda: 10.0)
    for budget in budgets:
        store.create(budget, actor="user")
    return store


def budget(**status: object) -> PodDisruptionBudget:
    made = disruption_budget("web", match=WEB, min_available=2, allowed=1)
    meta = msgspec.structs.replace(made.metadata, generation=1)
    fields = {"current_healthy": 3, "desired_healthy": 2, **status}
    return msgspec.structs.replace(
        made, metadata=meta, status=msgspec.structs.replace(made.status, **fields)
    )


def test_an_eviction_spends_the_budget_and_the_next_is_refused() -> None:
    store = store_with(budget())
    assert spend_budget(store, web("a"), NOW) == ""
    after = store.get(PodDisruptionBudget, "default/web")
    assert after is not None
    assert after.status.disruptions_allowed == 0
    assert list(after.status.disrupted_pods) == ["a"]
    refused = spend_budget(store, web("b"), NOW)
    assert refused == (
        "Cannot evict pod as it would violate the pod's disruption budget. The disruption "
        "budget web needs 2 healthy pods and has 3 currently"
    )


def test_pods_not_running_or_no_budget_go_freely() -> None:
    store = store_with(budget(disruptions_allowed=0))
    assert spend_budget(store, web("pending", phase="Pending"), NOW) == ""
    assert spend_budget(store, web("done", phase="Succeeded"), NOW) == ""
    other = pod("other", node_name="n1", phase="Running", labels={"app": "db"})
    assert spend_budget(store, other, NOW) == ""


def test_an_unready_pod_goes_without_spending_while_the_application_is_healthy() -> None:
    store = store_with(budget(disruptions_allowed=0))
    assert spend_budget(store, web("warming", ready=False), NOW) == ""
    short = store_with(budget(disruptions_allowed=0, current_healthy=1))
    assert spend_budget(short, web("warming", ready=False), NOW) != ""
    always = budget(disruptions_allowed=0, current_healthy=1)
    spec = msgspec.structs.replace(always.spec, unhealthy_pod_eviction_policy="AlwaysAllow")
    lenient = store_with(msgspec.structs.replace(always, spec=spec))
    assert spend_budget(lenient, web("warming", ready=False), NOW) == ""


def test_a_pod_two_budgets_select_or_a_budget_not_yet_seen_is_refused() -> None:
    other = disruption_budget("all", selector=LabelSelector(), allowed=5)
    store = store_with(budget(), other)
    assert "more than one PodDisruptionBudget" in spend_budget(store, web("a"), NOW)
    unseen = store_with(budget(observed_generation=0))
    assert "is still being processed by the server" in spend_budget(unseen, web("a"), NOW)
