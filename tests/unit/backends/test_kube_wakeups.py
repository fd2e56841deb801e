"""Which watch events of PodGroups wake the kube scheduler's loop for a session."""

from __future__ import annotations

import msgspec
from kubernetes_asyncio import client as k8s_client

from asyncsched.api import Condition, Node, ObjectMeta, Pod, PodGroup
from asyncsched.api.volcano import PodGroupSpec, PodGroupStatus
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube import KubeScheduler, SchedulerOptions
from asyncsched.backends.kube.client import KubeClient
from asyncsched.framework import Registry
from asyncsched.framework.results import PodGroupUpdate


def _podgroup(version: str, status: PodGroupStatus, min_member: int = 3) -> PodGroup:
    meta = ObjectMeta(name="pg", namespace="ns", uid="u1", resource_version=version)
    return PodGroup(metadata=meta, spec=PodGroupSpec(min_member=min_member), status=status)


async def test_the_echo_of_its_own_status_write_wakes_no_session_a_real_change_does() -> None:
    api = k8s_client.ApiClient()
    try:
        scheduler = KubeScheduler(
            KubeClient(api), ConfigSource(Registry(), None), SchedulerOptions(identity="t")
        )
        scheduler._podgroup_upserted(_podgroup("1", PodGroupStatus(phase="Pending")))
        assert scheduler.dirty.is_set(), "a new PodGroup"
        scheduler.dirty.clear()

        scheduled = Condition(type="Scheduled", status="True", transition_id="t-1")
        written = PodGroupStatus(phase="Running", conditions=[scheduled])
        scheduler.cache.set_podgroup_status("ns/pg", written)  # what a session's write does
        # the API server's answer, as the watch decodes it: a new version, same content
        echo = msgspec.json.decode(msgspec.json.encode(_podgroup("2", written)), type=PodGroup)
        scheduler._podgroup_upserted(echo)
        assert not scheduler.dirty.is_set()
        assert scheduler.cache.jobs["ns/pg"].podgroup is echo  # kept, with its version

        scheduler._podgroup_upserted(_podgroup("3", written, min_member=2))
        assert scheduler.dirty.is_set(), "a spec edited"
        scheduler.dirty.clear()
        other = PodGroupStatus(phase="Pending", conditions=[scheduled])
        scheduler._podgroup_upserted(_podgroup("4", other))
        assert scheduler.dirty.is_set(), "a status written by someone else"
    finally:
        await api.close()


def _running(count: int) -> PodGroupUpdate:
    scheduled = Condition(type="Scheduled", status="True", transition_id="t-1")
    return PodGroupUpdate("ns/pg", "ns", "pg", "Running", (scheduled,), count, 0, 0)


def _echo(version: str, status: PodGroupStatus) -> PodGroup:
    """The API server's answer to a status write, as the watch decodes it."""
    return msgspec.json.decode(msgspec.json.encode(_podgroup(version, status)), type=PodGroup)


async def test_the_late_echo_of_an_older_status_write_leaves_the_newer_one_and_wakes_nothing() -> (
    None
):
    """Two sessions write a gang's running count 3, then 7; the watch brings back 3 after the
    second write. Taken in, it would put the count back to 3 and wake a session that writes
    7 again, whose echo would come after the next write: a loop for as long as a burst lasts."""
    api = k8s_client.ApiClient()
    try:
        scheduler = KubeScheduler(
            KubeClient(api), ConfigSource(Registry(), None), SchedulerOptions(identity="t")
        )
        scheduler._podgroup_upserted(_podgroup("1", PodGroupStatus(phase="Pending")))
        scheduler.dirty.clear()
        assert scheduler.podgroup_status(_running(3))
        three = scheduler.cache.jobs["ns/pg"].podgroup
        assert scheduler.podgroup_status(_running(7))
        seven = scheduler.cache.jobs["ns/pg"].podgroup
        assert three is not None and seven is not None and seven.status.running == 7

        scheduler._podgroup_upserted(_echo("2", three.status))
        assert not scheduler.dirty.is_set(), "the older write's echo"
        kept = scheduler.cache.jobs["ns/pg"].podgroup
        assert kept is not None and kept.status.running == 7
        assert kept.metadata.resource_version == "2"
        assert scheduler.metrics.stale_echoes._value.get() == 1

        scheduler._podgroup_upserted(_echo("3", seven.status))
        assert not scheduler.dirty.is_set(), "the newest write's echo"
        scheduler._podgroup_upserted(_echo("4", three.status))
        assert scheduler.dirty.is_set(), "the same old status again, after every echo: not ours"
        back = scheduler.cache.jobs["ns/pg"].podgroup
        assert back is not None and back.status.running == 3
    finally:
        await scheduler.status.drain(grace=0)
        await api.close()


