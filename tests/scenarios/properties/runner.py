"""Runs generated YAML through the real loader and simulator, optionally under the checker."""

from __future__ import annotations

import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import msgspec

from asyncsched.api import Queue
from asyncsched.api.quantity import to_units
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Outcome, Simulation
from asyncsched.backends.sim.cronjobs import endless_cronjob
from asyncsched.backends.sim.manifests import check_references, parse_manifests
from asyncsched.backends.sim.objects import Manifest
from asyncsched.descheduler.policy import parse_policy
from asyncsched.framework import Registry
from asyncsched.model import kernels
from tests.scenarios.properties import steering
from tests.scenarios.properties.checker import Checker, default_invariants
from tests.scenarios.properties.configs import with_pdb
from tests.scenarios.properties.cronjobs import cronjob_invariants
from tests.scenarios.properties.invariants import QueuesWithinCapability, Violation
from tests.scenarios.properties.model_pools import QueuesWithinModelCapability
from tests.scenarios.properties.world import SimWorld

__all__ = ["Run", "kernels_used", "simulate"]

CONFIGS = Path(__file__).parent.parent / "yaml"
WALL_SECONDS = 60.0
"""Real time one generated run may take; the slowest seen take well under a second."""


@dataclass
class Run:
    outcome: Outcome
    events: bytes
    """The JSONL event stream, as ``asyncsched simulate --events`` writes it."""


def simulate(
    text: str,
    *,
    horizon: float,
    config: str | None = None,
    checked: bool = True,
    wall_seconds: float = WALL_SECONDS,
    session_budget: int | None = None,
    descheduler: tuple[str, float] | None = None,
    gauges: bool = False,
) -> Run:
    """Simulate ``text`` until it ends or ``horizon``; with ``checked``, every event goes
    through a default ``Checker`` and a broken invariant raises ``Violation``.

    ``config`` is a file in tests/scenarios/yaml, or a configuration's text (several lines);
    such a text gets the pdb plugin when ``text`` has PodDisruptionBudgets (see steering).

    A run still going after ``wall_seconds`` of real time is stopped with a ``run ends``
    Violation: a simulator that spins at one instant never reaches the horizon.

    ``descheduler``: a DeschedulerPolicy's text and the seconds between its passes.
    ``gauges``: sessions also work out the plugins' figures, as the kube shell's do."""
    manifests = parse_manifests(text, "generated.yaml")
    check_references(manifests)
    if config is not None and "\n" in config:
        if steering.PDB_WITH_BUDGETS and "kind: PodDisruptionBudget" in text:
            config = with_pdb(config)
        with tempfile.TemporaryDirectory() as folder:
            written = Path(folder) / "generated-config.yaml"
            written.write_text(config)
            source = ConfigSource(Registry(), written)
            return _simulate(
                manifests, source, horizon, checked, wall_seconds, session_budget, descheduler,
                gauges,
            )  # fmt: skip
    source = ConfigSource(Registry(), CONFIGS / config if config else None)
    return _simulate(
        manifests, source, horizon, checked, wall_seconds, session_budget, descheduler, gauges
    )


def _simulate(
    manifests: list[Manifest],
    source: ConfigSource,
    horizon: float,
    checked: bool,
    wall_seconds: float,
    session_budget: int | None = None,
    descheduler: tuple[str, float] | None = None,
    gauges: bool = False,
) -> Run:
    encoder = msgspec.json.Encoder()
    lines: list[bytes] = []
    checker: Checker | None = None

    def on_event(event: dict[str, object]) -> None:
        lines.append(encoder.encode(event) + b"\n")
        if checker is not None:
            checker.feed(event)

    policy = None
    if descheduler is not None:
        policy = (parse_policy(descheduler[0], "generated-policy.yaml"), descheduler[1])
    sim = Simulation(
        manifests, source, on_event=on_event, session_budget=session_budget, descheduler=policy
    )
    sim.scheduler.gauges = gauges
    if checked:
        configuration = source.current.configuration
        plugins = configuration.plugin_names()
        checker = Checker(
            SimWorld(sim),
            default_invariants(
                conformance="conformance" in plugins,
                pdb="pdb" in plugins,
                descheduler=descheduler is not None,
                gang="gang" in plugins,
                allocate="allocate" in configuration.actions,
                endless=endless_cronjob(manifests) is not None,
            ),
        )
        checker.invariants += cronjob_invariants(manifests)
        capacity = [p for tier in configuration.tiers for p in tier.plugins if p.name == "capacity"]
        if capacity:
            tree = bool(capacity[0].flags.get("enableHierarchy", False))
            checker.invariants.append(capacity_invariant(manifests, tree))
        if source.current.gpu_pools:
            queues = capacity_invariant(manifests, True).queues
            checker.invariants.append(QueuesWithinModelCapability(source.current.gpu_pools, queues))
    with _wall_clock_limit(wall_seconds, sim):
        outcome = sim.run(until=horizon)
    if checker is not None:
        checker.finish(outcome)
        for failure in sim.scheduler.plugin_failures[:1]:
            detail = f"failed in {failure.hook}: {failure.error}"
            raise Violation(sim.now, "plugins never fail", f"plugin {failure.plugin}", detail)
    return Run(outcome, b"".join(lines))


def capacity_invariant(manifests: list[Manifest], tree: bool) -> QueuesWithinCapability:
    """Queue capabilities hold, from the Queues of the input."""
    queues = {
        m.obj.metadata.name: (
            m.obj.spec.parent,
            {r: to_units(r, q) for r, q in m.obj.spec.capability.items()},
        )
        for m in manifests
        if isinstance(m.obj, Queue)
    }
    return QueuesWithinCapability(queues, tree)


@contextmanager
def _wall_clock_limit(seconds: float, sim: Simulation) -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        detail = f"still running after {seconds:g}s of real time ({sim.sessions} sessions)"
        raise Violation(sim.now, "run ends", "the run", detail)

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def kernels_used(native: bool) -> Iterator[None]:
    """Run the block with the compiled kernels or with their NumPy twins."""
    before = kernels.use_native(native)
    try:
        yield
    finally:
        kernels.use_native(before)
