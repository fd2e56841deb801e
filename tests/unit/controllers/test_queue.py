"""Queue status counts and the Open / Closing / Closed states."""

from __future__ import annotations

from asyncsched.api import PodGroup, Queue
from asyncsched.api.bus import Command
from asyncsched.api.meta import ObjectMeta, OwnerReference
from asyncsched.api.volcano import PodGroupSpec, PodGroupStatus, QueueStatus
from asyncsched.controllers.queue import queue_command, queue_status


def _queue(state: str = "") -> Queue:
    return Queue(metadata=ObjectMeta(name="q"), status=QueueStatus(state=state))


def _pg(phase: str, queue: str = "q", name: str = "pg") -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="ns"),
        spec=PodGroupSpec(queue=queue),
        status=PodGroupStatus(phase=phase),
    )


def test_counts_podgroups_by_phase() -> None:
    groups = [_pg(p, name=p) for p in ("Pending", "Inqueue", "Running", "Running", "Completed")]
    groups.append(_pg("Running", queue="other"))
    status = queue_status(_queue(), groups)
    assert status == QueueStatus(
        state="Open", pending=1, inqueue=1, running=2, unknown=0, completed=1
    )


def test_close_waits_for_podgroups_then_closes() -> None:
    closing = queue_status(_queue("Open"), [_pg("Running")], "CloseQueue")
    assert closing.state == "Closing"
    assert queue_status(_queue("Closing"), [_pg("Running")]).state == "Closing"
    assert queue_status(_queue("Closing"), []).state == "Closed"
    assert queue_status(_queue("Open"), [], "CloseQueue").state == "Closed"
    assert queue_status(_queue("Closed"), [_pg("Running")], "OpenQueue").state == "Open"
    assert queue_status(_queue("Closed"), []).state == "Closed"


def test_queue_command_finds_open_and_close() -> None:
    target = OwnerReference(api_version="scheduling.volcano.sh/v1beta1", kind="Queue", name="q")
    cmd = Command(metadata=ObjectMeta(name="c", namespace="ns"), action="CloseQueue", target=target)
    other = Command(metadata=ObjectMeta(name="d"), action="AbortJob", target=target)
    assert queue_command(_queue(), [other, cmd]) is cmd
    assert queue_command(_queue(), [other]) is None
