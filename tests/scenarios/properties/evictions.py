"""Invariants of preemption and reclaim, checked from the ``evicted`` events as they come.

A session's decisions reach the event stream together, evictions first and then binds
(``framework.effects.carry_out``): a run of ``evicted`` and ``bound`` events is one
session's outcome, before any controller or kubelet reacts. Rules about what an eviction
leaves behind (a gang's minMember, a queue's guarantee) are judged at the end of that run,
so what the same session bound counts, as it does for the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.scenarios.properties.invariants import Invariant, describe
from tests.scenarios.properties.ledger import Ledger, PodKey, PodRecord
from tests.scenarios.properties.world import PODS, PodFacts

__all__ = [
    "DeschedulerVictims",
    "EvictedOnce",
    "EvictionKeepsGangs",
    "EvictionKeepsGuarantees",
    "VictimsAllowed",
    "eviction_invariants",
]

Amounts = dict[str, int]


def eviction_invariants(*, conformance: bool, gang: bool = True) -> list[Invariant]:
    """The eviction rules; ``conformance``, ``gang``: the configuration has that plugin."""
    return [
        EvictedOnce(),
        VictimsAllowed(conformance=conformance),
        DeschedulerVictims(),
        *([EvictionKeepsGangs()] if gang else []),
        EvictionKeepsGuarantees(),
    ]


def _pod(event: Mapping[str, Any]) -> str:
    return describe("Pod", event["namespace"], event["name"])


def _add(total: Amounts, more: Mapping[str, int], sign: int = 1) -> None:
    for r, v in more.items():
        total[r] = total.get(r, 0) + sign * v


class EvictedOnce(Invariant):
    """A pod is evicted at most once (by uid), and only while it runs on a node."""

    name = "evicted once"

    def __init__(self) -> None:
        self.evicted: set[str] = set()

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "evicted":
            return
        pod = ledger.pod(event)
        if pod is None or not pod.holds_node:
            self.fail(ledger, _pod(event), "evicted while it holds no node")
        uid = ledger.live.get(("Pod", event["namespace"], event["name"]), "")
        if uid and uid in self.evicted:
            self.fail(ledger, _pod(event), f"uid {uid} evicted a second time")
        self.evicted.add(uid)


class VictimsAllowed(Invariant):
    """Never evicted: a pod whose ``volcano.sh/preemptable`` says false; with conformance, a
    critical pod (kube-system, system-critical class). Every eviction names a preemptor, which
    exists, is waiting, and does not have ``preemptionPolicy: Never``; preempt takes from the
    preemptor's own queue, reclaim from another."""

    name = "victim rules"

    def __init__(self, *, conformance: bool) -> None:
        self.conformance = conformance

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "evicted":
            return
        pod = ledger.pod(event)
        facts = pod.facts if pod is not None else None
        if facts is None or _descheduled(event):
            return
        obj = _pod(event)
        if not facts.preemptable:
            self.fail(ledger, obj, "evicted although volcano.sh/preemptable is false")
        if self.conformance and facts.critical:
            self.fail(ledger, obj, "evicted although critical (conformance)")
        by = event.get("preemptor", "")
        if not by:
            self.fail(ledger, obj, f"evicted ({event.get('reason')}) for no preemptor")
        ns, _, name = by.partition("/")
        preemptor = ledger.pods.get((ns, name))
        if preemptor is None or preemptor.facts is None:
            self.fail(ledger, obj, f"evicted for {by}, which does not exist")
            return
        if preemptor.node or preemptor.ended:
            self.fail(ledger, obj, f"evicted for {by}, which is not waiting")
        if preemptor.facts.never_preempts:
            self.fail(ledger, obj, f"evicted for {by}, whose preemptionPolicy is Never")
        # Read now: a pod submitted before its PodGroup took the group's queue only later.
        theirs = ledger.world.pod(ns, name) or preemptor.facts
        mine = ledger.world.pod(event["namespace"], event["name"]) or facts
        same = theirs.queue == mine.queue
        if event.get("reason") == "preempt" and not same:
            self.fail(ledger, obj, f"preempted across queues for {by}")
        if event.get("reason") == "reclaim" and same:
            self.fail(ledger, obj, f"reclaimed within queue {mine.queue} for {by}")


def _descheduled(event: Mapping[str, Any]) -> bool:
    return event.get("by") == "descheduler"


class DeschedulerVictims(Invariant):
    """The descheduler evicts only pods something makes again (a controller owns them), and
    never one whose ``volcano.sh/preemptable`` says false; it names no preemptor. (Its gang
    and budget rules are EvictionKeepsGangs' and EvictionKeepsBudgets', which judge every
    eviction.)"""

    name = "descheduler victims"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "evicted" or not _descheduled(event):
            return
        pod = ledger.pod(event)
        facts = pod.facts if pod is not None else None
        if facts is None:
            return
        obj = _pod(event)
        if facts.controller is None:
            self.fail(ledger, obj, "descheduled although nothing would make it again")
        if not facts.preemptable:
            self.fail(ledger, obj, "descheduled although volcano.sh/preemptable is false")
        if event.get("preemptor"):
            self.fail(ledger, obj, f"descheduled for a preemptor ({event['preemptor']})")


