"""A pod's new version taken into the cache's own task object (``ClusterCache._restated``)
leaves the cache as replacing the task would: the same tasks, in the same orders (the
cache's, each job's, each node's), the same jobs, the same books, the same answer to "may a
session decide otherwise", and snapshots equal to ones built from scratch. Only the place
of a lone pod's job among the jobs may differ (restating keeps it, replacing moves it to
the end); that no decision reads it is checked on simulated runs in
``tests/scenarios/properties/test_restating.py``.

Generated histories of pod versions (new ones, and the last one again on the node the cache
holds it on, as a bind's echo or a kubelet's report would bring it, sometimes with a new
annotation, scheduling gates added or removed, a deletion stamp or other requests), binds,
failed binds, evictions and deletions run on two caches, one of them with restating turned
off; after every step they must agree.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api import Pod
from asyncsched.api.core import PodSchedulingGate
from asyncsched.api.meta import ObjectMeta
from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.cache.snapshot_jobs import QUEUE_NAME_ANNOTATION
from asyncsched.framework import Registry, SessionResult, run_session
from asyncsched.model.snapshot import snapshot_differences
from tests.builders import cache_of, node, pod, podgroup, queue

NODES = ("n0", "n1", "n2")
NAMES = ("a", "b", "c", "d", "e", "f")


def _version(draw: st.DrawFn) -> Pod:
    name = draw(st.sampled_from(NAMES))
    cpu = draw(st.sampled_from(["1", "1", "2", ""]))  # "": no requests, a best-effort pod
    built = pod(
        name,
        cpu=cpu,
        memory="1Gi" if cpu else "",
        group=draw(st.sampled_from([None, "g", "g", "h"])),
        node_name=draw(st.sampled_from(["", *NODES])),
        phase=draw(st.sampled_from(["Pending", "Running", "Running", "Succeeded", "Failed"])),
        scheduler=draw(st.sampled_from(["volcano", "volcano", "default-scheduler"])),
        annotations=draw(st.sampled_from([{}, {}, {"note": "x"}])),
        priority=draw(st.sampled_from([None, None, 10, 1000])),
        created="2026-01-01T00:00:00Z",
    )
    if draw(st.booleans()) and draw(st.booleans()):
        meta = ObjectMeta(
            name=built.metadata.name,
            namespace=built.metadata.namespace,
            uid=built.metadata.uid,
            annotations=built.metadata.annotations,
            creation_timestamp=built.metadata.creation_timestamp,
            deletion_timestamp="2026-01-01T00:01:00Z",
        )
        built = Pod(metadata=meta, spec=built.spec, status=built.status)
    return built


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(
            st.sampled_from(["pod", "pod", "echo", "echo", "bind", "failed", "evict", "delete"])
        )
        if kind == "pod":
            steps.append(("pod", _version(draw)))
        elif kind == "echo":
            name = draw(st.sampled_from(NAMES))
            phase = draw(st.sampled_from(["Pending", "Running", "Succeeded"]))
            change = draw(
                st.sampled_from(
                    ["", "", "note", "queue", "cpu", "deleting", "task-priority", "gates"]
                )
            )
            steps.append(("echo", (name, phase, change)))
        elif kind == "bind":
            steps.append(("bind", (draw(st.sampled_from(NAMES)), draw(st.sampled_from(NODES)))))
        else:
            steps.append((kind, draw(st.sampled_from(NAMES))))
    return steps


def _fresh() -> ClusterCache:
    return cache_of(
        queue("default"),
        queue("other"),
        *[node(n, cpu="4") for n in NODES],
        podgroup("g", 2),
        podgroup("h", 1),
    )


def _apply(cache: ClusterCache, step: tuple[str, Any]) -> object:
    kind, arg = step
    if kind == "pod":
        return cache.upsert_pod(arg)
    if kind == "echo":  # the last version again, on the node the cache holds it on
        name, phase, change = arg
        last, task = cache.pods.get(f"default/{name}"), cache.tasks.get(f"default/{name}")
        if last is None or task is None:
            return None
        meta, spec = last.metadata, msgspec.structs.replace(last.spec, node_name=task.node_name)
        if change == "note":
            meta = msgspec.structs.replace(meta, annotations={**meta.annotations, "seen": phase})
        elif change == "queue":  # a lone pod's job changes queue
            moved = {**meta.annotations, QUEUE_NAME_ANNOTATION: "other"}
            meta = msgspec.structs.replace(meta, annotations=moved)
        elif change == "task-priority":  # the scheduler's priority for the task changes
            ranked = {
                **meta.annotations,
                "volcano.sh/task-priority": "7" if phase == "Running" else "3",
            }
            meta = msgspec.structs.replace(meta, annotations=ranked)
        elif change == "gates":  # another system adds or removes its scheduling gate
            gates = [] if spec.scheduling_gates else [PodSchedulingGate(name="example.com/q")]
            spec = msgspec.structs.replace(spec, scheduling_gates=gates)
        elif change == "deleting":
            meta = msgspec.structs.replace(meta, deletion_timestamp="2026-01-01T00:01:00Z")
        elif change == "cpu":  # resized in place
            resized = pod(name, cpu="3", group=None).spec.containers
            spec = msgspec.structs.replace(spec, containers=resized)
        status = msgspec.structs.replace(last.status, phase=phase)
        return cache.upsert_pod(
            msgspec.structs.replace(last, metadata=meta, spec=spec, status=status)
        )
    if kind == "bind":
        return cache.mark_binding(f"default/{arg[0]}", arg[1])
    if kind == "evict":
        return cache.mark_releasing(f"default/{arg}")
    if kind == "failed":
        return cache.bind_failed(f"default/{arg}")
    return cache.delete_pod("default", arg)


def _state(cache: ClusterCache) -> object:
    def task(t: Any) -> tuple[object, ...]:
        return (t.uid, t.job, t.status, t.node_name, t.resreq, t.pod, t.gpu_claim, t.role)

    return (
        [task(t) for t in cache.tasks.values()],
        list(cache.pods.items()),
        {k: (e.lone_pod, list(e.tasks)) for k, e in cache.jobs.items()},
        {
            n: (list(info.tasks), info.idle, info.used, info.releasing)
            for n, info in cache.nodes.items()
        },
    )


@st.composite
def contended_histories(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Lone pods mostly, more than the nodes hold, and their versions echoed back often:
    the steps after which restating and replacing list jobs in different orders."""
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(4, 40))):
        kind = draw(st.sampled_from(["pod", "pod", "echo", "echo", "echo", "bind", "delete"]))
        name = draw(st.sampled_from(NAMES))
        if kind == "pod":
            built = pod(
                name,
                cpu=draw(st.sampled_from(["2", "2", "3"])),
                group=draw(st.sampled_from([None, None, None, "g"])),
                node_name=draw(st.sampled_from(["", "", *NODES])),
                phase=draw(st.sampled_from(["Pending", "Running", "Succeeded"])),
                priority=draw(st.sampled_from([None, None, 1000])),
                created="2026-01-01T00:00:00Z",
            )
            steps.append(("pod", built))
        elif kind == "echo":
            phase = draw(st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"]))
            steps.append(("echo", (name, phase, "note")))
        elif kind == "bind":
            steps.append(("bind", (name, draw(st.sampled_from(NODES)))))
        else:
            steps.append((kind, name))
    return steps


SESSION_CONFIGS = ("default", "preempt-config.yaml", "volcano-reclaim-config.yaml")


@settings(max_examples=150, deadline=None)
@given(contended_histories(), st.sampled_from(SESSION_CONFIGS))
def test_sessions_decide_the_same_on_restated_and_replaced_pods(
    history: list[tuple[str, Any]], config: str
) -> None:
    """Restating keeps a lone pod's job in its place among the snapshot's jobs where
    replacing moves it to the end: the sessions on both decide and report the same."""
    folder = Path(__file__).parents[2] / "scenarios" / "yaml"
    loaded = ConfigSource(Registry(), None if config == "default" else folder / config).current
    restating, replacing = _fresh(), _fresh()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replacing, "_restated", lambda *_: False)
        for step in history:
            _apply(restating, step)
            _apply(replacing, step)
            kept, moved = restating.snapshot(), replacing.snapshot()
            assert sorted(kept.jobs) == sorted(moved.jobs), step
            decided, _ = run_session(kept, loaded)
            expected, _ = run_session(moved, loaded)
            assert _in_report_order(decided) == _in_report_order(expected), step


