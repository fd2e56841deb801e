"""What a session remembers on a job it left unchanged decides and reports as a fresh start.

A job handed out again unchanged carries memos from the session before
(``JobInfo.books_memo``: its part of its queue's books; ``JobInfo.podgroup_in_sync``:
its PodGroup status needed no write; ``JobInfo.share_memo``: the share drf reported for
it, under the cluster total of then). Runs under small budgets, where most jobs wait
untouched for several sessions, must give every session the very result a session on a
snapshot built from scratch (no memos) gives, and the memos must actually be used.
"""

from __future__ import annotations

import msgspec
import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import Registry, Session, SessionResult, run_session
from asyncsched.model import JobInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.books import SettledTotals
from asyncsched.model.queue import QueueInfo
from asyncsched.model.queue_tree import queue_books
from tests.builders import cache_of, node, pod, podgroup, queue


def _cluster() -> list[object]:
    objects: list[object] = [queue("a", weight=1), queue("b", weight=3)]
    objects += [node(f"n{i}", cpu="8", memory="16Gi") for i in range(3)]
    for g in range(10):
        q = "a" if g % 3 else "b"
        minimum = {"cpu": "2", "memory": "1Gi"} if g % 2 else None
        objects.append(
            podgroup(
                f"g{g}",
                2,
                namespace=q,
                queue=q,
                phase="Pending",
                min_resources=minimum,
                created=f"2026-01-01T00:00:{g:02d}Z",
            )
        )
        size = 3 if g == 4 else 2  # g4 holds more than its minimum: an elastic part
        objects += [
            pod(f"g{g}-{i}", cpu="1", memory="1Gi", namespace=q, group=f"g{g}", priority=i % 2)
            for i in range(size)
        ]
    objects.append(pod("never-fits", cpu="64"))
    return objects


def test_sessions_with_memos_decide_and_report_as_sessions_on_fresh_snapshots() -> None:
    cache = cache_of(*_cluster())
    loaded = ConfigSource(Registry()).current
    books_reused = in_sync_reused = shares_reused = 0
    for n in range(30):
        if n == 6:  # a node more: a larger total, so every share remembered is stale
            cache.upsert_node(node("late", cpu="8", memory="16Gi"))
        snapshot = cache.snapshot()
        fresh = cache.trial_snapshot()
        books_reused += sum(1 for j in snapshot.jobs.values() if j.books_memo is not None)
        in_sync_reused += sum(1 for j in snapshot.jobs.values() if j.podgroup_in_sync)
        shares_reused += sum(1 for j in snapshot.jobs.values() if j.share_memo is not None)
        assert not any(
            j.books_memo or j.podgroup_in_sync or j.share_memo for j in fresh.jobs.values()
        )
        result, _ = run_session(snapshot, loaded, f"s{n}", budget=1)
        expected, _ = run_session(fresh, loaded, f"s{n}", budget=1)
        assert result == expected, f"session {n}"
        for update in result.podgroups:
            cache.set_podgroup_phase(update.job, update.phase)
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
        if not result.binds and not result.deferred:
            break
    else:
        raise AssertionError("the run did not end")
    assert books_reused and in_sync_reused and shares_reused, (
        "the memos were never used: nothing was checked"
    )


def _job(uid: str, queue_name: str, pending: int, running: int) -> JobInfo:
    job = JobInfo(uid=uid, name=uid, namespace="d", queue=queue_name, min_available=2)
    job.min_resources = Resource({"cpu": 2000})
    job.set_phase("Running" if running >= 2 else "Inqueue")
    for i in range(pending + running):
        status = TaskStatus.PENDING if i < pending else TaskStatus.RUNNING
        task = TaskInfo(
            uid=f"{uid}-{i}",
            name=f"{uid}-{i}",
            namespace="d",
            job=uid,
            resreq=Resource({"cpu": 1000, "memory": 1 << 30, "nvidia.com/gpu": i % 2}),
            status=status,
        )
        job.add_task(task)
    job.touched = False
    return job


