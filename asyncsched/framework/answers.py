"""What a hook's callbacks may answer: the allowed-results part of each hook's contract.

Each ``Answers`` says in words what a callback may return and checks one
answer against the arguments it was given. The checks run only in checking
mode (``ASYNCSCHED_CHECK_HOOKS=1``, :mod:`asyncsched.framework.calls`); the
scenario tests turn it on so that every built-in plugin's answers are checked
on real workloads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BOOL",
    "COMPARISON",
    "FAILURE_MASKS",
    "NOTHING",
    "REASON",
    "SCORE",
    "SCORES",
    "VALIDATION",
    "VICTIMS",
    "VOTE",
    "Answers",
    "ValidateResult",
]


@dataclass(frozen=True)
class Answers:
    """Allowed results: ``text`` for readers, ``check(result, args)`` for checking mode."""

    text: str
    check: Callable[[Any, tuple[Any, ...]], bool]


def _integer(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool | np.bool_)
        and math.isfinite(value)
    )


def _masks(value: Any, args: tuple[Any, ...]) -> bool:
    return isinstance(value, list) and all(
        isinstance(pair, tuple)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and pair[0] != ""
        and isinstance(pair[1], np.ndarray)
        and pair[1].ndim == 1
        and pair[1].dtype == np.bool_
        for pair in value
    )


def _scores(value: Any, args: tuple[Any, ...]) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.shape == (len(args[1]),)
        and np.issubdtype(value.dtype, np.number)
        and bool(np.isfinite(value).all())
    )


def _victims(value: Any, args: tuple[Any, ...]) -> bool:
    if value is None:
        return True
    offered = {task.uid for task in args[1]}
    return isinstance(value, list) and all(getattr(v, "uid", None) in offered for v in value)


@dataclass(frozen=True)
class ValidateResult:
    """Why a job may not be scheduled at all this session (gang: too few valid tasks)."""

    passed: bool
    reason: str = ""
    message: str = ""


COMPARISON = Answers(
    "an int: negative if the first argument goes first, positive if the second, 0 for no opinion",
    lambda value, args: _integer(value),
)
REASON = Answers(
    "None to pass, else a non-empty reason (str)",
    lambda value, args: value is None or (isinstance(value, str) and value != ""),
)
FAILURE_MASKS = Answers(
    "a list of (reason, failed) pairs: a non-empty str and a 1-d bool array over the "
    "session's node list",
    _masks,
)
SCORE = Answers("a finite number; higher is better", lambda value, args: _number(value))
SCORES = Answers(
    "a 1-d array of finite numbers, one per candidate, in the candidates' order", _scores
)
VALIDATION = Answers(
    "None, or a ValidateResult (passed or why not)",
    lambda value, args: value is None or isinstance(value, ValidateResult),
)
BOOL = Answers("True or False", lambda value, args: isinstance(value, bool))
VOTE = Answers(
    "-1 (reject), 0 (abstain) or +1 (permit)",
    lambda value, args: _integer(value) and value in (-1, 0, 1),
)
VICTIMS = Answers("None to abstain, or a list of victims, each one of the tasks offered", _victims)
NOTHING = Answers("None (the answer is ignored)", lambda value, args: value is None)
