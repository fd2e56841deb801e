"""PodGroup status written after a session: phase as Volcano computes it, conditions kept true."""

from __future__ import annotations

from asyncsched.api import Condition
from asyncsched.framework.cycle import SCHEDULED, UNSCHEDULABLE, _merge_condition


def test_a_scheduled_gang_is_no_longer_marked_unschedulable() -> None:
    stale = Condition(type=UNSCHEDULABLE, status="True", reason="NotEnoughResources", message="1/2")
    scheduled = Condition(type=SCHEDULED, status="True", reason="tasks in gang are ready")
    merged = {c.type: c for c in _merge_condition([stale], scheduled)}
    assert merged[SCHEDULED].status == "True"
    assert merged[UNSCHEDULABLE].status == "False" and merged[UNSCHEDULABLE].message == ""


def test_a_new_reason_replaces_the_old_one_of_the_same_type() -> None:
    old = Condition(type=UNSCHEDULABLE, status="True", message="0/3 fit")
    new = Condition(type=UNSCHEDULABLE, status="True", message="2/3 fit")
    assert _merge_condition([old], new) == (new,)
    assert _merge_condition([old], None) == (old,)
