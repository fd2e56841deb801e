"""The callbacks plugins registered in a session, and the calls that combine them.

Plugins register with ``add``; every question and event goes through ``call``,
which applies the hook's rule (:mod:`asyncsched.framework.dispatch`) over the
enabled plugins' callbacks, tiers in order. The rule bound to the callbacks
(a *runner*, the rule's fast path when it has one and no call mode of
:mod:`asyncsched.framework.calls` is on) is built once per hook and kept until
a registration or a plugin's failure changes the callbacks.

A plugin that raises has no opinion: it is reported (``SessionResult.failures``
and an error line) and dropped for the rest of the session.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from asyncsched.framework import calls, dispatch
from asyncsched.framework.conf import SchedulerConfiguration
from asyncsched.framework.hooks import ON_ALLOCATE, ON_DEALLOCATE, Hook
from asyncsched.framework.results import PluginFailure, SessionResult
from asyncsched.model import NodeTable, TaskInfo

__all__ = ["EventHandler", "HookTable"]

log = logging.getLogger("asyncsched.framework.session")
"""The session's logger: a plugin's failure is logged under the name it always had."""
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class EventHandler:
    """Told of every allocation and deallocation in the session (proportion, drf keep shares)."""

    on_allocate: Callable[[TaskInfo], None] | None = None
    on_deallocate: Callable[[TaskInfo], None] | None = None


class HookTable:
    """Registration and dispatch of a session's plugin callbacks: a base of ``Session``.

    A base class rather than a field of the session: plugins, actions and tests
    reach ``add``, ``call``, ``has``... on the session and on the ``Session``
    class (tests patch ``Session.add``), and ``call`` runs on every order
    comparison and placed task, so a field would cost either a delegating
    method per name, one more call on that path, or methods bound per instance
    that the class no longer has. The session sets ``configuration``, ``result``
    and ``table``; a subclass that keeps something derived from the callbacks
    (keyed orders, row scorers) extends ``_callbacks_changed``.
    """

    configuration: SchedulerConfiguration
    result: SessionResult
    table: NodeTable

    def __init__(self) -> None:
        self._registered: dict[str, dict[str, Callable[..., Any]]] = {}
        self._tiers_cache: dict[str, list[list[tuple[str, Callable[..., Any]]]]] = {}
        self._disabled: set[str] = set()
        self._runners: dict[Hook[Any], Callable[..., Any]] = {}
        self._has: dict[Hook[Any], bool] = {}
        self._modes = calls.Modes.from_environment()
        self.shortcuts: bool = self._modes.shortcut
        """May the session skip calls whose answers it knows, keeping every decision?
        (Off with ``ASYNCSCHED_SHORTCUTS=0`` and in the call modes; see
        ``asyncsched.framework.calls``.) A field, not a property: placement reads it for
        every task, and the modes are fixed when the session is made."""

    def add(self, hook: Hook[F], plugin: str, fn: F) -> None:
        """Register ``fn`` as ``plugin``'s answer to ``hook``."""
        self._registered.setdefault(hook.name, {})[plugin] = fn
        self._callbacks_changed(hook)

    def add_event_handler(self, plugin: str, handler: EventHandler) -> None:
        """Register a plugin's allocate and deallocate handlers (ON_ALLOCATE, ON_DEALLOCATE)."""
        if handler.on_allocate is not None:
            self.add(ON_ALLOCATE, plugin, handler.on_allocate)
        if handler.on_deallocate is not None:
            self.add(ON_DEALLOCATE, plugin, handler.on_deallocate)

    def callbacks(self, hook: Hook[F]) -> list[tuple[str, F]]:
        """The enabled plugins' callbacks for ``hook`` as (plugin, callback), tiers in order.

        For tools that show each plugin's own answer (``asyncsched explain``: which
        predicate refused a node, what each scorer gave it); deciding goes through
        ``call``, which applies the hook's rule.
        """
        return [(plugin, cast(F, fn)) for tier in self._tiers(hook) for plugin, fn in tier]

    def has(self, hook: Hook[Any]) -> bool:
        """Is any enabled plugin registered for ``hook``? (Kept per hook, as the runners
        are: placement asks it for every task.)"""
        found = self._has.get(hook)
        if found is None:
            found = self._has[hook] = bool(self._tiers(hook))  # empty tiers are dropped
        return found

    def call(self, hook: Hook[Any], *args: Any) -> Any:
        """The plugins' combined answer to ``hook``: its rule over the enabled callbacks,
        by tier. A plugin that raises has no opinion; it is reported and dropped for
        the rest of the session (``plugin_failed``)."""
        return (self._runners.get(hook) or self._runner(hook))(*args)

    def _runner(self, hook: Hook[Any]) -> Callable[..., Any]:
        """The hook's rule bound to this session's callbacks (its fast path when it has one
        and no call mode is on), built once and kept until a registration or a failure
        changes the callbacks."""
        tiers = self._tiers(hook)
        failed = functools.partial(self._failed, hook)
        fast = dispatch.FAST_PATHS.get(hook.rule) if self._modes.plain else None
        run: Callable[..., Any]
        if fast is not None:
            run = fast([pair for tier in tiers for pair in tier], failed)
        else:
            call = calls.caller(hook, failed, self._modes, self._state_mark)
            run = functools.partial(hook.rule, tiers, call)
        self._runners[hook] = run
        return run

    def _state_mark(self) -> tuple[int, ...]:
        """What a question may not change: the node table and the decisions so far."""
        result, table = self.result, self.table
        return (
            table.version,
            table.epoch,
            len(result.binds),
            len(result.evictions),
            len(result.nominations),
            len(result.enqueued),
        )

    def _tiers(self, hook: Hook[Any]) -> list[list[tuple[str, Callable[..., Any]]]]:
        cached = self._tiers_cache.get(hook.name)
        if cached is not None:
            return cached
        fns = self._registered.get(hook.name, {})
        tiers = [
            [
                (p.name, fns[p.name])
                for p in tier.plugins
                if p.name in fns and p.name not in self._disabled and p.enabled(hook.flag)
            ]
            for tier in self.configuration.tiers
        ]
        tiers = [t for t in tiers if t]
        self._tiers_cache[hook.name] = tiers
        return tiers

    def _failed(self, hook: Hook[Any], plugin: str, exc: Exception) -> None:
        self.plugin_failed(plugin, hook.name, exc)

    def plugin_failed(self, plugin: str, hook: str, exc: BaseException) -> None:
        """Drop a plugin that raised for the rest of this session, and report it."""
        log.error("plugin %s failed in %s: %s: %s", plugin, hook, type(exc).__name__, exc)
        self.result.failures.append(PluginFailure(plugin, hook, f"{type(exc).__name__}: {exc}"))
        self._disabled.add(plugin)
        self._callbacks_changed(None)

    def _callbacks_changed(self, hook: Hook[Any] | None) -> None:
        """Forget what was derived from ``hook``'s callbacks (from every hook's when None).

        Each base of the session that derives something more from them extends this
        and calls ``super()``."""
        if hook is None:
            self._tiers_cache.clear()
            self._runners.clear()
            self._has.clear()
        else:
            self._tiers_cache.pop(hook.name, None)
            self._runners.pop(hook, None)
            self._has.pop(hook, None)

    def _drop_callbacks(self) -> None:
        """Forget every callback and what was derived from them (``Session.close``)."""
        self._registered.clear()
        self._callbacks_changed(None)