def _in_report_order(result: SessionResult) -> SessionResult:
    """The decisions as they are (binds and evictions in the order they are carried out);
    what is only reported (PodGroup conditions, why tasks wait, gauges), which a shell
    writes per object, sorted."""
    return dataclasses.replace(
        result,
        podgroups=sorted(result.podgroups, key=repr),
        unschedulable=sorted(result.unschedulable, key=repr),
        plugin_gauges=sorted(result.plugin_gauges, key=repr),
    )


@settings(max_examples=300, deadline=None)
@given(histories())
def test_restating_a_pod_leaves_the_cache_as_replacing_its_task_would(
    history: list[tuple[str, Any]],
) -> None:
    restating, replacing = _fresh(), _fresh()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replacing, "_restated", lambda *_: False)
        restating.snapshot()
        for step in history:
            assert _apply(restating, step) == _apply(replacing, step), step
            assert _state(restating) == _state(replacing), step
            for cache in (restating, replacing):
                seqs = [entry.seq for entry in cache.jobs.values()]
                assert seqs == sorted(seqs), step  # snapshots list jobs in this order
            snapshot = restating.snapshot()
            assert snapshot_differences(snapshot, restating.trial_snapshot()) == [], step


def test_a_bind_coming_back_keeps_the_cache_task_and_its_copy() -> None:
    cache = _fresh()
    cache.upsert_pod(pod("a", group="g"))
    cache.upsert_pod(pod("b", group="g"))
    cache.snapshot()
    assert cache.mark_binding("default/a", "n0")
    task = cache.tasks["default/a"]
    second = cache.snapshot()
    assert cache.upsert_pod(pod("a", group="g", node_name="n0")) is False
    assert cache.tasks["default/a"] is task
    third = cache.snapshot()
    assert third.jobs["default/g"].tasks["default/a"] is second.jobs["default/g"].tasks["default/a"]
    assert third.jobs["default/g"].tasks["default/a"].pod.spec.node_name == "n0"
    # A pod made again under the same name (another uid, the deletion missed) is a new task.
    again = pod("a", group="g", node_name="n0")
    again = msgspec.structs.replace(
        again, metadata=msgspec.structs.replace(again.metadata, uid="another")
    )
    assert cache.upsert_pod(again) is False
    assert cache.tasks["default/a"] is not task
    task = cache.tasks["default/a"]
    # Moving to another node is a new task, and a session may decide otherwise.
    assert cache.upsert_pod(pod("a", group="g", node_name="n1", phase="Running")) is True
    assert cache.tasks["default/a"] is not task


