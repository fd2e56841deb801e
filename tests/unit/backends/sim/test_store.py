"""The simulated API server: uids, versions, refusals and watch order, as a client sees them."""

from __future__ import annotations

import msgspec
import pytest

from asyncsched.api import Node, Pod, PodGroup
from asyncsched.api.meta import ObjectMeta
from asyncsched.backends.sim.store import (
    AlreadyExists,
    Conflict,
    NotFound,
    ObjectStore,
    Refused,
    WatchEvent,
)


def pod(name: str, namespace: str = "default", generate: str = "") -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace=namespace, generate_name=generate))


def store() -> tuple[ObjectStore, list[WatchEvent]]:
    made = ObjectStore(clock=lambda: 0.0)
    seen: list[WatchEvent] = []
    made.watch((Pod, Node), seen.append)
    return made, seen


def test_every_create_gets_its_own_uid_even_at_one_instant() -> None:
    s, _ = store()
    uids = {s.create(pod(f"p{i}"), actor="user").metadata.uid for i in range(500)}
    uids.add(s.create(Node(metadata=ObjectMeta(name="p0")), actor="user").metadata.uid)
    assert len(uids) == 501


def test_uids_repeat_from_run_to_run() -> None:
    first = [store()[0].create(pod(f"p{i}"), actor="user").metadata.uid for i in range(3)]
    again = [store()[0].create(pod(f"p{i}"), actor="user").metadata.uid for i in range(3)]
    assert first == again


def test_a_name_taken_is_refused_and_a_user_uid_is_not_kept() -> None:
    s, _ = store()
    created = s.create(pod("a"), actor="user")
    with pytest.raises(AlreadyExists):
        s.create(pod("a"), actor="user")
    assert s.create(pod("a", namespace="other"), actor="user").metadata.uid != created.metadata.uid
    forged = Pod(metadata=ObjectMeta(name="b", namespace="default", uid=created.metadata.uid))
    assert s.create(forged, actor="user").metadata.uid != created.metadata.uid


def test_generate_name_draws_distinct_names_repeatably() -> None:
    names = [store()[0].create(pod("", generate="web-"), actor="rs").metadata.name]
    s, _ = store()
    drawn = [s.create(pod("", generate="web-"), actor="rs").metadata.name for _ in range(50)]
    assert len(set(drawn)) == 50 and drawn[0] == names[0]
    assert all(n.startswith("web-") and len(n) == len("web-") + 5 for n in drawn)
    with pytest.raises(Refused):
        s.create(pod(""), actor="rs")


def test_a_write_from_an_old_version_is_a_conflict() -> None:
    s, _ = store()
    v1 = s.create(pod("a"), actor="user")
    v2 = s.update(msgspec.structs.replace(v1, spec=msgspec.structs.replace(v1.spec, node_name="n")),
                  actor="scheduler")  # fmt: skip
    assert int(v2.metadata.resource_version) > int(v1.metadata.resource_version)
    with pytest.raises(Conflict):
        s.update(msgspec.structs.replace(v1, status=msgspec.structs.replace(v1.status,
                 phase="Running")), actor="kubelet")  # fmt: skip
    with pytest.raises(NotFound):
        s.update(pod("ghost"), actor="user")


def test_a_write_that_changes_nothing_is_no_write() -> None:
    s, seen = store()
    v1 = s.create(pod("a"), actor="user")
    s.deliver()
    assert s.update(v1, actor="user") is v1
    assert not s.pending() and len(seen) == 1


def test_delete_with_uid_spares_a_newer_object_of_that_name() -> None:
    s, _ = store()
    old = s.create(pod("a"), actor="user")
    s.delete(Pod, "default/a", actor="gc")
    s.create(pod("a"), actor="user")
    assert s.delete(Pod, "default/a", actor="gc", uid=old.metadata.uid) is None
    assert s.get(Pod, "default/a") is not None


def test_watchers_see_every_change_in_write_order_including_their_own() -> None:
    s = ObjectStore(clock=lambda: 0.0)
    seen: list[tuple[str, str]] = []

    def follow(change: WatchEvent) -> None:
        seen.append((change.event, change.key))
        if change.key == "default/a" and change.event == "ADDED":
            s.create(pod("b"), actor="controller")

    s.watch((Pod,), follow)
    s.create(pod("a"), actor="user")
    s.delete(Pod, "default/a", actor="user")
    assert seen == []  # nothing is called back in the middle of a write
    s.deliver()
    assert seen == [("ADDED", "default/a"), ("DELETED", "default/a"), ("ADDED", "default/b")]


def test_admission_can_default_or_refuse() -> None:
    s, _ = store()

    def phase_pending(pg: PodGroup) -> PodGroup:
        if pg.spec.min_member < 0:
            raise Refused("minMember must not be negative")
        return msgspec.structs.replace(pg, status=msgspec.structs.replace(pg.status,
                                       phase="Pending"))  # fmt: skip

    s.admit(PodGroup, phase_pending)
    made = s.create(PodGroup(metadata=ObjectMeta(name="g", namespace="default")), actor="user")
    assert made.status.phase == "Pending"
    bad = PodGroup(metadata=ObjectMeta(name="h", namespace="default"))
    bad = msgspec.structs.replace(bad, spec=msgspec.structs.replace(bad.spec, min_member=-1))
    with pytest.raises(Refused):
        s.create(bad, actor="user")
    assert s.get(PodGroup, "default/h") is None
