"""The combination rules of :mod:`asyncsched.framework.hooks`, one function each, and
their fast paths.

A rule receives the registered callbacks grouped by tier, as
``[[(plugin, fn), ...], ...]``, and a ``call`` that invokes one callback with
the plugin's failures contained: ``call`` returns ``FAILED`` when the plugin
raised, and a failed plugin counts as having no opinion. Every hook names its
rule (``Hook.rule``) and ``Session.call`` applies it; nothing else combines
plugins' answers but the fast paths below and ``Session.all_node_scores``
(RowScorer rows), each tested against its rule.

A rule that does not look at tier boundaries may also have a *fast path*,
registered here against it (``FAST_PATHS``): the same loop over the callbacks
flattened in tier order, with the failure handling inlined, built once per
session and hook. It runs on every heap comparison and every placed task, so
it saves the per-callback indirection. tests/unit/framework/test_fast_paths.py
checks that each fast path answers as its rule on generated callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "FAILED",
    "FAST_PATHS",
    "RULES",
    "Call",
    "Failed",
    "Flat",
    "Rule",
    "Tiers",
    "all_pass",
    "all_true",
    "any_true",
    "broadcast",
    "concat",
    "first_decisive",
    "first_failure",
    "intersect_victims",
    "narrow",
    "sum_scores",
    "tier_all_true",
    "tier_vote",
]

Tiers = Sequence[Sequence[tuple[str, Callable[..., Any]]]]
Flat = Sequence[tuple[str, Callable[..., Any]]]
Call = Callable[[str, Callable[..., Any], tuple[Any, ...]], Any]
Rule = Callable[..., Any]
"""``rule(tiers, call, *args)``: the combined answer of the tiers' callbacks to ``args``."""
Failed = Callable[[str, Exception], None]
"""Told that a plugin raised (the session reports it and drops the plugin)."""
FastPath = Callable[[Flat, Failed], Callable[..., Any]]
"""``fast(flat, failed)``: a function of ``*args`` answering as the rule would."""


class _Failed:
    def __repr__(self) -> str:
        return "FAILED"


FAILED: Any = _Failed()


def first_decisive(tiers: Tiers, call: Call, *args: Any) -> int:
    """Orders: the first non-zero comparison wins; 0 means no plugin decided."""
    for tier in tiers:
        for plugin, fn in tier:
            result = call(plugin, fn, args)
            if result is not FAILED and result:
                return int(result)
    return 0


def all_pass(tiers: Tiers, call: Call, *args: Any) -> str | None:
    """Predicates: None when every plugin passes, else the first failure's reason."""
    for tier in tiers:
        for plugin, fn in tier:
            reason = call(plugin, fn, args)
            if reason is not FAILED and reason is not None:
                return str(reason)
    return None


def concat(tiers: Tiers, call: Call, *args: Any) -> list[Any]:
    """Vectorised predicates: every plugin's (reason, failed-mask) pairs, in tier order.

    Read per node, the first pair whose mask fails the node gives the node's
    reason: ``all_pass`` of the plugins' answers for that node.
    """
    found: list[Any] = []
    for tier in tiers:
        for plugin, fn in tier:
            result = call(plugin, fn, args)
            if result is not FAILED:
                found.extend(result)
    return found


def all_true(tiers: Tiers, call: Call, *args: Any) -> bool:
    """Every plugin must say True (an answer other than False counts as True)."""
    for tier in tiers:
        for plugin, fn in tier:
            if call(plugin, fn, args) is False:
                return False
    return True


def any_true(tiers: Tiers, call: Call, *args: Any) -> bool:
    """One plugin saying True is enough."""
    for tier in tiers:
        for plugin, fn in tier:
            if call(plugin, fn, args) is True:
                return True
    return False


def tier_vote(tiers: Tiers, call: Call, *args: Any) -> bool:
    """Votes of -1 (reject), 0 (abstain), +1 (permit): a reject anywhere ends it with
    False; a permit decides True at the end of its tier; no vote at all is True."""
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


