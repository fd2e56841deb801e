"""How a session calls one plugin callback: failures contained, and on request checked
against the hook's contract.

The plain call is what the rules of :mod:`asyncsched.framework.dispatch` get:
a callback that raises returns ``FAILED`` after the session is told. The modes
below are switched on by environment variables, read when a session opens;
with a mode on, the session runs every hook through its plain rule (no fast
path) with the mode's call, so every callback call passes through here.

- ``ASYNCSCHED_CHECK_HOOKS=1``: every answer is checked against the hook's
  ``answers``, and a hook that may not mutate must leave the node table and the
  session's decisions as they were. A breach counts as the plugin failing
  (HookContractError, reported like any other failure).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asyncsched.framework import dispatch
from asyncsched.framework.hooks import Hook

__all__ = ["CHECK_ENV", "HookContractError", "Modes", "caller"]

CHECK_ENV = "ASYNCSCHED_CHECK_HOOKS"


class HookContractError(Exception):
    """A callback answered outside its hook's contract, or a question changed state."""


@dataclass(frozen=True)
class Modes:
    """Which of the optional call modes are on for a session."""

    check: bool = False

    @property
    def plain(self) -> bool:
        """No mode on: the session may use the rules' fast paths."""
        return not self.check

    @classmethod
    def from_environment(cls) -> Modes:
        return cls(check=os.environ.get(CHECK_ENV, "") not in ("", "0"))


def caller(
    hook: Hook[Any],
    failed: Callable[[str, Exception], None],
    modes: Modes,
    state: Callable[[], tuple[int, ...]],
) -> dispatch.Call:
    """The ``call`` a rule gets for ``hook``: ``failed(plugin, exc)`` is told of failures;
    ``state()`` marks what a question must leave unchanged (checking mode)."""
    if not modes.check:

        def call(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
            try:
                return fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)
                return dispatch.FAILED

        return call

    answers, questions = hook.answers, not hook.mutates

    def checked(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        before = state() if questions else ()
        try:
            result = fn(*args)
        except Exception as exc:  # a plugin must never take the scheduler down
            failed(plugin, exc)
            return dispatch.FAILED
        if answers is not None and not answers.check(result, args):
            failed(
                plugin,
                HookContractError(f"{hook.name} answered {result!r}; allowed: {answers.text}"),
            )
            return dispatch.FAILED
        if questions and state() != before:
            failed(plugin, HookContractError(f"{hook.name} changed the session; it may not"))
            return dispatch.FAILED
        return result

    return checked
