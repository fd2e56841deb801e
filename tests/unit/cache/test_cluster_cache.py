"""The cache: jobs from PodGroups, binding held until answered, snapshots that share nothing."""

from __future__ import annotations

from asyncsched.model import TaskStatus
from tests.builders import cache_of, disruption_budget, node, pod, podgroup, priority_class


def test_pods_join_their_podgroup_and_lone_pods_are_jobs_of_one() -> None:
    snap = cache_of(
        node("n1"), podgroup("pg", 2), pod("a", group="pg"), pod("b", group="pg"), pod("solo")
    ).snapshot()
    assert set(snap.jobs) == {"default/pg", "default/solo"}
    assert len(snap.jobs["default/pg"].tasks) == 2
    assert snap.jobs["default/pg"].min_available == 2
    assert snap.jobs["default/solo"].min_available == 1


def test_pods_of_other_schedulers_are_not_jobs_but_use_their_node() -> None:
    snap = cache_of(
        node("n1", cpu="8"),
        pod("other", cpu="3", scheduler="default-scheduler", node_name="n1", phase="Running"),
    ).snapshot()
    assert not snap.jobs
    assert snap.nodes["n1"].idle.get("cpu") == 5000


def test_binding_is_held_until_the_api_server_answers() -> None:
    cache = cache_of(node("n1", cpu="4"), pod("a", cpu="3"))
    assert cache.mark_binding("default/a", "n1")
    assert cache.snapshot().nodes["n1"].idle.get("cpu") == 1000

    cache.upsert_pod(pod("a", cpu="3"))  # a stale update without nodeName
    snap = cache.snapshot()
    assert snap.jobs["default/a"].tasks["default/a"].status is TaskStatus.BINDING
    assert snap.nodes["n1"].idle.get("cpu") == 1000

    cache.bind_failed("default/a")
    snap = cache.snapshot()
    assert snap.jobs["default/a"].tasks["default/a"].status is TaskStatus.PENDING
    assert snap.nodes["n1"].idle.get("cpu") == 4000
    assert not cache.mark_binding("default/a", "gone"), "a node that vanished is refused"


def test_snapshot_changes_do_not_reach_the_cache() -> None:
    cache = cache_of(node("n1", cpu="4"), pod("a", cpu="1"))
    snap = cache.snapshot()
    task = snap.jobs["default/a"].tasks["default/a"]
    snap.jobs["default/a"].update_task_status(task, TaskStatus.ALLOCATED)
    snap.nodes["n1"].add_task(task)
    again = cache.snapshot()
    assert again.jobs["default/a"].tasks["default/a"].status is TaskStatus.PENDING
    assert again.nodes["n1"].idle.get("cpu") == 4000


def test_priorities_resolve_from_classes_whatever_the_arrival_order() -> None:
    snap = cache_of(
        podgroup("pg", priority_class="high"),
        pod("a", group="pg", priority_class="high"),
        priority_class("high", 1000),
        priority_class("base", 5, default=True),
        pod("b"),
    ).snapshot()
    assert snap.jobs["default/pg"].priority == 1000
    assert snap.jobs["default/pg"].tasks["default/a"].priority == 1000
    assert snap.jobs["default/b"].priority == 5


def test_deleting_a_node_frees_its_row() -> None:
    cache = cache_of(node("n1"), node("n2"))
    cache.delete_node("n1")
    snap = cache.snapshot()
    assert list(snap.nodes) == ["n2"] and snap.nodes["n2"].row == 0


def test_disruption_budgets_reach_snapshots_in_order_and_follow_their_status() -> None:
    cache = cache_of(
        node("n1"),
        disruption_budget("web", namespace="shop", match={"app": "web"}, allowed=1),
        disruption_budget("db", namespace="shop", match={"app": "db"}, allowed=0),
    )
    first = cache.snapshot()
    assert [b.key for b in first.disruption_budgets] == ["shop/db", "shop/web"]
    assert first.disruption_budgets[1].allowed == 1
    again = cache.snapshot()
    assert again.disruption_budgets is first.disruption_budgets, "unchanged: shared, immutable"

    cache.upsert_disruption_budget(
        disruption_budget(
            "web", namespace="shop", match={"app": "web"}, allowed=0, disrupted=["web-1"]
        )
    )
    changed = cache.snapshot().disruption_budgets
    assert changed[1].allowed == 0 and changed[1].disrupted == frozenset({"web-1"})
    assert first.disruption_budgets[1].allowed == 1, "an earlier snapshot keeps what it saw"

    cache.delete_disruption_budget("shop", "db")
    assert [b.key for b in cache.snapshot().disruption_budgets] == ["shop/web"]
