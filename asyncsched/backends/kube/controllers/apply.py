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
from asyncsched.controllers.job import Action, Event
from asyncsched.controllers.job.handler import carry_out

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
        requests = _Requests(self, job)
        for action in actions:
            await carry_out(action, requests)


class _Requests:
    """The Job controller's actions as API requests (an ActionHandler of awaitables)."""

    def __init__(self, applier: Applier, job: Job) -> None:
        self.applier = applier
        self.client = applier.client
        self.job = job

    async def create(self, kind: str, manifest: dict[str, Any]) -> None:
        self.applier.writes += 1
        answer = await create(self.client, manifest)
        if kind == "Pod" and answer is not None:
            self.applier.pods.offer(msgspec.json.decode(answer, type=Pod))

    async def create_podgroup(self, podgroup: PodGroup) -> None:
        self.applier.writes += 1
        await create(self.client, podgroup_body(podgroup))

    async def update_podgroup_spec(self, podgroup: PodGroup) -> None:
        self.applier.writes += 1
        meta = podgroup.metadata
        path = f"{PODGROUP_API}/namespaces/{meta.namespace}/podgroups/{meta.name}"
        spec = msgspec.to_builtins(podgroup.spec)
        try:
            await self.client.patch(path, json.dumps({"spec": spec}).encode())
        except KubeError as exc:
            if exc.status != 404:
                raise

    async def upsert_config_map(self, manifest: dict[str, Any]) -> None:
        """Create, or replace the data of the one there (a stale host list must not survive)."""
        self.applier.writes += 1
        if await create(self.client, manifest) is not None:
            return
        meta = manifest["metadata"]
        path = object_path("v1", "ConfigMap", meta["namespace"], meta["name"])
        current = json.loads(await self.client.get(path))
        if current.get("data") == manifest.get("data"):
            return
        current["data"] = manifest.get("data", {})
        await self.client.put(path, json.dumps(current).encode())

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, reason: str, uid: str
    ) -> None:
        self.applier.writes += 1
        path = object_path(api_version, kind, namespace, name)
        body = {"preconditions": {"uid": uid}, "propagationPolicy": "Background"} if uid else None
        await delete(self.client, path, body)
        if kind == "Pod":
            self.applier.pods.mark_terminating(namespace, name, now_rfc3339())

    async def annotate_pod(self, namespace: str, name: str, key: str, value: str) -> None:
        self.applier.writes += 1
        body = json.dumps({"metadata": {"annotations": {key: value}}}).encode()
        try:
            await self.client.patch(object_path("v1", "Pod", namespace, name), body)
        except KubeError as exc:
            if exc.status != 404:
                raise

    async def event(self, event: Event) -> None:
        meta = self.job.metadata
        self.applier.events.event(
            "Job", meta.namespace, meta.name, meta.uid, event.reason, event.message,
            event.type, api_version=self.job.api_version,
        )  # fmt: skip