def test_a_lone_pods_bind_coming_back_keeps_its_job_in_place() -> None:
    cache = _fresh()
    cache.upsert_pod(pod("a"))
    cache.upsert_pod(pod("b"))
    cache.snapshot()
    assert cache.mark_binding("default/a", "n0")
    second = cache.snapshot()
    assert cache.upsert_pod(pod("a", node_name="n0")) is False
    third = cache.snapshot()
    assert list(third.jobs)[-2:] == ["default/a", "default/b"]  # not moved to the end
    assert third.jobs["default/a"] is second.jobs["default/a"]  # made current in place
    assert third.jobs["default/a"].tasks["default/a"].pod.spec.node_name == "n0"
    # Its pod moved to another queue: a job copied anew, in the other queue.
    moved = pod("a", node_name="n0", phase="Running")
    meta = msgspec.structs.replace(moved.metadata, annotations={QUEUE_NAME_ANNOTATION: "other"})
    cache.upsert_pod(msgspec.structs.replace(moved, metadata=meta))
    fourth = cache.snapshot()
    assert fourth.jobs["default/a"] is not third.jobs["default/a"]
    assert fourth.jobs["default/a"].queue == "other"


def test_lone_jobs_settle_under_the_configuration_named_and_again_after_a_reload() -> None:
    before, after = ConfigSource(Registry()).current, ConfigSource(Registry()).current
    assert before.configuration is not after.configuration
    cache = _fresh()
    for name in ("a", "b"):
        cache.upsert_pod(pod(name))
    placed, _ = run_session(cache.snapshot(configuration=before.configuration), before)
    for bind in placed.binds:
        assert cache.mark_binding(bind.uid, bind.node)
    settled = cache.snapshot(configuration=before.configuration)
    lone = {"default/a", "default/b"}
    assert settled.active is not None and not lone & set(settled.active)
    assert settled.settled_under is before.configuration
    # A reload: the session under the new configuration looks at every job once...
    reloaded = cache.snapshot(configuration=after.configuration)
    assert reloaded.settled_under is before.configuration
    _, ssn = run_session(reloaded, after)
    assert lone <= set(ssn.active_jobs)
    # ...and the binds coming back leave no job settled under the old one.
    for name in ("a", "b"):
        assert (
            cache.upsert_pod(pod(name, node_name=cache.tasks[f"default/{name}"].node_name)) is False
        )
    again = cache.snapshot(configuration=after.configuration)
    assert again.settled_under is after.configuration
    assert again.active is not None and not lone & set(again.active)


