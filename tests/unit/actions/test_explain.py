"""``explain`` on a cluster picture built by hand: what it says when nothing has run yet, and
where the queue's figures come from when no queue-sharing plugin books them."""

from __future__ import annotations

from asyncsched.actions.explain import PLACED, explain
from asyncsched.framework import Registry, load_configuration
from asyncsched.framework.cycle import LoadedConfiguration
from tests import builders as b

NO_QUEUE_PLUGIN = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""
DEFAULT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def loaded(text: str) -> LoadedConfiguration:
    return load_configuration(text, Registry(), "test")


def test_a_pod_no_session_has_seen_yet_is_placed_by_the_one_explain_runs() -> None:
    cache = b.cache_of(b.node("n1", cpu="4"), b.podgroup("g", 1), b.pod("p", cpu="2", group="g"))

    found = explain(cache, loaded(DEFAULT), "default", "p", 0.0)

    assert found.verdict == "not waiting: the scheduler places it now, on n1"
    assert [(p.name, p.node, p.reason) for p in found.pods] == [("default/p", "n1", PLACED)]
    assert found.nodes == [] and found.explained_pod == ""
    again = explain(cache, loaded(DEFAULT), "default", "p", 0.0)
    assert again == found, "nothing was carried out: the cache is as it was"


def test_without_a_queue_plugin_the_queue_is_read_from_its_spec_and_its_pods() -> None:
    cache = b.cache_of(
        b.node("n1", cpu="4"),
        b.queue("team", capability={"cpu": "3"}),
        b.podgroup("run", 1, queue="team"),
        b.pod("running", cpu="2", group="run", node_name="n1", phase="Running"),
        b.podgroup("wait", 1, queue="team"),
        b.pod("waiting", cpu="3", group="wait"),
    )

    found = explain(cache, loaded(NO_QUEUE_PLUGIN), "default", "waiting", 0.0)

    queue = found.queue
    assert queue is not None and queue.booked_by == "spec"
    assert queue.allocated == {"cpu": "2", "memory": "1Gi"}
    assert (queue.capability, queue.deserved) == ({"cpu": "3"}, None)
    assert found.verdict.startswith("0/1 nodes are unavailable: 1 Insufficient cpu")
    assert [(v.node, v.refused_by, v.reason) for v in found.nodes] == [
        ("n1", "resources", "Insufficient cpu")
    ]
