"""PodGroup status written after a session: phase as Volcano computes it, conditions kept true."""

from __future__ import annotations

from asyncsched.api import Condition
from asyncsched.framework.cycle import SCHEDULED, UNSCHEDULABLE, _merge_condition, _merge_notices


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


def test_a_plugins_notice_is_added_beside_the_gangs_condition_and_kept_while_posted() -> None:
    gang = Condition(type=UNSCHEDULABLE, status="True", message="0/2 fit")
    notice = Condition(type="Reserved", status="True", reason="Starving", message="holding a")
    merged = _merge_notices((gang,), [notice])
    assert merged == (gang, notice)
    again = Condition(type="Reserved", status="True", reason="Starving", message="holding a")
    assert _merge_notices(merged, [again]) == merged, "no transition: the old one is kept"


def test_a_notice_no_longer_posted_turns_false_and_the_gangs_conditions_stay() -> None:
    gang = Condition(type=UNSCHEDULABLE, status="True", message="0/2 fit")
    notice = Condition(type="Reserved", status="True", reason="Starving", message="holding a")
    merged = {c.type: c for c in _merge_notices((gang, notice), [])}
    assert merged[UNSCHEDULABLE] == gang
    assert merged["Reserved"].status == "False" and merged["Reserved"].message == ""
    assert merged["Reserved"].reason == "Starving"
    ended = (gang, merged["Reserved"])
    assert _merge_notices(ended, []) == ended, "a notice already False is left alone"
