"""The combination rules of :mod:`asyncsched.framework.hooks`, one function each.

Each rule receives the registered callbacks grouped by tier, as
``[[(plugin, fn), ...], ...]``, and a ``call`` that invokes one callback with
the plugin's failures contained: ``call`` returns ``FAILED`` when the plugin
raised, and a failed plugin counts as having no opinion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = [
    "FAILED",
    "Tiers",
    "all_pass",
    "all_true",
    "any_true",
    "broadcast",
    "first_decisive",
    "first_failure",
    "intersect_victims",
    "sum_scores",
    "tier_all_true",
    "tier_vote",
]

T = TypeVar("T")
Tiers = Sequence[Sequence[tuple[str, Callable[..., Any]]]]
Call = Callable[[str, Callable[..., Any], tuple[Any, ...]], Any]


class _Failed:
    def __repr__(self) -> str:
        return "FAILED"


FAILED: Any = _Failed()


def first_decisive(tiers: Tiers, call: Call, *args: Any) -> int:
    for tier in tiers:
        for plugin, fn in tier:
            result = call(plugin, fn, args)
            if result is not FAILED and result:
                return int(result)
    return 0


def all_pass(tiers: Tiers, call: Call, *args: Any) -> str | None:
    for tier in tiers:
        for plugin, fn in tier:
            reason = call(plugin, fn, args)
            if reason is not FAILED and reason is not None:
                return str(reason)
    return None


def all_true(tiers: Tiers, call: Call, *args: Any) -> bool:
    for tier in tiers:
        for plugin, fn in tier:
            if call(plugin, fn, args) is False:
                return False
    return True


def any_true(tiers: Tiers, call: Call, *args: Any) -> bool:
    for tier in tiers:
        for plugin, fn in tier:
            if call(plugin, fn, args) is True:
                return True
    return False


def tier_vote(tiers: Tiers, call: Call, *args: Any) -> bool:
    for tier in tiers:
        permitted = False
        for plugin, fn in tier:
            vote = call(plugin, fn, args)
            if vote is FAILED:
                continue
            if vote < 0:
                return False
            if vote > 0:
                permitted = True
        if permitted:
            return True
    return True


def sum_scores(tiers: Tiers, call: Call, *args: Any) -> float:
    total = 0.0
    for tier in tiers:
        for plugin, fn in tier:
            score = call(plugin, fn, args)
            if score is not FAILED:
                total += float(score)
    return total


def first_failure(tiers: Tiers, call: Call, *args: Any) -> Any:
    for tier in tiers:
        for plugin, fn in tier:
            result = call(plugin, fn, args)
            if result is not FAILED and result is not None and not result.passed:
                return result
    return None


def tier_all_true(tiers: Tiers, call: Call, *args: Any) -> bool:
    for tier in tiers:
        decided = False
        for plugin, fn in tier:
            answer = call(plugin, fn, args)
            if answer is FAILED:
                continue
            decided = True
            if not answer:
                return False
        if decided:
            return True
    return False


def intersect_victims(tiers: Tiers, call: Call, *args: Any) -> list[Any]:
    for tier in tiers:
        chosen: dict[str, Any] | None = None
        for plugin, fn in tier:
            victims = call(plugin, fn, args)
            if victims is FAILED or victims is None:
                continue
            found = {v.uid: v for v in victims}
            chosen = found if chosen is None else {k: v for k, v in chosen.items() if k in found}
        if chosen is not None:
            return list(chosen.values())
    return []


def broadcast(tiers: Tiers, call: Call, *args: Any) -> None:
    for tier in tiers:
        for plugin, fn in tier:
            call(plugin, fn, args)
