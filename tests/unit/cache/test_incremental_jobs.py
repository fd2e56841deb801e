"""Shortcuts of a steady-state session decide exactly as the plain paths.

The snapshot hands out the previous session's JobInfo of a job nothing changed,
and proportion/overcommit sum their per-queue books as plain integers (with
shortcuts for jobs holding exactly their minimum); random clusters, changed
between sessions as a backend would, must give the same session results as
a snapshot rebuilt from scratch and as the books summed Resource by Resource.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from asyncsched.api.volcano import PodGroupStatus
from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.framework import Registry, Session, run_session
from asyncsched.framework.cycle import load_configuration
from asyncsched.model import Resource, TaskStatus
from asyncsched.plugins._resources import exceeded_part, job_min_resources
from asyncsched.plugins.proportion import ProportionPlugin
from tests.builders import node, pod, podgroup, queue


def _cluster(seed: int) -> ClusterCache:
    rng = random.Random(seed)
    cache = ClusterCache()
    for q in range(3):
        cache.upsert_queue(queue(f"q{q}", weight=q + 1))
    n_nodes = rng.randint(3, 20)
    for i in range(n_nodes):
        cache.upsert_node(node(f"n{i:03d}", cpu=str(rng.choice([2, 4, 8])), memory="16Gi"))
    for j in range(rng.randint(5, 40)):
        _add_job(cache, rng, f"j{j}", n_nodes)
    return cache


def _add_job(cache: ClusterCache, rng: random.Random, name: str, n_nodes: int) -> None:
    q = f"q{rng.randrange(3)}"
    size = rng.randint(1, 4)
    cpu = rng.choice(["500m", "1", "2"])
    minimum = rng.randint(1, size)
    resources = {"cpu": cpu, "memory": "1Gi"} if rng.random() < 0.6 else None
    if resources is not None and minimum > 1 and rng.random() < 0.5:
        resources = {"cpu": str(minimum), "memory": f"{minimum}Gi"}
    phase = rng.choice(["Pending", "Inqueue", "Running"])
    cache.upsert_podgroup(
        podgroup(name, minimum, namespace=q, queue=q, phase=phase, min_resources=resources)
    )
    for t in range(size):
        bound = phase == "Running" and rng.random() < 0.7
        cache.upsert_pod(
            pod(
                f"{name}-{t}",
                cpu=cpu if rng.random() < 0.9 else "",
                memory="1Gi" if rng.random() < 0.9 else "",
                namespace=q,
                group=name,
                node_name=f"n{rng.randrange(n_nodes):03d}" if bound else "",
                phase="Running" if bound else "Pending",
            )
        )


WITHOUT_GANG = load_configuration(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
""",
    Registry(),
)


ENQUEUE_ONLY = load_configuration(
    """
actions: "enqueue"
tiers:
- plugins:
  - name: gang
  - name: proportion
""",
    Registry(),
)


def _sessions(seed: int, fresh: bool) -> list[Any]:
    """Sessions on a changing cache under changing configurations (reloads), each of which
    must look again at the jobs found settled under another."""
    rng = random.Random(seed * 7919)
    cache = _cluster(seed)
    default = ConfigSource(Registry()).current
    out: list[Any] = []
    configurations = [default, default, WITHOUT_GANG, default, ENQUEUE_ONLY, ENQUEUE_ONLY]
    for n in range(12):
        if fresh:  # forget what the previous snapshot handed out: rebuild everything
            cache.changes.everything = True
        loaded = configurations[n % len(configurations)]
        result, _ = run_session(cache.snapshot(now=100.0 + n), loaded, uid=f"s{n}")
        out.append((result.binds, result.unschedulable, result.podgroups, result.enqueued))
        for bind in result.binds:
            if rng.random() < 0.9:
                cache.mark_binding(bind.uid, bind.node)
        for update in result.podgroups:
            if rng.random() < 0.8:  # written back whole, as the shells do
                status = PodGroupStatus(
                    phase=update.phase,
                    conditions=list(update.conditions),
                    running=update.running,
                    succeeded=update.succeeded,
                    failed=update.failed,
                )
                cache.set_podgroup_status(update.job, status)
        if rng.random() < 0.5 and cache.tasks:
            victim = rng.choice(sorted(cache.tasks))
            namespace, name = victim.split("/")
            cache.delete_pod(namespace, name)
        if rng.random() < 0.5:
            _add_job(cache, rng, f"k{n}", len(cache.nodes))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_reused_jobs_decide_as_a_fresh_snapshot(seed: int) -> None:
    assert _sessions(seed, fresh=False) == _sessions(seed, fresh=True)


def test_jobs_settle_and_a_new_configuration_looks_at_them_again() -> None:
    cache = _cluster(1)
    default = ConfigSource(Registry()).current
    for n in range(4):  # bind what fits and write the statuses back, until nothing changes
        result, _ = run_session(cache.snapshot(), default, uid=f"s{n}")
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
        for update in result.podgroups:
            cache.set_podgroup_status(
                update.job,
                PodGroupStatus(
                    phase=update.phase,
                    conditions=list(update.conditions),
                    running=update.running,
                    succeeded=update.succeeded,
                    failed=update.failed,
                ),
            )
    snapshot = cache.snapshot()
    assert snapshot.active is not None and len(snapshot.active) < len(snapshot.jobs)
    settled = [job for key, job in snapshot.jobs.items() if key not in snapshot.active]
    _, ssn = run_session(snapshot, WITHOUT_GANG)
    assert ssn.active_jobs is snapshot.jobs  # another configuration: every job looked at
    assert all(job.touched for job in settled)
    again = cache.snapshot()
    active = again.active if again.active is not None else again.jobs  # None: every job
    for job in settled:  # looked at again: a new copy, or this one made fresh, and active
        fresh = again.jobs[job.uid]
        assert fresh.uid in active
        assert not fresh.touched and fresh.settled_under is None and fresh.books_memo is None


def test_unchanged_jobs_are_handed_out_again() -> None:
    cache = _cluster(3)
    loaded = ConfigSource(Registry()).current
    run_session(cache.snapshot(), loaded)
    first = cache.snapshot()
    second = cache.snapshot()
    assert any(second.jobs[k] is job for k, job in first.jobs.items())


@pytest.mark.parametrize("seed", range(30))
def test_proportion_books_match_resource_sums(seed: int) -> None:
    cache = _cluster(seed)
    loaded = ConfigSource(Registry()).current
    _, ssn = run_session(cache.snapshot(), loaded)
    for bind in ssn.result.binds:
        cache.mark_binding(bind.uid, bind.node)
    snapshot = cache.snapshot()
    ssn = Session(snapshot, loaded.configuration, loaded.build_plugins())
    plugin = ProportionPlugin(loaded.plugin_builders[0][2])
    plugin._build(ssn)
    from asyncsched.plugins._resources import reserved_for_job

    for name, attr in plugin.queues.items():
        allocated = request = inqueue = elastic = Resource()
        for job in snapshot.jobs.values():
            if job.queue != name:
                continue
            allocated = allocated + job.allocated
            request = request + job.allocated
            for task in job.tasks_in(TaskStatus.PENDING):
                request = request + task.resreq
            inqueue = inqueue + reserved_for_job(job, whole_minimum_when_inqueue=False)
            elastic = elastic + exceeded_part(job.allocated, job_min_resources(job) or Resource())
        assert (attr.allocated, attr.request, attr.inqueue, attr.elastic) == (
            allocated,
            request,
            inqueue,
            elastic,
        )
