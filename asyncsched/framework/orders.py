"""The session's orders: jobs, queues, tasks and victim queues, and sort keys for them.

An order hook compares two items through its rule (the first plugin that
decides wins); when no plugin decides, an order falls back on age, then on a
name, so every order is total and deterministic. Sorts and heaps take a key:
a tuple per item when every plugin of the hook has one (the keyed fast path,
:mod:`asyncsched.framework.orderkeys`), else an ``OrderKey`` over the comparison.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from asyncsched.framework.hooks import JOB_ORDER, QUEUE_ORDER, TASK_ORDER, VICTIM_QUEUE_ORDER, Hook
from asyncsched.framework.hooktable import HookTable
from asyncsched.framework.orderkeys import KeyOrder, OrderKey, live_before, tuple_key
from asyncsched.model import JobInfo, QueueInfo, TaskInfo

__all__ = ["SessionOrders", "task_fallback"]


class SessionOrders(HookTable):
    """The order hooks of a session, with their fallbacks and sort keys: a base of ``Session``.

    A base class for the reason ``HookTable`` is one: these are asked on the
    session (``ssn.job_order``, ``ssn.task_key()``), per comparison where no key
    exists, and tests patch them on the ``Session`` class. It keeps the keyed
    orders it made, per hook, until the hook's callbacks change.
    """

    def __init__(self) -> None:
        super().__init__()
        self._keys: dict[str, Callable[[Any], tuple[Any, ...]] | None] = {}

    def _callbacks_changed(self, hook: Hook[Any] | None) -> None:
        super()._callbacks_changed(hook)
        if hook is None:
            self._keys.clear()
        else:
            self._keys.pop(hook.name, None)

    def job_order(self, left: JobInfo, right: JobInfo) -> bool:
        """True if ``left`` should be scheduled before ``right``.

        When no plugin decides: older first, then by uid (deterministic).
        """
        decided: int = self.call(JOB_ORDER, left, right)
        return decided < 0 if decided else (left.creation, left.uid) < (right.creation, right.uid)

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> bool:
        """True if ``left`` should be served before ``right`` (else older, then by name)."""
        decided: int = self.call(QUEUE_ORDER, left, right)
        return decided < 0 if decided else (left.creation, left.name) < (right.creation, right.name)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> bool:
        """True if ``left`` should be placed before ``right`` (tasks of one job; else by
        ``task_fallback``)."""
        decided: int = self.call(TASK_ORDER, left, right)
        return decided < 0 if decided else task_fallback(left) < task_fallback(right)

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> bool:
        """True if ``left``'s tasks are given up before ``right``'s for a task of
        ``preemptor`` (else the queue served last gives first, as in Volcano)."""
        decided: int = self.call(VICTIM_QUEUE_ORDER, left, right, preemptor)
        return decided < 0 if decided else self.queue_order(right, left)

    def job_key(self, frozen: bool = True) -> Callable[[JobInfo], Any]:
        """A sort key that orders jobs by job_order.

        When every job-order plugin has a key (``asyncsched.framework.orderkeys``),
        the key is a tuple taken when it is made (``frozen``), or an OrderKey that
        compares keys read at each comparison; else an OrderKey over job_order.
        """
        return _sort_key(self.frozen_job_key(), frozen, self.job_order)

    def frozen_job_key(self) -> Callable[[JobInfo], tuple[Any, ...]] | None:
        """The jobs' order as a tuple per job, when every job-order plugin has a key."""
        keyed: Callable[[JobInfo], tuple[Any, ...]] | None = self._keyed(JOB_ORDER, _job_fallback)
        return keyed

    def queue_key(self, frozen: bool = True) -> Callable[[QueueInfo], Any]:
        """A sort key that orders queues by queue_order (a tuple, or an OrderKey over keys
        read at each comparison, when every queue-order plugin has a key, as for
        ``job_key``; else an OrderKey over queue_order)."""
        return _sort_key(self.frozen_queue_key(), frozen, self.queue_order)

    def frozen_queue_key(self) -> Callable[[QueueInfo], tuple[Any, ...]] | None:
        """The queues' order as a tuple per queue, when every queue-order plugin has a key."""
        keyed: Callable[[QueueInfo], tuple[Any, ...]] | None = self._keyed(
            QUEUE_ORDER, _queue_fallback
        )
        return keyed

    def task_key(self) -> Callable[[TaskInfo], Any]:
        """A sort key that orders tasks by task_order (a tuple when every task-order plugin
        has a key, as for ``job_key``)."""
        keyed = self._keyed(TASK_ORDER, task_fallback)
        return keyed if keyed is not None else functools.partial(OrderKey, self.task_order)

    def fixed_task_order(self) -> tuple[object, ...] | None:
        """What the task order is made of, when every plugin of it orders by a fixed key
        (``KeyOrder(fixed=True)``): then the order of given tasks is the same whenever it
        is taken, in this session or another with an equal answer. None otherwise."""
        if not self._modes.shortcut:
            return None
        orders = []
        for tier in self._tiers(TASK_ORDER):
            for plugin, fn in tier:
                if not (isinstance(fn, KeyOrder) and fn.fixed):
                    return None
                orders.append((plugin, fn.key))
        return tuple(orders)

    def _keyed(self, hook: Hook[Any], fallback: Callable[[Any], tuple[Any, ...]]) -> Any:
        """The hook's order as one tuple per item (the plugins' keys in tier order, then
        ``fallback``), or None when a plugin compares without a key or shortcuts are off."""
        if hook.name in self._keys:
            return self._keys[hook.name]
        found = self._keys[hook.name] = self._make_keyed(hook, fallback)
        return found

    def _make_keyed(
        self, hook: Hook[Any], fallback: Callable[[Any], tuple[Any, ...]]
    ) -> Callable[[Any], tuple[Any, ...]] | None:
        if not self._modes.shortcut:
            return None
        pairs = [pair for tier in self._tiers(hook) for pair in tier]
        orders = [fn for _, fn in pairs if isinstance(fn, KeyOrder)]
        if len(orders) < len(pairs):
            return None
        keys = [(plugin, order.key) for (plugin, _), order in zip(pairs, orders, strict=True)]
        return tuple_key(keys, fallback, functools.partial(self._failed, hook))


def _sort_key(
    keyed: Callable[[Any], tuple[Any, ...]] | None,
    frozen: bool,
    before: Callable[[Any, Any], bool],
) -> Callable[[Any], Any]:
    """The keyed tuple (``frozen``), an OrderKey over keys read at each comparison, or,
    without keys, an OrderKey over the comparison ``before``."""
    if keyed is None:
        return functools.partial(OrderKey, before)
    if frozen:
        return keyed
    return functools.partial(OrderKey, live_before(keyed))


def _job_fallback(job: JobInfo) -> tuple[float, str]:
    return job.creation, job.uid


def _queue_fallback(queue: QueueInfo) -> tuple[float, str]:
    return queue.creation, queue.name


def task_fallback(task: TaskInfo) -> tuple[bool, int, float, str]:
    """The order of tasks the plugins leave equal: by the number ending the pod's name
    (Volcano's ``CompareTask``: worker-2 before worker-10), then older first, then by
    name (Volcano: by uid, which on a cluster is random). Tasks without such a number
    come after those with one; Volcano compares such a pair by age alone."""
    index = task.index
    return index is None, index or 0, task.creation, task.name
