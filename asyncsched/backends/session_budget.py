"""The session budget a shell runs with when its command line does not give one.

``ASYNCSCHED_SESSION_BUDGET`` (a positive whole number of tasks) lets a test run or a
benchmark put every simulation or scheduler of a process under a budget without passing a
flag through each caller; see ``asyncsched.framework.budget`` for what a budget does.
"""

from __future__ import annotations

import os

__all__ = ["SESSION_BUDGET_ENV", "parse_session_budget", "session_budget_from_environment"]

SESSION_BUDGET_ENV = "ASYNCSCHED_SESSION_BUDGET"


def parse_session_budget(text: str, where: str) -> int:
    """A positive number of tasks, or ValueError naming ``where`` the text came from."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{where} must be a positive whole number of tasks, not {text!r}")
    return value


def session_budget_from_environment() -> int | None:
    text = os.environ.get(SESSION_BUDGET_ENV, "")
    return parse_session_budget(text, SESSION_BUDGET_ENV) if text else None
