"""The actions with the real gang and predicates plugins, as a configuration would run them."""

from __future__ import annotations

from asyncsched.actions.allocate import AllocateAction
from asyncsched.actions.backfill import BackfillAction
from asyncsched.actions.enqueue import EnqueueAction
from asyncsched.framework import Arguments, Session
from asyncsched.model import ClusterSnapshot
from asyncsched.plugins.gang import GangPlugin
from asyncsched.plugins.predicates import PredicatesPlugin
from tests import builders as b
from tests.unit.actions.support import open_session


def run(snap: ClusterSnapshot) -> Session:
    ssn = open_session(snap, GangPlugin(Arguments()), PredicatesPlugin(Arguments()))
    for action in (EnqueueAction, AllocateAction, BackfillAction):
        action(Arguments()).execute(ssn)
    for plugin in ssn.plugins.values():
        plugin.on_session_close(ssn)
    return ssn


def test_gang_that_does_not_fit_is_unschedulable_with_its_real_reason() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.node("b", cpu="4"),
        b.podgroup("job", 3),
        *(b.pod(f"job-{i}", cpu="4", group="job") for i in range(3)),
    )
    ssn = run(snap)
    assert ssn.result.binds == []
    condition = ssn.podgroup_conditions.by_uid["default/job"]
    assert condition.type == "Unschedulable"
    assert condition.message == "2/3 tasks in gang fit: Insufficient cpu on 2 node(s)"


def test_gang_that_fits_is_bound_whole() -> None:
    snap = b.snapshot(
        *(b.node(n, cpu="4") for n in "abc"),
        b.podgroup("job", 3),
        *(b.pod(f"job-{i}", cpu="4", group="job") for i in range(3)),
    )
    ssn = run(snap)
    assert sorted(bind.node for bind in ssn.result.binds) == ["a", "b", "c"]
    assert ssn.podgroup_conditions.by_uid["default/job"].type == "Scheduled"


def test_taints_and_resources_are_counted_per_node() -> None:
    snap = b.snapshot(
        b.node("a", cpu="8", taints=[b.taint("gpu", "true")]),
        b.node("b", cpu="1"),
        b.node("c", cpu="8", unschedulable=True),
        b.pod("p", cpu="2"),
    )
    ssn = run(snap)
    assert ssn.fit_failures.by_uid["default/p"].message() == (
        "0/3 nodes are unavailable: 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{gpu: true}, 1 node(s) were unschedulable."
    )


def test_best_effort_member_of_a_running_gang_is_backfilled() -> None:
    snap = b.snapshot(
        b.node("a", cpu="1"),
        b.podgroup("job", 1),
        b.pod("job-0", cpu="1", group="job", node_name="a", phase="Running"),
        b.pod("job-1", cpu="", memory="", group="job"),
    )
    ssn = run(snap)
    assert [(bind.name, bind.node) for bind in ssn.result.binds] == [("job-1", "a")]
