"""Queue quotas in cards of each model, for cards asked for generically (deviceshare's part).

A queue's capability in a model pool's resource (``nvidia.com/a100: 8``,
``asyncsched.model.gpu_pools``) bounds, through proportion's and capacity's resource
machinery, the pods that ask for that resource. A pod asking ``nvidia.com/gpu`` or a vGPU
share gets a model only when placed: this ledger counts, per queue, the cards of each
pool its placed tasks hold (both kinds), and refuses a node where the task's cards would
take the queue, or any queue above it (``spec.parent``), over its capability in that
pool. The ledger follows the session's placements and evictions (its event handlers),
and the queue metrics report it as the queue's allocated amount of the pool's resource.

Deserved and guarantee in a pool's resource count only pods asking for that resource:
reclaim does not take back cards lent to generic pods by their model. Said once per
queue and resource, as a warning, when the cluster has generic cards of the pool's model.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from asyncsched.framework import Session
from asyncsched.model import NodeInfo, TaskInfo
from asyncsched.model.gpu_claims import GpuClaim
from asyncsched.model.gpu_pools import GpuPools, pool_cards
from asyncsched.model.status import ALLOCATED

__all__ = ["ModelQuota"]

log = logging.getLogger(__name__)
_warned: set[str] = set()


class ModelQuota:
    """Cards of each pool held per queue (its own and its descendants'), for one session."""

    def __init__(self, ssn: Session, pools: GpuPools) -> None:
        self.ssn = ssn
        self.pools = pools
        resources = pools.resources
        self.limits: dict[str, dict[str, int]] = {}
        """Per queue, its capability in each pool's resource it names."""
        for name, queue in ssn.queues.items():
            capability = queue.declared_capability  # an explicit 0 allows no card
            named = {r: max(capability[r], 0) for r in capability.keys() & resources}
            if named:
                self.limits[name] = named
        self.held: dict[str, dict[str, int]] = {}
        self.counted: dict[str, tuple[str, dict[str, int]]] = {}
        """What each task was counted as (queue, cards per pool), so taking it back takes
        back exactly that (a task taken off a node has lost its node and cards by then)."""
        generic: set[str] = set()
        for node in ssn.node_list:
            if node.gpus is None:
                continue
            for card in node.gpus.cards:
                if card.resource not in resources:
                    pool = pools.pool_of(card.model)
                    if pool:
                        generic.add(pool)
            for task in node.tasks.values():
                if task.status in ALLOCATED and task.gpu_request is not None:
                    self.add(task)
        self._warn(generic)

    def _warn(self, generic: set[str]) -> None:
        """Deserved and guarantee do not see generic cards: say so where it matters."""
        for name, queue in self.ssn.queues.items():
            for field, amount in (("deserved", queue.deserved), ("guarantee", queue.guarantee)):
                for resource in sorted(amount.names() & generic) if amount is not None else ():
                    message = (
                        f"deviceshare: queue {name!r} spec.{field} {resource} counts only pods "
                        f"asking for {resource}: cards of its model asked as nvidia.com/gpu or "
                        "vGPU count against the queue's capability alone (not enforced for "
                        f"{field}, nor taken back by reclaim)"
                    )
                    if message not in _warned and len(_warned) < 1000:
                        _warned.add(message)
                        log.warning("%s", message)

    def _chain(self, queue: str) -> Iterator[str]:
        """The queue and the queues above it (a loop in ``spec.parent`` ends the walk)."""
        seen: set[str] = set()
        while queue and queue not in seen:
            seen.add(queue)
            yield queue
            info = self.ssn.queues.get(queue)
            queue = info.parent if info is not None else ""

    def _queue(self, task: TaskInfo) -> str:
        job = self.ssn.jobs.get(task.job)
        return job.queue if job is not None else ""

    def _cards(self, task: TaskInfo, node: NodeInfo, claim: GpuClaim | None) -> dict[str, int]:
        request = task.gpu_request
        if node.gpus is None or request is None:
            return {}
        if claim is None:
            if not request.plain:
                return {}
            # Whole cards not chosen yet (none idle until victims leave): all of a node's
            # cards of one resource are of one model.
            claim = GpuClaim("plain", (), request.plain, resource=request.resource)
        return pool_cards(claim, node.gpus, self.pools)

    def add(self, task: TaskInfo) -> None:
        """A task placed (at open, or by the session): count its cards."""
        node = self.ssn.nodes.get(task.node_name)
        if node is None or task.uid in self.counted:
            return
        cards = self._cards(task, node, task.gpu_claim)
        if not cards:
            return
        queue = self._queue(task)
        self.counted[task.uid] = (queue, cards)
        self._charge(queue, cards, 1)

    def remove(self, task: TaskInfo) -> None:
        """A task taken off its node (evicted, or a placement undone): uncount it."""
        found = self.counted.pop(task.uid, None)
        if found is not None:
            self._charge(found[0], found[1], -1)

    def _charge(self, queue: str, cards: dict[str, int], sign: int) -> None:
        for name in self._chain(queue):
            held = self.held.setdefault(name, {})
            for pool, count in cards.items():
                held[pool] = held.get(pool, 0) + sign * count

    def bounding(self, task: TaskInfo) -> list[str]:
        """The task's queue and the queues above it that bound some pool ([]: none does,
        and no node needs asking)."""
        if not self.limits:
            return []
        return [q for q in self._chain(self._queue(task)) if q in self.limits]

    def refusal(
        self, task: TaskInfo, node: NodeInfo, claim: GpuClaim | None, chain: list[str]
    ) -> str:
        """Why the task's cards on the node (``claim``) would take a queue of ``chain``
        (``bounding``) over its capability in a pool ("" when they would not)."""
        cards = self._cards(task, node, claim) if chain else {}
        for name in chain:
            held = self.held.get(name, {})
            for pool, count in cards.items():
                limit = self.limits[name].get(pool)
                if limit is not None and held.get(pool, 0) + count > limit:
                    return f"queue {name} would be over its capability of {limit} {pool} cards"
        return ""

    def allocated(self, queue: str) -> dict[str, int]:
        """Cards of each pool the queue (with its descendants) holds now."""
        return {pool: n for pool, n in self.held.get(queue, {}).items() if n}
