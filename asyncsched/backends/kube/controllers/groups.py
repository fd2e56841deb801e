"""PodGroups for plain pods (Deployments, StatefulSets, bare pods) of our scheduler names.

The core decides the PodGroup; here it is created (AlreadyExists is fine: the
replicas of one ReplicaSet share it) and the pod annotated with its name.
A ReplicaSet scaled to zero loses its PodGroup, as in Volcano; otherwise the
garbage collector removes a PodGroup with its owner.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Container

import msgspec

from asyncsched.api.core import Pod
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.volcano import GROUP_NAME_ANNOTATION
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.apply import PODGROUP_API, create, delete, podgroup_body
from asyncsched.backends.kube.controllers.store import PodStore, Store
from asyncsched.backends.kube.controllers.workqueue import WorkQueue
from asyncsched.controllers.job import owning_job
from asyncsched.controllers.podgroup import podgroup_for_pod

__all__ = ["PlainPodGroupController", "ReplicaSet"]

log = logging.getLogger(__name__)


class ReplicaSetSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    replicas: int | None = None


class ReplicaSet(msgspec.Struct, rename="camel", omit_defaults=True):
    """Only what the PodGroup controller reads: annotations and the replica count."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)


class PlainPodGroupController:
    def __init__(
        self,
        client: KubeClient,
        pods: PodStore,
        replica_sets: Store[ReplicaSet],
        scheduler_names: Container[str],
    ) -> None:
        self.client = client
        self.pods = pods
        self.replica_sets = replica_sets
        self.scheduler_names = scheduler_names
        self.queue: WorkQueue[tuple[str, str], None] = WorkQueue()
        self.created = 0

    def _wants_group(self, pod: Pod) -> bool:
        return (
            pod.spec.scheduler_name in self.scheduler_names
            and not pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
            and pod.metadata.deletion_timestamp is None
            and owning_job(pod) is None
        )

    def pod_changed(self, pod: Pod) -> None:
        if self._wants_group(pod):
            self.queue.add((pod.metadata.namespace, pod.metadata.name))

    def resync_all(self) -> None:
        for pod in self.pods:
            self.pod_changed(pod)

    async def replica_set_changed(self, rs: ReplicaSet) -> None:
        """A ReplicaSet at zero replicas needs no PodGroup (old ones after a rollout)."""
        if rs.spec.replicas == 0:
            meta = rs.metadata
            path = f"{PODGROUP_API}/namespaces/{meta.namespace}/podgroups/podgroup-{meta.uid}"
            try:
                await delete(self.client, path)
            except KubeError as exc:
                log.warning("cannot delete the PodGroup of ReplicaSet %s: %s", meta.name, exc)

    def _owner_annotations(self, pod: Pod) -> dict[str, str]:
        owner = next((r for r in pod.metadata.owner_references if r.controller), None)
        if owner is None or owner.kind != "ReplicaSet":
            return {}
        rs = self.replica_sets.get(pod.metadata.namespace, owner.name)
        return dict(rs.metadata.annotations) if rs is not None else {}

    async def handle(self, key: tuple[str, str], _: list[None]) -> None:
        pod = self.pods.get(*key)
        if pod is None or not self._wants_group(pod):
            return
        planned = podgroup_for_pod(
            pod, self.scheduler_names, owner_annotations=self._owner_annotations(pod)
        )
        if planned is None:
            return
        try:
            if await create(self.client, podgroup_body(planned.podgroup)) is not None:
                self.created += 1
            patch = {"metadata": {"annotations": planned.pod_annotations}}
            answer = await self.client.patch(
                f"/api/v1/namespaces/{key[0]}/pods/{key[1]}", json.dumps(patch).encode()
            )
        except KubeError as exc:
            if exc.status == 404:  # the pod went meanwhile
                return
            if exc.namespace_terminating:  # the pod goes with its namespace
                log.debug("PodGroup for pod %s/%s: namespace is being deleted", *key)
                self.queue.forget(key)
                return
            delay = self.queue.retry(key)
            log.warning("PodGroup for pod %s/%s: %s; retrying in %.1fs", *key, exc, delay)
            return
        self.queue.forget(key)
        self.pods.offer(msgspec.json.decode(answer, type=Pod))
