"""What the session's job report tells the pods of a gang it gave back."""

from __future__ import annotations

from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import Registry, run_session
from asyncsched.framework.results import SCHEDULABLE_REASON, UNSCHEDULABLE_REASON
from tests import builders as b


def test_members_that_fitted_are_schedulable_and_say_where_the_rest_say_why_not() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.node("b", cpu="4"),
        b.podgroup("job", 3),
        *(b.pod(f"job-{i}", cpu="4", group="job") for i in range(3)),
    )
    result, _ = run_session(snap, ConfigSource(Registry()).current)

    assert result.binds == []
    told = {note.name: (note.reason, note.message) for note in result.unschedulable}
    gang = "(2/3 tasks in gang fit: Insufficient cpu on 2 node(s))"
    assert told == {
        "job-0": (SCHEDULABLE_REASON, f"fits a node; waits for its gang {gang}"),
        "job-1": (SCHEDULABLE_REASON, f"fits a node; waits for its gang {gang}"),
        "job-2": (UNSCHEDULABLE_REASON, "0/2 nodes are unavailable: 2 Insufficient cpu."),
    }
