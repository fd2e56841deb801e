"""A long simulated run decides the same with incremental snapshots as without.

Snapshots hand out again what nothing changed and leave settled jobs out of
the sessions' work (asyncsched.model.snapshot). A seeded run of gangs, lone
pods (some failing), queues and priorities that come and finish over hundreds of sessions
must give exactly the same events, end and PodGroup statuses when every
snapshot is instead built from scratch, with every job active.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from asyncsched.api import Pod
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Manifest, Simulation
from asyncsched.cache import ClusterCache
from asyncsched.framework import Registry
from asyncsched.model import ClusterSnapshot
from tests.builders import node, pod, podgroup, priority_class, queue

DURATION = "simulation.asyncsched.io/duration"
WHOLE_GROUP = "simulation.asyncsched.io/needs-whole-group"
FAIL_AFTER = "simulation.asyncsched.io/fail-after"


def _workload(seed: int) -> list[Manifest]:
    rng = random.Random(seed)
    objects: list[tuple[float, Any]] = [(0.0, queue(f"q{i}", weight=i + 1)) for i in range(3)]
    objects.append((0.0, priority_class("high", 1000)))
    for i in range(10):
        objects.append((0.0, node(f"n{i:02d}", cpu="8", memory="32Gi", gpu=4 if i % 3 else 0)))
    for j in range(70):
        at = float(rng.randrange(0, 400))
        q = f"q{rng.randrange(3)}"
        notes = {DURATION: str(rng.randrange(5, 150))}
        if rng.random() < 0.3:
            objects.append((at, _with(pod(f"lone-{j}", cpu=rng.choice(["500m", "1", "2"])), notes)))
            continue
        size = rng.choice([1, 2, 3, 4])
        minimum = rng.randint(1, size)
        gpu = rng.choice([0, 0, 1])
        if gpu and minimum == size:
            notes[WHOLE_GROUP] = "true"
        pc = "high" if rng.random() < 0.2 else ""
        objects.append(
            (at, podgroup(f"g{j}", minimum, namespace=q, queue=q, phase="", priority_class=pc))
        )
        for t in range(size):
            cpu = rng.choice(["1", "2", "3"])
            task = pod(
                f"g{j}-{t}", cpu=cpu, gpu=gpu, namespace=q, group=f"g{j}", restart_policy="Never"
            )
            fails = {FAIL_AFTER: str(rng.randrange(2, 20))} if rng.random() < 0.1 else {}
            objects.append((at, _with(task, {**notes, **fails})))
    return [
        Manifest(obj=obj, submit_at=at, source=f"object {i}") for i, (at, obj) in enumerate(objects)
    ]


def _with(task: Pod, notes: dict[str, str]) -> Pod:
    annotations = {**task.metadata.annotations, **notes}
    return msgspec.structs.replace(
        task, metadata=msgspec.structs.replace(task.metadata, annotations=annotations)
    )


def _run(seed: int) -> tuple[list[dict[str, Any]], Any, dict[str, Any], Simulation]:
    sim = Simulation(_workload(seed), ConfigSource(Registry()))
    outcome = sim.run()
    statuses = {k: v.get("status") for k, v in sim.objects("PodGroup").items()}
    return sim.events, (outcome.end, outcome.reason, outcome.sessions), statuses, sim


@pytest.mark.parametrize("seed", range(3))
def test_a_long_run_decides_the_same_without_reuse(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCSCHED_CHECK_SNAPSHOTS", "0")  # this test is the comparison
    partial: list[int] = []
    take = ClusterCache.snapshot

    def counting(
        self: ClusterCache, now: float = 0.0, configuration: object | None = None
    ) -> ClusterSnapshot:
        snapshot = take(self, now, configuration=configuration)
        partial.append(0 if snapshot.active is None else len(snapshot.jobs) - len(snapshot.active))
        return snapshot

    monkeypatch.setattr(ClusterCache, "snapshot", counting)
    events, outcome, statuses, _ = _run(seed)
    assert sum(partial) > 0  # settled jobs were really left out of sessions
    assert outcome[1] == "done" and len([e for e in events if e["event"] == "completed"]) > 80

    def from_scratch(
        self: ClusterCache, now: float = 0.0, configuration: object | None = None
    ) -> ClusterSnapshot:
        self.changes.everything = True  # copy everything again: nothing reused, none settled
        snapshot = take(self, now)
        assert snapshot.active is None
        return snapshot

    monkeypatch.setattr(ClusterCache, "snapshot", from_scratch)
    assert _run(seed)[:3] == (events, outcome, statuses)
