"""What the admission webhooks know of the cluster: the controllers' informer stores,
and the API server where the informer's picture may be a moment behind."""

from __future__ import annotations

import logging

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, PodGroup, Queue
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.apply import PODGROUP_API
from asyncsched.backends.kube.controllers.store import PodStore, Store

__all__ = ["AdmissionView"]

log = logging.getLogger(__name__)

QUEUES_PATH = f"{PODGROUP_API}/queues"


class _QueueList(msgspec.Struct):
    items: list[msgspec.Raw] = []


class AdmissionView:
    """Answers the Job review's ``QueueLookup`` and is the Queue review's ``QueueSource``."""

    def __init__(
        self, client: KubeClient, queues: Store[Queue], pods: PodStore, podgroups: Store[PodGroup]
    ) -> None:
        self.client, self.queues, self.pods, self.podgroups = client, queues, pods, podgroups

    async def _read(self, name: str) -> Queue | None:
        try:
            raw = await self.client.get(f"{QUEUES_PATH}/{name}")
            return msgspec.json.decode(raw, type=Queue)
        except (KubeError, msgspec.DecodeError, msgspec.ValidationError):
            return None

    async def job_queues(self, wanted: str) -> tuple[dict[str, str], dict[str, int]]:
        """Queue states and child counts for the Job webhook, ``wanted`` among them."""
        states = {q.metadata.name: q.status.state for q in self.queues}
        children: dict[str, int] = {}
        for q in self.queues:
            if q.spec.parent:
                children[q.spec.parent] = children.get(q.spec.parent, 0) + 1
        if wanted not in states and (queue := await self._read(wanted)) is not None:
            states[wanted] = queue.status.state
        return states, children

    async def stored_queues(self) -> dict[str, Queue]:
        """The queues by name for the Queue webhook, as the API server has them now.

        Read fresh rather than from the informer, which may lag by a moment: a parent
        and its child applied from one file, or a child created just before its parent
        is deleted, must be judged on what is stored. Queue writes are rare, and one
        list of them is small. If the read fails, the informer's copy stands in.
        """
        try:
            page = msgspec.json.decode(await self.client.get(QUEUES_PATH), type=_QueueList)
        except (KubeError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("queue webhook: listing queues failed (%s); using the informer's", exc)
            return {q.metadata.name: q for q in self.queues}
        found = {}
        for raw in page.items:
            try:
                queue = msgspec.json.decode(raw, type=Queue)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # the informer reports it
            found[queue.metadata.name] = queue
        return found

    def pods_in(self, queue: str) -> int:
        """Pods of ``queue`` (through their PodGroup) that are placed on a node and not done."""
        count = 0
        for pod in self.pods:
            if not pod.spec.node_name or pod.status.phase in ("Succeeded", "Failed"):
                continue
            group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION, "")
            pg = self.podgroups.get(pod.metadata.namespace, group) if group else None
            count += pg is not None and pg.spec.queue == queue
        return count
