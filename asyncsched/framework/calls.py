"""How a session calls one plugin callback: failures contained, and on request checked
against the hook's contract.

The plain call is what the rules of :mod:`asyncsched.framework.dispatch` get:
a callback that raises returns ``FAILED`` after the session is told. The modes
below are switched on by environment variables, read when a session opens;
with a mode on, the session runs every hook through its plain rule (no fast
path) with the mode's call, so every callback call passes through here.

- ``ASYNCSCHED_TRACE_HOOKS=1``: every call is logged at DEBUG on the
  ``asyncsched.hooks`` logger: the hook, the plugin, the arguments'
  identifiers (uids of tasks and jobs, names of nodes and queues, sizes of
  arrays) and the answer (``FAILED`` when the plugin raised).
- ``ASYNCSCHED_CHECK_HOOKS=1``: every answer is checked against the hook's
  ``answers``, and a hook that may not mutate must leave the node table and the
  session's decisions as they were. A breach counts as the plugin failing
  (HookContractError, reported like any other failure).

Both slow a session down (no fast paths; the checks and the log lines cost
more than most callbacks): they are for finding out what plugins do.

``ASYNCSCHED_SHORTCUTS=0`` is not a mode of calls but turns off the shortcuts that
skip calls and keep every decision (keyed orders, :mod:`asyncsched.framework.orderkeys`;
a task that fits no node is not scored, :mod:`asyncsched.actions.placement`), to
compare a run with them against one without.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from asyncsched.framework import dispatch
from asyncsched.framework.hooks import Hook

__all__ = [
    "CHECK_ENV",
    "SHORTCUTS_ENV",
    "TRACE_ENV",
    "HookContractError",
    "Modes",
    "caller",
    "identify",
]

CHECK_ENV = "ASYNCSCHED_CHECK_HOOKS"
TRACE_ENV = "ASYNCSCHED_TRACE_HOOKS"
SHORTCUTS_ENV = "ASYNCSCHED_SHORTCUTS"

trace_log = logging.getLogger("asyncsched.hooks")


class HookContractError(Exception):
    """A callback answered outside its hook's contract, or a question changed state."""


@dataclass(frozen=True)
class Modes:
    """Which of the optional call modes are on for a session."""

    check: bool = False
    trace: bool = False
    shortcuts: bool = True

    @property
    def plain(self) -> bool:
        """No mode on: the session may use the rules' fast paths."""
        return not (self.check or self.trace)

    @property
    def shortcut(self) -> bool:
        """The session may skip calls whose answers it knows (keyed orders, ...)."""
        return self.shortcuts and self.plain

    @classmethod
    def from_environment(cls) -> Modes:
        shortcuts = os.environ.get(SHORTCUTS_ENV, "") != "0"
        return cls(check=_on(CHECK_ENV), trace=_on(TRACE_ENV), shortcuts=shortcuts)


def _on(variable: str) -> bool:
    return os.environ.get(variable, "") not in ("", "0")


def caller(
    hook: Hook[Any],
    failed: Callable[[str, Exception], None],
    modes: Modes,
    state: Callable[[], tuple[int, ...]],
) -> dispatch.Call:
    """The ``call`` a rule gets for ``hook``: ``failed(plugin, exc)`` is told of failures;
    ``state()`` marks what a question must leave unchanged (checking mode)."""

    def contained(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # a plugin must never take the scheduler down
            failed(plugin, exc)
            return dispatch.FAILED

    call: dispatch.Call = contained
    if modes.check:
        call = _checked(hook, call, failed, state)
    if modes.trace:
        call = _traced(hook, call)
    return call


def _checked(
    hook: Hook[Any],
    inner: dispatch.Call,
    failed: Callable[[str, Exception], None],
    state: Callable[[], tuple[int, ...]],
) -> dispatch.Call:
    answers, question = hook.answers, not hook.mutates

    def checked(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        before = state() if question else ()
        result = inner(plugin, fn, args)
        if result is dispatch.FAILED:
            return result
        if answers is not None and not answers.check(result, args):
            wrong = f"{hook.name} answered {identify(result)}; allowed: {answers.text}"
            failed(plugin, HookContractError(wrong))
            return dispatch.FAILED
        if question and state() != before:
            failed(plugin, HookContractError(f"{hook.name} changed the session; it may not"))
            return dispatch.FAILED
        return result

    return checked


def _traced(hook: Hook[Any], inner: dispatch.Call) -> dispatch.Call:
    name = hook.name

    def traced(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        result = inner(plugin, fn, args)
        if trace_log.isEnabledFor(logging.DEBUG):
            shown = ", ".join(identify(a) for a in args)
            trace_log.debug("%s %s(%s) -> %s", name, plugin, shown, identify(result))
        return result

    return traced


def identify(value: Any) -> str:
    """A short name for a hook's argument or answer: a uid or a name for model objects,
    a size for arrays and long lists, the value itself for the rest."""
    if value is dispatch.FAILED:
        return "FAILED"
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            return f"array({value.tolist()})"
        return f"array[{value.size}]"
    if isinstance(value, list | tuple):
        if len(value) > 8:
            return f"[{len(value)} items]"
        inner = ", ".join(identify(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    for attribute in ("uid", "name"):
        found = getattr(value, attribute, None)
        if isinstance(found, str) and found:
            return found
    return repr(value)