def test_queue_books_from_memos_equal_the_sums_taken_afresh() -> None:
    queues = {name: QueueInfo.default() for name in ("default", "q1")}
    jobs = [_job(f"j{i}", "q1" if i % 2 else "default", i % 3, i % 4) for i in range(12)]
    settled = {"q1": SettledTotals()}

    def plain(books: dict[str, object]) -> dict[str, tuple[object, ...]]:
        return {
            name: tuple((k, sorted(v.items())) for k, v in vars(b).items())
            for name, b in books.items()
        }

    first = queue_books(queues, jobs, settled)
    assert all(j.books_memo is not None for j in jobs)
    again = queue_books(queues, jobs, settled)
    for job in jobs:
        job.books_memo = None
    afresh = queue_books(queues, jobs, settled)
    assert plain(first) == plain(again) == plain(afresh)
    assert [list(v.allocated.as_dict()) for v in again.values()] == [
        list(v.allocated.as_dict()) for v in afresh.values()
    ], "the resources are listed in the same order"

    # A job changed since (touched) is summed afresh, and the memo is not taken.
    changed = jobs[1]
    waiting = next(iter(changed.by_status[TaskStatus.PENDING].values()))
    changed.update_task_status(waiting, TaskStatus.ALLOCATED)
    after = queue_books(queues, jobs, settled)
    for job in jobs:
        job.books_memo = None
    assert plain(after) == plain(queue_books(queues, jobs, settled))
    assert plain(after) != plain(afresh)
    assert changed.books_memo is None


def test_tasks_ordered_at_a_jobs_first_turn_are_placed_as_when_ordered_up_front(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a fixed task order allocate gathers and orders a job's tasks when its turn comes;
    a task order that is not fixed orders every job's tasks up front (the plain rule)."""
    loaded = ConfigSource(Registry()).current

    def run() -> list[SessionResult]:
        cache = cache_of(*_cluster())
        results = []
        for n in range(30):
            result, _ = run_session(cache.snapshot(), loaded, f"s{n}", budget=3)
            results.append(result)
            for bind in result.binds:
                cache.mark_binding(bind.uid, bind.node)
            if not result.binds and not result.deferred:
                break
        return results

    lazy = run()
    assert any(r.deferred for r in lazy)
    monkeypatch.setattr(Session, "fixed_task_order", lambda self: None)
    assert lazy == run()


def test_a_share_is_reported_again_after_its_pods_bind_coming_back() -> None:
    """A lone pod's bind coming back (and the pod turning Running) makes its job's copy
    current in place without changing what it holds: drf reports the very figure of the
    session before, and every session reports what one on a fresh snapshot reports."""
    pods = [pod(f"p{i}", cpu="1", memory="1Gi") for i in range(6)]
    cache = cache_of(queue("default"), node("n0", cpu="8", memory="16Gi"), *pods)
    loaded = ConfigSource(Registry()).current

    def session(n: int) -> SessionResult:
        snapshot = cache.snapshot(configuration=loaded.configuration)
        result, _ = run_session(snapshot, loaded, f"s{n}")
        expected, _ = run_session(cache.trial_snapshot(), loaded, f"s{n}")
        assert result == expected, f"session {n}"
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
        return result

    placed = session(0)
    assert len(placed.binds) == 6
    first = {g.labels: g for g in session(1).plugin_gauges if g.name == "volcano_job_share"}
    assert len(first) == 6
    for phase in ("Pending", "Running"):  # the bind's echo, then the kubelet's report
        for p in pods:
            spec = msgspec.structs.replace(p.spec, node_name="n0")
            status = msgspec.structs.replace(p.status, phase=phase)
            cache.upsert_pod(msgspec.structs.replace(p, spec=spec, status=status))
        again = {g.labels: g for g in session(2).plugin_gauges if g.name == "volcano_job_share"}
        assert again.keys() == first.keys()
        assert all(again[k] is first[k] for k in first), "a figure was made anew"