async def test_deleting_a_podgroup_wakes_a_session_only_if_it_had_pods_or_held_room() -> None:
    """A namespace swept away deletes its gangs' pods, then its PodGroups: a thousand
    deletions of PodGroups with nothing left to decide must not run a session each."""
    api = k8s_client.ApiClient()
    try:
        scheduler = KubeScheduler(
            KubeClient(api), ConfigSource(Registry(), None), SchedulerOptions(identity="t")
        )

        def deleted(phase: str, min_member: int = 3, with_pod: bool = False) -> bool:
            scheduler._podgroup_upserted(_podgroup("1", PodGroupStatus(phase=phase), min_member))
            if with_pod:
                pod = {
                    "metadata": {
                        "name": "p", "namespace": "ns", "uid": "p1",
                        "annotations": {"scheduling.k8s.io/group-name": "pg"},
                    },
                    "spec": {"schedulerName": "volcano", "containers": [{"name": "c"}]},
                }  # fmt: skip
                scheduler._pod_upserted(msgspec.convert(pod, Pod))
            scheduler.dirty.clear()
            scheduler._podgroup_deleted("ns", "pg")
            woke = scheduler.dirty.is_set()
            if with_pod:
                scheduler._pod_deleted("ns", "p")
            assert "ns/pg" not in scheduler.cache.jobs
            return woke

        assert not deleted("Running"), "a gang whose pods are gone"
        assert not deleted("Pending"), "never admitted: held nothing"
        assert deleted("Inqueue"), "admitted: its minResources were held for it"
        assert deleted("Running", min_member=0), "a gang of zero holds its minimum"
        assert deleted("Running", with_pod=True), "its pods are still there"
    finally:
        await api.close()


def _node(version: str, heartbeat: str, cpu: str = "8") -> Node:
    """A Node as the watch decodes it; the heartbeat stamp is in the JSON, not in the Struct."""
    raw = {
        "kind": "Node",
        "metadata": {"name": "n1", "uid": "n-u1", "resourceVersion": version},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat},
            ],
        },
    }
    return msgspec.json.decode(msgspec.json.encode(raw), type=Node)


async def test_a_node_heartbeat_wakes_no_session_a_changed_node_does() -> None:
    api = k8s_client.ApiClient()
    try:
        scheduler = KubeScheduler(
            KubeClient(api), ConfigSource(Registry(), None), SchedulerOptions(identity="t")
        )
        scheduler._node_upserted(_node("1", "2026-11-27T06:00:00Z"))
        assert scheduler.dirty.is_set(), "a new node"
        scheduler.dirty.clear()
        generation = scheduler.cache.generation

        scheduler._node_upserted(_node("2", "2026-11-27T06:10:00Z"))
        assert not scheduler.dirty.is_set(), "only the version and the heartbeat moved"
        assert scheduler.cache.generation == generation, "the cache is left as it was"

        scheduler._node_upserted(_node("3", "2026-11-27T06:20:00Z", cpu="4"))
        assert scheduler.dirty.is_set(), "its allocatable changed"
        assert scheduler.cache.nodes["n1"].node.metadata.resource_version == "3"
        scheduler.dirty.clear()

        scheduler._node_deleted("", "n1")
        assert scheduler.dirty.is_set() and "n1" not in scheduler.cache.nodes
    finally:
        await api.close()
