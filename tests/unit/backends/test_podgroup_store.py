"""The Queue controller's counts, kept by the PodGroup store as PodGroups change, equal a
count over every PodGroup the store holds, so each queue's status is the same."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.backends.kube.controllers.store import PodGroupStore
from asyncsched.controllers.queue import queue_status, queue_status_from_counts
from tests.builders import podgroup, queue

QUEUES = ("default", "team-a", "team-b")

changes = st.lists(
    st.tuples(
        st.sampled_from(("upsert", "upsert", "delete")),
        st.sampled_from(("g1", "g2", "g3", "g4")),
        st.sampled_from(("ns1", "ns2")),
        st.sampled_from(QUEUES),
        st.sampled_from(("Pending", "Inqueue", "Running", "Completed", "Unknown", "")),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(changes)
def test_kept_counts_give_the_status_a_recount_gives(steps: list[tuple[Any, ...]]) -> None:
    store = PodGroupStore()
    for kind, name, namespace, queue_name, phase in steps:
        if kind == "delete":
            store.delete(namespace, name)
        else:
            store.upsert(podgroup(name, namespace=namespace, queue=queue_name, phase=phase))
        for q in QUEUES:
            for state, action in (("Open", ""), ("Closing", ""), ("Open", "CloseQueue")):
                made = queue(q)
                made.status.state = state
                assert queue_status_from_counts(made, store.counts(q), action) == queue_status(
                    made, list(store), action
                ), (q, state, action)
