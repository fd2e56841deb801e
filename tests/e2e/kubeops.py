"""What the test bed does through the API (kubernetes_asyncio, no kubectl): CRDs, KWOK nodes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
NOT_READY_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


async def wait_for(
    check: Callable[[], Awaitable[bool]], timeout: float, what: str, interval: float = 0.2
) -> None:
    """Polls check() until it is true; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(interval)


async def raw(call: Awaitable[Any]) -> dict[str, Any]:
    """The JSON body of a call made with _preload_content=False (no generated models)."""
    response = await call
    try:
        body = await response.read()
    finally:
        response.release()
    if response.status >= 400:  # not raised for us without preloading
        exc = ApiException(status=response.status, reason=response.reason)
        exc.body = body.decode(errors="replace")
        raise exc
    data: dict[str, Any] = json.loads(body)
    return data


def crd_documents(files: Iterable[Path]) -> list[dict[str, Any]]:
    docs = []
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


async def apply_crds(api: ApiClient, files: Iterable[Path], timeout: float = 60) -> list[str]:
    """Creates (or replaces) every CRD in files and waits until all are Established."""
    ext = client.ApiextensionsV1Api(api)
    names = []
    for doc in crd_documents(files):
        name = doc["metadata"]["name"]
        try:
            await raw(ext.create_custom_resource_definition(doc, _preload_content=False))
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = await raw(ext.read_custom_resource_definition(name, _preload_content=False))
            doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await raw(ext.replace_custom_resource_definition(name, doc, _preload_content=False))
        names.append(name)

    async def established() -> bool:
        for name in names:
            try:
                crd = await raw(ext.read_custom_resource_definition(name, _preload_content=False))
            except ApiException as exc:
                if exc.status == 404:  # not visible yet
                    return False
                raise
            conditions = crd.get("status", {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    await wait_for(established, timeout, f"CRDs {names} to be Established")
    return names


def kwok_pod(
    label: str,
    name: str,
    requests: Mapping[str, str],
    limits: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pod for asyncsched (schedulerName volcano) on the KWOK nodes labelled e2e=label."""
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {
            "schedulerName": "volcano",
            "nodeSelector": {"e2e": label},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            "containers": [{"name": "main", "image": "main", "resources": {
                "requests": dict(requests), "limits": dict(limits),
            }}],
        },
    }  # fmt: skip


def node_manifest(
    name: str,
    capacity: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """A Node KWOK manages (annotation kwok.x-k8s.io/node=fake, label type=kwok)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": dict(KWOK_ANNOTATION),
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": {"taints": [dict(t) for t in taints]},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }


def node_is_ready(node: client.V1Node) -> bool:
    """Ready=True and the node-lifecycle controller has lifted the not-ready taint."""
    conditions = node.status.conditions if node.status else None
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions or [])
    taints = {t.key for t in (node.spec.taints or [])}
    return ready and not (taints & NOT_READY_TAINTS)


async def wait_nodes_ready(api: ApiClient, names: Iterable[str], timeout: float = 90) -> None:
    core = client.CoreV1Api(api)
    wanted = set(names)

    async def ready() -> bool:
        nodes = (await core.list_node(label_selector="type=kwok")).items
        return wanted <= {n.metadata.name for n in nodes if node_is_ready(n)}

    await wait_for(ready, timeout, f"nodes {sorted(wanted)} to be Ready", interval=0.5)


async def create_nodes(
    api: ApiClient,
    names: Iterable[str],
    capacity: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    timeout: float = 90,
) -> list[str]:
    """Creates KWOK nodes and waits until they are Ready and schedulable."""
    core = client.CoreV1Api(api)
    created = list(names)
    for name in created:
        await core.create_node(node_manifest(name, capacity, labels, taints))
    await wait_nodes_ready(api, created, timeout)
    return created


async def wait_service_account(api: ApiClient, namespace: str, timeout: float = 60) -> None:
    """Waits for the controller-manager to create the namespace's `default` ServiceAccount."""
    core = client.CoreV1Api(api)

    async def exists() -> bool:
        try:
            await core.read_namespaced_service_account("default", namespace)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    await wait_for(exists, timeout, f"ServiceAccount {namespace}/default")
