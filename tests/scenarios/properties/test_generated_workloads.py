"""Generated clusters and workloads through the real loader and simulator.

Every event is checked as it is emitted (tests/scenarios/properties/invariants.py), and the
same input must give byte-identical events on every run: twice in one process, with the
compiled kernels and with their NumPy twins, and under another hash seed.
The number of examples comes from the Hypothesis profile (conftest.py): all of them for the
invariants, half for the repeat runs (three runs each), one in fifty under another hash seed
(a subprocess each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from asyncsched.model import kernels
from tests.scenarios.properties.configs import (
    descheduler_policies,
    evicting_configs,
    gpu_configs,
)
from tests.scenarios.properties.descheduling import descheduling_inputs
from tests.scenarios.properties.pressure import pressure_inputs
from tests.scenarios.properties.runner import kernels_used, simulate
from tests.scenarios.properties.workloads import Input, inputs

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = st.one_of(
    st.sampled_from(
        [
            None,
            "binpack-config.yaml",
            "capacity-config.yaml",
            "capacity-hierarchy-config.yaml",
            "vgpu-config.yaml",
        ]
    ),
    evicting_configs(),
    gpu_configs(),
)
"""A configuration file of tests/scenarios/yaml (None: the default), or a generated one
that preempts and reclaims, or places GPU pods with gpufrag (YAML text)."""


@given(inputs(), CONFIGS, st.booleans())
def test_invariants_hold_at_every_instant(
    workload: Input, config: str | None, gauges: bool
) -> None:
    """``gauges``: the sessions also work out the plugins' figures (drf's job shares,
    proportion's queues), as the kube shell's do, under the suite's snapshot check."""
    text = workload.yaml()
    note(text)
    if config is not None and "\n" in config:
        note(config)
    run = simulate(text, horizon=workload.horizon, config=config, gauges=gauges)
    event(f"outcome: {run.outcome.reason}")
    evicted = run.events.count(b'"event":"evicted"')
    event("pods evicted: " + ("5 or more" if evicted >= 5 else str(evicted)))
    bound = run.events.count(b'"event":"bound"')
    event("pods bound: " + ("10 or more" if bound >= 10 else str(bound)))
    if config is not None and "name: gpufrag" in config:
        cards = any(k in text for k in ("vgpu-register", "asyncsched.io/gpus", "nvidia.com/gpu"))
        placed = "pods bound" if bound else "nothing bound"
        event(f"gpufrag: {placed}, " + ("GPUs in the input" if cards else "no GPU in the input"))


@settings(max_examples=max(10, settings().max_examples // 2))
@given(pressure_inputs(), evicting_configs())
def test_invariants_hold_when_evictions_meet_disruption_budgets(
    workload: Input, config: str
) -> None:
    """Full nodes, PodDisruptionBudgets over what fills them, and later work that preempt or
    reclaim must make room for; the configuration gets the pdb plugin (steering)."""
    text = workload.yaml()
    note(text)
    note(config)
    run = simulate(text, horizon=workload.horizon, config=config)
    evicted = run.events.count(b'"event":"evicted"')
    event("pods evicted: " + ("5 or more" if evicted >= 5 else str(evicted)))
    refused = run.events.count(b'"event":"refused"')
    event("evictions refused: " + ("some" if refused else "none"))


@settings(max_examples=max(10, settings().max_examples // 4))
@given(
    st.one_of(*[descheduling_inputs()] * 4, inputs(), pressure_inputs()),
    st.sampled_from([None, "binpack-config.yaml"]) | evicting_configs(),
    descheduler_policies(),
    st.sampled_from([10.0, 25.0]),
)
def test_invariants_hold_with_the_descheduler(
    workload: Input, config: str | None, policy: str, interval: float
) -> None:
    """The descheduler's passes among the scheduler's sessions: no gang below minMember, no
    budget broken, only pods a controller makes again (DeschedulerVictims), and every other
    invariant still holds."""
    text = workload.yaml()
    note(text)
    note(policy)
    run = simulate(text, horizon=workload.horizon, config=config, descheduler=(policy, interval))
    moved = run.events.count(b'"by":"descheduler"')
    event("pods descheduled: " + ("3 or more" if moved >= 3 else str(moved)))


@settings(max_examples=max(10, settings().max_examples // 2))
@given(inputs(), CONFIGS)
def test_same_input_same_events_with_either_kernels(workload: Input, config: str | None) -> None:
    text = workload.yaml()
    note(text)
    if config is not None and "\n" in config:
        note(config)
    first = simulate(text, horizon=workload.horizon, config=config, checked=False).events
    again = simulate(text, horizon=workload.horizon, config=config, checked=False).events
    assert again == first, "a second run of the same input differs"
    if not kernels.NATIVE:
        pytest.skip("the compiled kernels are not built; nothing to compare the twins with")
    with kernels_used(native=False):
        pure = simulate(text, horizon=workload.horizon, config=config, checked=False).events
    assert pure == first, "the NumPy twins decide differently from the compiled kernels"


@settings(max_examples=max(10, settings().max_examples // 4))
@given(inputs(), CONFIGS, st.integers(min_value=1, max_value=4))
def test_invariants_hold_when_a_budget_cuts_sessions_short(
    workload: Input, config: str | None, budget: int
) -> None:
    """Sessions that stop after placing ``budget`` tasks (``SessionBudget``) keep every
    invariant, decide the same twice, and end the way unbudgeted sessions do."""
    text = workload.yaml()
    note(text)
    if config is not None and "\n" in config:
        note(config)
    cut = simulate(text, horizon=workload.horizon, config=config, session_budget=budget)
    again = simulate(
        text, horizon=workload.horizon, config=config, checked=False, session_budget=budget
    )
    assert again.events == cut.events, "a second run of the same input differs"
    whole = simulate(text, horizon=workload.horizon, config=config, checked=False)
    same = cut.outcome.reason == whole.outcome.reason
    event("outcome as without a budget" if same else "another outcome than without a budget")


_CLI = "import sys; from asyncsched.cli import main; sys.exit(main(sys.argv[1:]))"


@settings(max_examples=max(3, settings().max_examples // 50))
@given(workload=inputs())
def test_same_events_under_another_hash_seed(
    workload: Input, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Set and dict orders of strings change with PYTHONHASHSEED; the events must not."""
    text = workload.yaml()
    note(text)
    here = simulate(text, horizon=workload.horizon, checked=False).events
    folder = tmp_path_factory.mktemp("hashseed")
    manifest, events = folder / "input.yaml", folder / "events.jsonl"
    manifest.write_text(text)
    argv = ["simulate", "-f", str(manifest), "--events", str(events)]
    argv += ["--until", f"{workload.horizon:g}"]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _CLI, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 3, 4), done.stderr  # ran, deadlock, stuck
    assert events.read_bytes() == here, "the events depend on the hash seed"
