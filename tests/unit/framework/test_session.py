"""Session and Statement: tiers and flags decide who is asked; a raising plugin is dropped."""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import EventHandler, Session, Statement, parse_configuration
from asyncsched.framework.hooks import JOB_ORDER, JOB_READY
from asyncsched.model import JobInfo, TaskStatus
from tests.builders import node, pod, podgroup, snapshot

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: broken
  - name: reverse
    enableJobOrder: {enabled}
"""


class Reverse:
    name: ClassVar[str] = "reverse"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(JOB_ORDER, self.name, lambda a, b: -1 if a.name > b.name else 1)

    def on_session_close(self, ssn: Session) -> None:
        pass


class Broken:
    name: ClassVar[str] = "broken"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(JOB_READY, self.name, self.ready)

    def on_session_close(self, ssn: Session) -> None:
        pass

    def ready(self, job: JobInfo) -> bool:
        raise RuntimeError("boom")


def _session(enabled: str) -> Session:
    snap = snapshot(
        node("n1"), podgroup("a"), podgroup("b"), pod("a-0", group="a"), pod("b-0", group="b")
    )
    plugins = {"broken": Broken(), "reverse": Reverse()}
    ssn = Session(snap, parse_configuration(CONF.format(enabled=enabled)), plugins)  # type: ignore[arg-type]
    for plugin in plugins.values():
        plugin.on_session_open(ssn)
    return ssn


def test_a_disabled_flag_removes_the_plugin_from_that_hook() -> None:
    on, off = _session("true"), _session("false")
    assert [j.name for j in sorted(on.jobs.values(), key=on.job_key())] == ["b", "a"]
    assert [j.name for j in sorted(off.jobs.values(), key=off.job_key())] == ["a", "b"]


def test_a_raising_plugin_is_reported_and_the_session_goes_on() -> None:
    ssn = _session("true")
    job = ssn.jobs["default/a"]
    assert ssn.job_ready(job) is True
    assert [f.plugin for f in ssn.result.failures] == ["broken"]
    assert "boom" in ssn.result.failures[0].error
    assert ssn.job_ready(job) is True and len(ssn.result.failures) == 1


def test_discard_undoes_allocations_and_commit_binds() -> None:
    ssn = _session("true")
    job = ssn.jobs["default/a"]
    task = job.tasks["default/a-0"]
    n1 = ssn.nodes["n1"]
    idle = n1.idle

    stmt = Statement(ssn)
    stmt.allocate(task, n1)
    assert task.status is TaskStatus.ALLOCATED and n1.idle != idle
    stmt.discard()
    assert task.status is TaskStatus.PENDING and task.node_name == "" and n1.idle == idle

    stmt.allocate(task, n1)
    stmt.commit()
    assert task.status is TaskStatus.BINDING
    assert [(b.name, b.node) for b in ssn.result.binds] == [("a-0", "n1")]


def test_event_handlers_are_told_in_tier_order_and_a_raising_one_is_dropped() -> None:
    ssn = _session("true")
    told: list[str] = []

    def boom(task: object) -> None:
        raise RuntimeError("boom")

    ssn.add_event_handler("reverse", EventHandler(on_allocate=lambda t: told.append("reverse")))
    ssn.add_event_handler("broken", EventHandler(on_allocate=boom))
    task = ssn.jobs["default/a"].tasks["default/a-0"]
    Statement(ssn).allocate(task, ssn.nodes["n1"])
    Statement(ssn).allocate(ssn.jobs["default/b"].tasks["default/b-0"], ssn.nodes["n1"])
    assert told == ["reverse", "reverse"]
    assert [(f.plugin, f.hook) for f in ssn.result.failures] == [("broken", "on_allocate")]


def test_deallocate_handlers_see_the_node_the_task_leaves() -> None:
    """As in Volcano's unallocate: the handlers run before the task forgets its node (a
    plugin that keeps per-node books, gpufrag's, reads the node again there; told after,
    it kept the undone placement and decided otherwise than on a fresh snapshot)."""
    ssn = _session("true")
    task = ssn.jobs["default/a"].tasks["default/a-0"]
    seen: list[tuple[str, int]] = []

    def left(t: object) -> None:
        assert t is task
        seen.append((task.node_name, len(ssn.nodes["n1"].tasks)))

    ssn.add_event_handler("reverse", EventHandler(on_deallocate=left))
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes["n1"])
    stmt.discard()
    assert seen == [("n1", 0)]  # the node named, the task already off it
    assert task.node_name == ""
