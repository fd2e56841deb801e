"""The text ``asyncsched explain`` prints: the verdict first, then the job, queue and nodes."""

from __future__ import annotations

from collections.abc import Sequence

from asyncsched.actions.explain import Explanation, GangState, QueueState
from asyncsched.actions.node_verdicts import NodeVerdict, fit_errors

__all__ = ["render"]

SHOWN_NODES = 50
"""Nodes listed in the text (refused nodes are grouped by reason beyond it); -o json has all."""


def render(found: Explanation, recorded: dict[str, str]) -> str:
    lines = [f"{found.kind} {found.target}: {found.verdict}"]
    if recorded.get("at"):
        lines.append(f"  (simulation at t={recorded['at']})")
    if recorded.get("event"):
        lines.append(f"  last FailedScheduling Event of {found.explained_pod}: {recorded['event']}")
    if found.gang is not None:
        lines += _gang(found.gang, recorded.get("podgroup_condition", ""))
    if found.topology:
        lines.append(f"  {found.topology}")
    if found.queue is not None:
        lines += _queue(found.queue)
    waiting = [p for p in found.pods if p.reason]
    if len(found.pods) > 1 and waiting:
        lines.append("")
        lines.append("pods:")
        lines += _table(
            ["  POD", "STATUS", "NODE", "REASON"],
            [["  " + p.name, p.status, p.node, p.reason] for p in found.pods],
        )
    if found.nodes:
        lines.append("")
        lines.append(f"nodes, for pod {found.explained_pod}: {_nodes_line(found.nodes)}")
        if found.placed_first:
            lines.append(
                f"  (with its gang's members before it placed: {', '.join(found.placed_first)})"
            )
        lines += _nodes(found.nodes)
    for problem in found.problems:
        lines.append(f"warning: {problem}")
    return "\n".join(lines) + "\n"


def _nodes_line(verdicts: list[NodeVerdict]) -> str:
    errors = fit_errors(verdicts)
    passed = sum(1 for v in verdicts if v.passed)
    if not passed:
        return errors.message()
    refused = f"; refused: {errors.summary()}" if errors.reasons else ""
    return f"{passed}/{len(verdicts)} nodes pass{refused}"


def _gang(gang: GangState, recorded: str) -> list[str]:
    roles = ", ".join(f"{k}={v}" for k, v in sorted(gang.min_task_member.items()))
    lines = [
        "",
        f"job (PodGroup {gang.job}): phase {gang.phase}",
        f"  gang: minMember {gang.min_member}"
        + (f" (minTaskMember {roles})" if roles else "")
        + f"; {gang.pods} pod(s): {gang.ready} ready ({gang.running} running), "
        f"{gang.waiting} waiting",
    ]
    if gang.job_reason:
        lines.append(f"  held back: {gang.job_reason}")
    condition = gang.condition
    if condition is not None:
        text = f"{condition['type']}={condition['status']}"
        if condition["reason"]:
            text += f" ({condition['reason']})"
        if condition["message"]:
            text += f": {condition['message']}"
        lines.append(f"  condition: {text}")
    if recorded and (condition is None or recorded != condition["message"]):
        lines.append(f"  condition on the PodGroup now: {recorded}")
    return lines


def _queue(queue: QueueState) -> list[str]:
    head = f"queue {queue.name}: {queue.state}, weight {queue.weight}"
    if queue.share is not None:
        head += f", share {queue.share:.2f}"
    if queue.overused:
        head += ", overused"
    names = sorted({*queue.allocated, *(queue.deserved or {}), *(queue.capability or {})})
    rows = [
        [
            name,
            queue.allocated.get(name, "0"),
            (queue.deserved or {}).get(name, "-"),
            (queue.capability or {}).get(name, "-"),
        ]
        for name in names
    ]
    return [
        "",
        head + f" (from {queue.booked_by})",
        *_table(
            ["  RESOURCE", "ALLOCATED", "DESERVED", "CAPABILITY"],
            [["  " + r[0], *r[1:]] for r in rows],
        ),
    ]


def _nodes(verdicts: list[NodeVerdict]) -> list[str]:
    passed = sorted((v for v in verdicts if v.passed), key=lambda v: -v.total)
    refused = [v for v in verdicts if not v.passed]
    rows = [
        [
            v.node,
            "passed" + (" (best)" if v.best else "") + ("" if v.fits_now else ", after releases"),
            f"{v.total:g}",
            " ".join(f"{p}={s:g}" for p, s in sorted(v.scores.items())),
        ]
        for v in passed[:SHOWN_NODES]
    ]
    room = max(SHOWN_NODES - len(rows), 0)
    rows += [[v.node, f"{v.refused_by}: {v.reason}", "", ""] for v in refused[:room]]
    lines = _table(
        ["  NODE", "VERDICT", "SCORE", "BY PLUGIN"], [["  " + r[0], *r[1:]] for r in rows]
    )
    if len(passed) + len(refused) > len(rows):
        lines.append(f"  ... and {len(verdicts) - len(rows)} more nodes (-o json lists all)")
    return lines


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    cells = [[c if c != "" else "-" for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    return [
        "   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [list(headers), *cells]
    ]
