"""Why pods wait, in a few words a dashboard can group by.

A pending pod's message is the text of its Event and PodGroup condition
(``0/6 nodes are unavailable: 2 Insufficient nvidia.com/gpu, 4 node(s) had untolerated
taint {gpu: true}.``, ``3/4 tasks in gang fit: ...``, ``waiting to be admitted to queue
'ml'``). As a label it would be unbounded (counts, node totals, taint values), so it is
cut down to its reasons: each node predicate's reason without counts or ``{...}``
details, or one word for gang, queue, room being released and anything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from asyncsched.framework.cycle import FITS_WAITING_FOR_GANG, PIPELINED_MESSAGE

__all__ = ["count_reasons", "reasons"]

_NODES = re.compile(r"^0/\d+ nodes are (?:un)?available(?:: (?P<parts>.*?))?\.?$")
_COUNT = re.compile(r"^\d+ ")
_DETAILS = re.compile(r"\s*\{[^}]*\}")
_PREEMPTION = re.compile(r"[ ;]+preemption: .*$")


def reasons(message: str) -> list[str]:
    """The reasons of one pending pod's message (at least one)."""
    text = _PREEMPTION.sub("", message.strip())
    if text == PIPELINED_MESSAGE:
        return ["releasing"]
    match = _NODES.match(text)
    if match is not None:
        parts = (match.group("parts") or "").split(", ")
        found = [_DETAILS.sub("", _COUNT.sub("", p)).strip() for p in parts]
        return sorted({r for r in found if r}) or ["no nodes"]
    if " tasks in gang " in text or text.startswith(FITS_WAITING_FOR_GANG):
        return ["gang"]
    if "queue" in text:
        return ["queue"]
    return ["other"]


def count_reasons(messages: Iterable[str]) -> dict[str, int]:
    """Pods per reason; a pod kept off nodes for two reasons counts under both."""
    counts: dict[str, int] = {}
    for message in messages:
        for reason in reasons(message):
            counts[reason] = counts.get(reason, 0) + 1
    return counts
