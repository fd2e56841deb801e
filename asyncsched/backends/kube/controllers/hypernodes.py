"""HyperNode discovery's shell: node labels and Volcano's controller configuration in,
HyperNodes created, updated and deleted through the API.

Every change that may change the answer (a node added, removed or relabelled, the
configuration edited, a discovered HyperNode deleted by someone) queues one full
rediscovery, as Volcano's label discoverer does; the pure core decides
(``asyncsched.controllers.hypernode_discovery``). HyperNodes without the
``volcano.sh/network-topology-source: label`` label are never touched.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import msgspec

from asyncsched.api import Node
from asyncsched.api.core import ConfigMap
from asyncsched.api.topology import HyperNode
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.apply import delete
from asyncsched.backends.kube.controllers.store import Store
from asyncsched.backends.kube.controllers.workqueue import WorkQueue
from asyncsched.backends.kube.informer import ResourceKind
from asyncsched.controllers.hypernode_discovery import (
    CONFIG_KEY,
    CONFIG_MAP,
    CONFIG_NAMESPACE,
    DiscoveryConfig,
    discover,
    parse_discovery,
    reconcile,
)

__all__ = ["DISCOVERY_CONFIG", "HyperNodeDiscovery", "config_map_kind"]

log = logging.getLogger(__name__)

HYPERNODE_API = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
DISCOVERY_CONFIG = f"{CONFIG_NAMESPACE}/{CONFIG_MAP}"
"""Where Volcano's controllers read their configuration (namespace/name)."""
_KEY = "discover"


def config_map_kind(reference: str) -> ResourceKind[ConfigMap]:
    namespace, _, name = reference.partition("/")
    return ResourceKind(
        "ConfigMap",
        f"/api/v1/namespaces/{namespace}/configmaps",
        ConfigMap,
        field_selector=f"metadata.name={name}",
    )


class HyperNodeDiscovery:
    def __init__(self, client: KubeClient, warn: Any) -> None:
        self.client = client
        self.nodes: Store[Node] = Store()
        self.hypernodes: Store[HyperNode] = Store()
        self.config = DiscoveryConfig()
        self.queue: WorkQueue[str, None] = WorkQueue()
        self._warn = warn
        """``warn(kind, namespace, name, problem)``: a warning Event and a log line, once."""

    # -- informer handlers ---------------------------------------------------------

    def node_upserted(self, node: Node) -> None:
        old = self.nodes.upsert(node)
        if old is None or old.metadata.labels != node.metadata.labels:
            self.queue.add(_KEY)

    def node_deleted(self, namespace: str, name: str) -> None:
        if self.nodes.delete(namespace, name) is not None:
            self.queue.add(_KEY)

    def hypernode_upserted(self, hn: HyperNode) -> None:
        self.hypernodes.upsert(hn)

    def hypernode_deleted(self, namespace: str, name: str) -> None:
        self.hypernodes.delete(namespace, name)
        self.queue.add(_KEY)

    def config_upserted(self, config_map: ConfigMap) -> None:
        meta = config_map.metadata
        try:
            self.config = parse_discovery(config_map.data.get(CONFIG_KEY, ""))
        except ValueError as exc:
            self.config = DiscoveryConfig()
            self._warn("ConfigMap", meta.namespace, meta.name, f"{exc}: no HyperNode is discovered")
        else:
            for warning in self.config.warnings:
                self._warn("ConfigMap", meta.namespace, meta.name, warning)
        self.queue.add(_KEY)

    def config_deleted(self, namespace: str, name: str) -> None:
        self.config = DiscoveryConfig()
        self.queue.add(_KEY)

    def resync_all(self) -> None:
        self.queue.add(_KEY)

    # -- work ------------------------------------------------------------------------

    async def handle(self, key: str, _: list[None]) -> None:
        existing = list(self.hypernodes)
        labels = {node.metadata.name: node.metadata.labels for node in self.nodes}
        desired = discover(labels, self.config, existing) if self.config.enabled else []
        plan = reconcile(desired, existing)
        try:
            for hn in plan.create:
                await self._create(hn)
            for hn in plan.update:
                await self._update(hn)
            for name in plan.delete:
                if await delete(self.client, f"{HYPERNODE_API}/{name}"):
                    self.hypernodes.delete("", name)
        except KubeError as exc:
            delay = self.queue.retry(key)
            log.warning("hypernode discovery: %s; retrying in %.1fs", exc, delay)
            return
        self.queue.forget(key)

    async def _create(self, hn: HyperNode) -> None:
        body = _body(hn)
        try:
            answer = await self.client.post(HYPERNODE_API, json.dumps(body).encode())
        except KubeError as exc:
            if exc.status != 409:
                raise
            return  # made by an earlier try; the informer brings it
        self.hypernodes.upsert(msgspec.json.decode(answer, type=HyperNode))

    async def _update(self, hn: HyperNode) -> None:
        current = self.hypernodes.get("", hn.metadata.name)
        if current is None:
            return
        body = _body(hn)
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        body["metadata"]["annotations"] = dict(current.metadata.annotations)
        path = f"{HYPERNODE_API}/{hn.metadata.name}"
        answer = await self.client.put(path, json.dumps(body).encode())
        self.hypernodes.upsert(msgspec.json.decode(answer, type=HyperNode))


def _body(hn: HyperNode) -> dict[str, Any]:
    body: dict[str, Any] = msgspec.to_builtins(hn)
    body.update(apiVersion=hn.api_version, kind="HyperNode")
    return body
