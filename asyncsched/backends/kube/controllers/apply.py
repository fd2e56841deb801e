"""Carrying out the Job controller's actions through the API, idempotently.

Every create tolerates AlreadyExists (a retry, or a decision made on a picture
that had not yet seen our last create) and every delete tolerates NotFound, so
handling a key twice is harmless. Owner references come from the core: the
API server's garbage collector removes a Job's objects when it goes.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from asyncsched.api.batch import Job
from asyncsched.api.core import Pod
from asyncsched.api.volcano import PodGroup
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.store import PodStore
from asyncsched.backends.kube.status import StatusWriter, now_rfc3339
from asyncsched.controllers.job import (
    Action,
    CreateConfigMap,
    CreateNetworkPolicy,
    CreatePod,
    CreatePodGroup,
    CreateSecret,
    CreateService,
    DeleteCommand,
    DeleteJob,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    Event,
    UpdatePodGroup,
)

__all__ = ["Applier", "collection", "create", "delete", "object_path", "podgroup_body"]

JOB_API = "/apis/batch.volcano.sh/v1alpha1"
PODGROUP_API = "/apis/scheduling.volcano.sh/v1beta1"
COMMAND_API = "/apis/bus.volcano.sh/v1alpha1"
_IRREGULAR = {"NetworkPolicy": "networkpolicies"}


def collection(api_version: str, kind: str, namespace: str) -> str:
    """The REST collection of a namespaced kind (``v1`` is the core group)."""
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    plural = _IRREGULAR.get(kind, kind.lower() + "s")
    return f"{prefix}/namespaces/{namespace}/{plural}"


def object_path(api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{collection(api_version, kind, namespace)}/{name}"


def podgroup_body(pg: PodGroup) -> dict[str, Any]:
    """A PodGroup as JSON for a create (defaults are omitted in encoding, apiVersion too)."""
    body: dict[str, Any] = msgspec.to_builtins(pg)
    body.update(apiVersion=pg.api_version, kind="PodGroup")
    return body


async def create(client: KubeClient, obj: dict[str, Any]) -> bytes | None:
    """POST ``obj``; None when it exists already."""
    meta = obj["metadata"]
    path = collection(obj["apiVersion"], obj["kind"], meta["namespace"])
    try:
        return await client.post(path, json.dumps(obj).encode())
    except KubeError as exc:
        if exc.status == 409:
            return None
        raise


async def delete(client: KubeClient, path: str, body: dict[str, Any] | None = None) -> bool:
    """DELETE; False when it was gone already (or its uid no longer matches)."""
    try:
        await client.request(
            "DELETE", path, body=json.dumps(body).encode() if body is not None else None
        )
    except KubeError as exc:
        if exc.status in (404, 409):
            return False
        raise
    return True


class Applier:
    """Sends one Job's actions in order; the first refusal stops the rest (the caller retries)."""

    def __init__(self, client: KubeClient, pods: PodStore, events: StatusWriter) -> None:
        self.client = client
        self.pods = pods
        self.events = events
        self.writes = 0

    async def apply(self, job: Job, actions: list[Action]) -> None:
        for action in actions:
            await self._one(job, action)

    async def _one(self, job: Job, action: Action) -> None:
        client = self.client
        if isinstance(action, Event):
            meta = job.metadata
            self.events.event(
                "Job", meta.namespace, meta.name, meta.uid, action.reason, action.message,
                action.type, api_version=job.api_version,
            )  # fmt: skip
            return
        self.writes += 1
        if isinstance(action, CreatePod):
            answer = await create(client, action.pod)
            if answer is not None:
                self.pods.offer(msgspec.json.decode(answer, type=Pod))
        elif isinstance(action, DeletePod):
            path = object_path("v1", "Pod", action.namespace, action.name)
            await delete(client, path)
            self.pods.mark_terminating(action.namespace, action.name, now_rfc3339())
        elif isinstance(action, CreatePodGroup):
            await create(client, podgroup_body(action.podgroup))
        elif isinstance(action, UpdatePodGroup):
            meta = action.podgroup.metadata
            path = f"{PODGROUP_API}/namespaces/{meta.namespace}/podgroups/{meta.name}"
            spec = msgspec.to_builtins(action.podgroup.spec)
            try:
                await client.patch(path, json.dumps({"spec": spec}).encode())
            except KubeError as exc:
                if exc.status != 404:
                    raise
        elif isinstance(action, DeletePodGroup):
            await delete(client, f"{PODGROUP_API}/namespaces/{action.namespace}/podgroups/"
                         f"{action.name}")  # fmt: skip
        elif isinstance(action, CreateService):
            await create(client, action.service)
        elif isinstance(action, CreateSecret):
            await create(client, action.secret)
        elif isinstance(action, CreateNetworkPolicy):
            await create(client, action.network_policy)
        elif isinstance(action, CreateConfigMap):
            await self._config_map(action.config_map)
        elif isinstance(action, DeleteObject):
            path = object_path(action.api_version, action.kind, action.namespace, action.name)
            await delete(client, path)
        elif isinstance(action, DeleteCommand):
            await delete(client, f"{COMMAND_API}/namespaces/{action.namespace}/commands/"
                         f"{action.name}")  # fmt: skip
        elif isinstance(action, DeleteJob):
            body = {"preconditions": {"uid": action.uid}, "propagationPolicy": "Background"}
            await delete(client, f"{JOB_API}/namespaces/{action.namespace}/jobs/{action.name}",
                         body)  # fmt: skip

    async def _config_map(self, config_map: dict[str, Any]) -> None:
        """Create, or replace the data of the one there (a stale host list must not survive)."""
        if await create(self.client, config_map) is not None:
            return
        meta = config_map["metadata"]
        path = object_path("v1", "ConfigMap", meta["namespace"], meta["name"])
        current = json.loads(await self.client.get(path))
        if current.get("data") == config_map.get("data"):
            return
        current["data"] = config_map.get("data", {})
        await self.client.put(path, json.dumps(current).encode())