def test_a_gate_added_or_removed_in_place_recounts_the_jobs_gated_tasks() -> None:
    """A pending pod whose gate comes and goes is restated in the cache's own task; the
    job's copy kept across snapshots counts its gated tasks as a fresh copy does."""
    cache = _fresh()
    first = pod("a", group="g")
    cache.upsert_pod(first)
    cache.upsert_pod(pod("b", group="g"))
    task = cache.tasks["default/a"]
    job = cache.snapshot().jobs["default/g"]
    for gates, counted in (([PodSchedulingGate(name="example.com/q")], 1), ([], 0)) * 2:
        spec = msgspec.structs.replace(first.spec, scheduling_gates=gates)
        cache.upsert_pod(msgspec.structs.replace(first, spec=spec))
        assert cache.tasks["default/a"] is task  # restated, not replaced
        snapshot = cache.snapshot()
        assert snapshot.jobs["default/g"].n_pending_gated == counted
        assert snapshot_differences(snapshot, cache.trial_snapshot()) == []
        kept, job = snapshot.jobs["default/g"] is job, snapshot.jobs["default/g"]
    assert kept  # the last copies were made current in place (``_resorted``)


def test_a_waiting_lone_pod_restated_keeps_its_jobs_counts() -> None:
    """A lone pod still waiting (best-effort, gated, or neither) whose pod changes in place
    keeps its job made current in place, counted as a fresh copy would count it."""
    gate = [PodSchedulingGate(name="example.com/q")]
    cases = {
        "be": (pod("be", cpu="", memory=""), {"n_pending_best_effort": 1}),
        "gated": (pod("gated", scheduling_gates=gate), {"n_pending_gated": 1}),
        "plain": (pod("plain"), {}),
    }
    cache = _fresh()
    for made, _ in cases.values():
        cache.upsert_pod(made)
    first = cache.snapshot()
    for made, _ in cases.values():
        key = f"default/{made.metadata.name}"
        task = cache.tasks[key]
        meta = msgspec.structs.replace(made.metadata, annotations={"note": "x"})
        cache.upsert_pod(msgspec.structs.replace(made, metadata=meta))
        assert cache.tasks[key] is task  # restated: the cache's own task object
    second = cache.snapshot()
    assert snapshot_differences(second, cache.trial_snapshot()) == []
    for name, (_, counts) in cases.items():
        job = second.jobs[f"default/{name}"]
        assert job is first.jobs[f"default/{name}"]
        assert job.tasks[f"default/{name}"].pod.metadata.annotations == {"note": "x"}
        for field in ("n_pending_best_effort", "n_pending_gated", "n_ready", "n_allocated"):
            assert getattr(job, field) == counts.get(field, 0), (name, field)