def sum_scores(tiers: Tiers, call: Call, *args: Any) -> Any:
    """Scores add up, in tier order. Works on numbers and on arrays of scores alike
    (0.0 when no plugin scored)."""
    total: Any = 0.0
    for tier in tiers:
        for plugin, fn in tier:
            score = call(plugin, fn, args)
            if score is not FAILED:
                total = total + score
    return total


def first_failure(tiers: Tiers, call: Call, *args: Any) -> Any:
    """The first result that did not pass (job valid); None when all passed."""
    for tier in tiers:
        for plugin, fn in tier:
            result = call(plugin, fn, args)
            if result is not FAILED and result is not None and not result.passed:
                return result
    return None


def tier_all_true(tiers: Tiers, call: Call, *args: Any) -> bool:
    """The first tier with an answering plugin decides: all of its answers must be
    True. No answer anywhere is False."""
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
    """Victims proposed within a tier intersect (None abstains); the first tier that
    proposes any list decides, even an empty one."""
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


def narrow(tiers: Tiers, call: Call, *args: Any) -> list[Any]:
    """Victims filtered in turn, across every tier: each plugin is offered what the ones
    before it kept (the last argument narrowed) and keeps those it allows (None keeps
    them all). Nobody answering keeps everything offered."""
    *head, offered = args
    kept = list(offered)
    for tier in tiers:
        for plugin, fn in tier:
            if not kept:
                return kept
            allowed = call(plugin, fn, (*head, kept))
            if allowed is FAILED or allowed is None:
                continue
            uids = {v.uid for v in allowed}
            kept = [v for v in kept if v.uid in uids]
    return kept


def broadcast(tiers: Tiers, call: Call, *args: Any) -> None:
    """Every plugin is told; the answers are ignored (events)."""
    for tier in tiers:
        for plugin, fn in tier:
            call(plugin, fn, args)


RULES: tuple[Rule, ...] = (
    first_decisive,
    all_pass,
    concat,
    all_true,
    any_true,
    tier_vote,
    sum_scores,
    first_failure,
    tier_all_true,
    intersect_victims,
    narrow,
    broadcast,
)

# -- fast paths ----------------------------------------------------------------

FAST_PATHS: dict[Rule, FastPath] = {}
"""Rule -> its fast path over the callbacks flattened in tier order."""


def _fast_path_of(rule: Rule) -> Callable[[FastPath], FastPath]:
    def register(fast: FastPath) -> FastPath:
        if rule in FAST_PATHS:
            raise ValueError(f"rule {rule.__name__} has a fast path already")
        FAST_PATHS[rule] = fast
        return fast

    return register


@_fast_path_of(first_decisive)
def _first_decisive_flat(flat: Flat, failed: Failed) -> Callable[..., int]:
    def run(*args: Any) -> int:
        for plugin, fn in flat:
            try:
                result = fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)
                continue
            if result:
                return int(result)
        return 0

    return run


@_fast_path_of(all_pass)
def _all_pass_flat(flat: Flat, failed: Failed) -> Callable[..., str | None]:
    def run(*args: Any) -> str | None:
        for plugin, fn in flat:
            try:
                reason = fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)
                continue
            if reason is not None:
                return str(reason)
        return None

    return run


@_fast_path_of(concat)
def _concat_flat(flat: Flat, failed: Failed) -> Callable[..., list[Any]]:
    def run(*args: Any) -> list[Any]:
        found: list[Any] = []
        for plugin, fn in flat:
            try:
                result = fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)
                continue
            found.extend(result)
        return found

    return run


@_fast_path_of(first_failure)
def _first_failure_flat(flat: Flat, failed: Failed) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        for plugin, fn in flat:
            try:
                result = fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)
                continue
            if result is not None and not result.passed:
                return result
        return None

    return run


@_fast_path_of(all_true)
def _all_true_flat(flat: Flat, failed: Failed) -> Callable[..., bool]:
    def run(*args: Any) -> bool:
        for plugin, fn in flat:
            try:
                answer = fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)
                continue
            if answer is False:
                return False
        return True

    return run


@_fast_path_of(broadcast)
def _broadcast_flat(flat: Flat, failed: Failed) -> Callable[..., None]:
    def run(*args: Any) -> None:
        for plugin, fn in flat:
            try:
                fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                failed(plugin, exc)

    return run
