"""A session budget stops allocate at a job boundary and leaves the rest untouched."""

from __future__ import annotations

from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import Registry, run_session
from tests.builders import cache_of, node, pod, podgroup


def _gangs() -> list[object]:
    objects: list[object] = [node("n1", cpu="16"), node("n2", cpu="16")]
    for g in range(4):
        objects.append(podgroup(f"g{g}", 3, phase="Pending", created=f"2026-01-01T00:00:0{g}Z"))
        objects.extend(pod(f"g{g}-{i}", cpu="1", group=f"g{g}") for i in range(3))
    objects.append(pod("too-big", cpu="64"))
    return objects


def test_a_budget_stops_after_whole_gangs_and_the_next_session_goes_on() -> None:
    cache = cache_of(*_gangs())
    loaded = ConfigSource(Registry()).current
    placed: list[str] = []
    sessions = []
    for n in range(10):
        result, _ = run_session(cache.snapshot(), loaded, f"s{n}", budget=4)
        sessions.append(result)
        placed.extend(b.name for b in result.binds)
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
        for update in result.podgroups:
            cache.set_podgroup_phase(update.job, update.phase)
        if not result.deferred:
            break

    first = sessions[0]
    # Two whole gangs (6 tasks) reach the budget of 4: a gang is never cut in two.
    assert sorted(b.name for b in first.binds) == [f"g{g}-{i}" for g in (0, 1) for i in range(3)]
    assert first.deferred >= 2
    assert not {n.job for n in first.unschedulable} & {"default/g2", "default/g3"}, (
        "a job not reached gets no pending reason"
    )
    not_reached = [u for u in first.podgroups if u.job in ("default/g2", "default/g3")]
    assert [(u.phase, u.conditions) for u in not_reached] == [("Inqueue", ())] * 2, (
        "a job not reached is admitted (its phase is written) but gets no condition"
    )
    assert sorted(placed) == sorted(f"g{g}-{i}" for g in range(4) for i in range(3))
    assert sessions[-1].deferred == 0
    last_reasons = {n.name for n in sessions[-1].unschedulable}
    assert "too-big" in last_reasons, "the session that is not cut reports what waits"


def test_without_a_budget_or_with_a_large_one_nothing_is_deferred() -> None:
    loaded = ConfigSource(Registry()).current
    whole, _ = run_session(cache_of(*_gangs()).snapshot(), loaded, "s")
    large, _ = run_session(cache_of(*_gangs()).snapshot(), loaded, "s", budget=1000)
    assert whole.deferred == large.deferred == 0
    assert whole.binds == large.binds and whole.unschedulable == large.unschedulable
