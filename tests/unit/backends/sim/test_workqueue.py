"""The simulated controllers' work queue: each key once, in key order unless asked
otherwise, and keys queued while reconciling wait for the next sync."""

from __future__ import annotations

from asyncsched.backends.sim.workqueue import WorkQueue


def test_each_key_once_in_key_order_and_later_keys_wait_for_the_next_drain() -> None:
    queue = WorkQueue()
    for key in ("b/job", "a/job", "b/job", "c/job"):
        queue.add(key)
    queue.discard("c/job")
    seen: list[str] = []

    def reconcile(key: str) -> None:
        seen.append(key)
        queue.add("a/again")  # what a reconcile queues comes at the next sync

    assert queue.drain(reconcile) is True
    assert seen == ["a/job", "b/job"]
    assert queue.take() == ["a/again"]
    assert not queue and queue.drain(reconcile) is False


def test_arrival_order_when_asked() -> None:
    queue = WorkQueue()
    for key in ("z", "a", "m"):
        queue.add(key)
    assert queue.take(sort=False) == ["z", "a", "m"]
