"""Objects the scheduler cannot read are skipped and reported; the cache keeps what it had.

The API server validates Pods and deploy/'s CRDs, so such objects arrive only
from older CRD versions or other writers; this exercises the informer's
decode-and-hand-over step directly on raw JSON.
"""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.backends.kube.informer import Informer
from asyncsched.backends.kube.kinds import DISRUPTION_BUDGETS, PODGROUPS, PODS
from asyncsched.cache import ClusterCache
from tests.builders import pod


def _informer(kind: Any, cache_upsert: Any, bad: list[tuple[str, ...]]) -> Informer[Any]:
    return Informer(
        None,  # type: ignore[arg-type]  # decoding needs no connection
        kind,
        cache_upsert,
        lambda ns, name: None,
        lambda *args: bad.append(args),
    )


def test_bad_quantity_in_a_pod_is_skipped_and_the_old_version_kept() -> None:
    cache = ClusterCache()
    bad: list[tuple[str, ...]] = []
    informer = _informer(PODS, cache.upsert_pod, bad)
    good = pod("worker", cpu="2")
    informer._apply(msgspec.Raw(msgspec.json.encode(good)))

    broken = msgspec.json.decode(msgspec.json.encode(good))
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "12x"
    informer._apply(msgspec.Raw(msgspec.json.encode(broken)))

    assert bad == [("Pod", "default", "worker", "invalid quantity '12x'")]
    assert cache.tasks["default/worker"].resreq.get("cpu") == 2000


def test_wrong_type_in_a_podgroup_is_skipped_with_the_field_named() -> None:
    cache = ClusterCache()
    bad: list[tuple[str, ...]] = []
    informer = _informer(PODGROUPS, cache.upsert_podgroup, bad)
    informer._apply(
        msgspec.Raw(
            b'{"metadata": {"name": "pg", "namespace": "ml"}, "spec": {"minMember": "six"}}'
        )
    )
    assert len(bad) == 1 and bad[0][:3] == ("PodGroup", "ml", "pg")
    assert "$.spec.minMember" in bad[0][3]
    assert not cache.jobs


def test_a_disruption_budget_as_the_api_server_serves_it_reaches_the_snapshot() -> None:
    """policy/v1 JSON with the disruption controller's status and the Eviction API's
    disruptedPods (RFC 3339 times), as a watch delivers it."""
    cache = ClusterCache()
    bad: list[tuple[str, ...]] = []
    informer = _informer(DISRUPTION_BUDGETS, cache.upsert_disruption_budget, bad)
    informer._apply(
        msgspec.Raw(
            b'{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",'
            b' "metadata": {"name": "web", "namespace": "shop", "generation": 1,'
            b' "resourceVersion": "42"},'
            b' "spec": {"maxUnavailable": "25%", "selector": {"matchExpressions":'
            b' [{"key": "app", "operator": "In", "values": ["web"]}]}},'
            b' "status": {"observedGeneration": 1, "disruptionsAllowed": 1,'
            b' "currentHealthy": 4, "desiredHealthy": 3, "expectedPods": 4,'
            b' "disruptedPods": {"web-7": "2026-01-01T00:00:05Z"},'
            b' "conditions": [{"type": "DisruptionAllowed", "status": "True",'
            b' "reason": "SufficientPods", "message": "", "observedGeneration": 1,'
            b' "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}'
        )
    )
    assert bad == []
    (budget,) = cache.snapshot().disruption_budgets
    assert (budget.key, budget.allowed, budget.disrupted) == ("shop/web", 1, frozenset({"web-7"}))
    assert budget.guards("shop", {"app": "web"}) and not budget.guards("shop", {"app": "db"})
