"""Feeds a run's events, one at a time, to a set of invariants.

Use it as the simulator's ``on_event`` so every event is judged at the moment
it is emitted, with the world exactly as that event leaves it::

    checker = Checker(SimWorld(sim))       # or Checker(world, [MyInvariant(), ...])
    ... Simulation(..., on_event=checker.feed) ...
    checker.finish(sim.run(until=horizon))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.scenarios.properties import steering
from tests.scenarios.properties.budgets import EvictionKeepsBudgets, NoEvictionRefused
from tests.scenarios.properties.evictions import eviction_invariants
from tests.scenarios.properties.gpus import GpusNeverOverfull
from tests.scenarios.properties.invariants import (
    FittingPodsWaitForGangs,
    GangNeverPartial,
    Invariant,
    NamesAndUidsUnique,
    NodesNeverOverfull,
    NoDoubleBinding,
    Outcome,
    PendingPodsHaveReasons,
    PlacementRespectsNode,
    RunEnds,
    Violation,
    reasons_by_name,
)
from tests.scenarios.properties.ledger import Ledger
from tests.scenarios.properties.pod_affinity import AntiAffinityHeld
from tests.scenarios.properties.topology import HardTopologyHeld
from tests.scenarios.properties.world import World

__all__ = ["Checker", "default_invariants"]


def default_invariants(
    *,
    conformance: bool = True,
    pdb: bool = False,
    descheduler: bool = False,
    gang: bool = True,
    allocate: bool = True,
    endless: bool = False,
) -> list[Invariant]:
    """Every invariant; ``conformance``, ``pdb``, ``gang``: the configuration has that
    plugin (without gang, as in Volcano, nothing keeps a group whole); ``allocate``: it has
    that action (without it no session tries a pod, so none is told why it waits; the
    summary says it); ``descheduler``: a descheduler runs too; ``endless``: a CronJob
    makes Jobs for ever, so the run ends only at its horizon."""
    return [
        RunEnds(jobs=steering.CHECK_PENDING_JOBS, descheduler=descheduler, endless=endless),
        NamesAndUidsUnique(uids=steering.CHECK_UIDS),
        NodesNeverOverfull(),
        GpusNeverOverfull(),
        PlacementRespectsNode(),
        *(
            [
                GangNeverPartial(pending_best_effort_ready=steering.BEST_EFFORT_COUNTS_READY),
                FittingPodsWaitForGangs(),
            ]
            if gang
            else []
        ),
        NoDoubleBinding(),
        *(
            [PendingPodsHaveReasons(reasons_by_name if steering.REASONS_BY_NAME else None)]
            if allocate
            else []
        ),
        *eviction_invariants(conformance=conformance, gang=gang),
        EvictionKeepsBudgets(),
        *([NoEvictionRefused()] if pdb else []),
        HardTopologyHeld(),
        AntiAffinityHeld(),
    ]


class Checker:
    def __init__(self, world: World, invariants: Sequence[Invariant] | None = None) -> None:
        self.ledger = Ledger(world)
        self.invariants = list(invariants) if invariants is not None else default_invariants()
        self._started = False

    def feed(self, event: Mapping[str, Any]) -> None:
        """Judge one event; Violation if it breaks an invariant."""
        ledger = self.ledger
        time = event["time"]
        if not self._started or time > ledger.time:
            if self._started:
                self._instant_end()
            ledger.next_instant(time)
            self._started = True
        elif time < ledger.time:
            raise Violation(ledger.time, "time order", event["name"], f"event at t={time:g}s")
        ledger.regroup(event)
        for invariant in self.invariants:
            invariant.before(event, ledger)
        ledger.apply(event)

    def finish(self, outcome: Outcome) -> None:
        """The run is over: close the last instant and judge the end."""
        if self._started:
            self._instant_end()
        for invariant in self.invariants:
            invariant.at_finish(outcome, self.ledger)

    def _instant_end(self) -> None:
        for invariant in self.invariants:
            invariant.at_instant_end(self.ledger)