_RUN = ("evicted", "bound")
"""Events of one session's outcome: its evictions, then its binds."""


@dataclass
class _SessionRun:
    """What one session evicted and bound, with the ledger as it stood before."""

    held_before: dict[str, Amounts]
    victims: list[PodRecord] = field(default_factory=list)
    preemptors: dict[PodKey, PodFacts] = field(default_factory=dict)
    bound: list[PodRecord] = field(default_factory=list)


class _AfterEvictions(Invariant):
    """Collects a run of evictions and the binds after them; ``judge`` at its end."""

    descheduler = True
    """Whether the descheduler's evictions are judged too."""

    def __init__(self) -> None:
        self.run: _SessionRun | None = None

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] not in _RUN:
            self._close(ledger)
            return
        if not self.descheduler and _descheduled(event):
            self._close(ledger)
            return
        pod = ledger.pod(event)
        if event["event"] == "bound":
            if self.run is not None and pod is not None:
                self.run.bound.append(pod)
            return
        if self.run is None:
            self.run = _SessionRun(held_before(ledger))
        if pod is not None:
            self.run.victims.append(pod)
        ns, _, name = event.get("preemptor", "").partition("/")
        preemptor = ledger.pods.get((ns, name))
        if preemptor is not None and preemptor.facts is not None:
            self.run.preemptors[(ns, name)] = preemptor.facts

    def at_instant_end(self, ledger: Ledger) -> None:
        self._close(ledger)

    def _close(self, ledger: Ledger) -> None:
        run, self.run = self.run, None
        if run is not None:
            self.judge(run, ledger)

    def judge(self, run: _SessionRun, ledger: Ledger) -> None:
        raise NotImplementedError


def held_before(ledger: Ledger) -> dict[str, Amounts]:
    """Per queue, the requests of our pods holding a node."""
    held: dict[str, Amounts] = {}
    for pod in ledger.pods.values():
        if pod.holds_node and pod.facts is not None and pod.facts.ours:
            _add(held.setdefault(pod.facts.queue, {}), pod.facts.requests)
    return held


class EvictionKeepsGangs(_AfterEvictions):
    """After a session's evictions (and its binds), every PodGroup it evicted from still has
    minMember members running or succeeded, or none running: a gang goes whole or not at
    all."""

    name = "gang kept by eviction"

    def judge(self, run: _SessionRun, ledger: Ledger) -> None:
        groups = sorted({(p.namespace, p.group) for p in run.victims if p.group})
        for ns, group in groups:
            need = ledger.world.min_member(ns, group)
            if not need:
                continue
            members = ledger.members(ns, group)
            running = [p.name for p in members if p.holds_node]
            ready = len(running) + sum(1 for p in members if p.ended == "completed")
            if running and ready < need:
                evicted = ", ".join(p.name for p in run.victims if p.group == group)
                self.fail(
                    ledger,
                    describe("PodGroup", ns, group),
                    f"evicting {evicted} left {ready} of minMember {need} running or "
                    f"succeeded ({', '.join(running)} still running)",
                )


class EvictionKeepsGuarantees(_AfterEvictions):
    """No session's evictions take a queue below its ``spec.guarantee`` in a resource they
    took from it. A preemptor of the victims' own queue takes their place (it waits,
    pipelined, for the room) and counts for the queue, as the scheduler counts it."""

    name = "queue guarantee"
    descheduler = False  # the descheduler does not weigh queue guarantees (README)

    def judge(self, run: _SessionRun, ledger: Ledger) -> None:
        taken: dict[str, Amounts] = {}
        for victim in run.victims:
            if victim.facts is not None:
                _add(taken.setdefault(victim.facts.queue, {}), victim.facts.requests)
        after = {q: dict(a) for q, a in run.held_before.items()}
        for bound in run.bound:
            if bound.facts is not None and bound.facts.ours:
                _add(after.setdefault(bound.facts.queue, {}), bound.facts.requests)
        bound_keys = {(p.namespace, p.name) for p in run.bound}
        for key, facts in sorted(run.preemptors.items()):
            if facts.queue in taken:
                _add(taken[facts.queue], facts.requests, -1)
                if key not in bound_keys:
                    _add(after.setdefault(facts.queue, {}), facts.requests)
        for queue, amounts in sorted(taken.items()):
            floor = ledger.world.guarantee(queue)
            if not floor:
                continue
            now = after.get(queue, {})
            for victim in run.victims:
                if victim.facts is not None and victim.facts.queue == queue:
                    _add(now, victim.facts.requests, -1)
            for r, v in sorted(amounts.items()):
                if r != PODS and v > 0 and now.get(r, 0) < floor.get(r, 0):
                    self.fail(
                        ledger,
                        describe("Queue", "", queue),
                        f"evictions left {r} {now.get(r, 0)} held below its guarantee {floor[r]}",
                    )
