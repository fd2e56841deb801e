"""Which watch events of PodGroups wake the kube scheduler's loop for a session."""

from __future__ import annotations

import msgspec
from kubernetes_asyncio import client as k8s_client

from asyncsched.api import Condition, ObjectMeta, PodGroup
from asyncsched.api.volcano import PodGroupSpec, PodGroupStatus
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube import KubeScheduler, SchedulerOptions
from asyncsched.backends.kube.client import KubeClient
from asyncsched.framework import Registry


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
