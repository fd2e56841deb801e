"""The files a user writes, edited, through the simulator: the scenario files, scheduler
configurations and descheduler policies of tests/scenarios/yaml.

Two kinds of edit:
- ``mutated``: one field given a value of another shape, dropped, or a key added. Whatever
  the file then holds, a run goes (exit 0, or 3 and 4 for a deadlock or pods that can
  never be placed) or is refused with one line naming the file (exit 2), never a traceback.
- ``edited``: one to three fields given another value of their own shape (another number,
  amount, name from the same file, choice of actions), a key or a list item dropped or
  doubled. What the loader takes runs under every invariant of the generated workloads,
  and gives the same events twice and on the NumPy twins.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given, note, reject, settings
from hypothesis import strategies as st

from asyncsched.backends.sim.fields import ManifestError
from asyncsched.cli import main
from asyncsched.descheduler.policy import PolicyError
from asyncsched.framework import ConfigError
from asyncsched.model import kernels
from tests.scenarios.properties.runner import kernels_used, simulate

YAML = Path(__file__).resolve().parents[1] / "yaml"
FILES = sorted(
    p.name
    for p in YAML.glob("*.yaml")
    if not p.name.endswith(("-config.yaml", "-policy.yaml")) and p.stat().st_size < 16_000
)
"""Cluster and workload files (configurations and descheduler policies are other
inputs), small enough to simulate in a moment."""
CONFIGS = sorted(p.name for p in YAML.glob("*-config.yaml"))
POLICIES = sorted(p.name for p in YAML.glob("*-policy.yaml"))
CARRIED = "#policy.yaml"
"""After a file's name: the policy its ConfigMap carries as text, edited on its own."""

ODD_VALUES: list[Any] = [
    None, "", "x", "12x", "-1", "1e400", "0.5", "Always", " ", "a" * 300,
    0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30, 0.5, -0.0, math.inf, math.nan,
    True, False, [], {}, ["x"], [None], {"x": 1}, {"": ""}, [[1]],
]  # fmt: skip
"""What a hand-edited manifest can hold where another shape was meant."""

_NAME = re.compile(r"[a-z][a-z0-9.-]*")
ACTIONS = ["enqueue", "allocate", "backfill", "preempt", "reclaim"]


def _documents(name: str) -> list[Any]:
    file, _, key = name.partition("#")
    docs = [d for d in yaml.safe_load_all((YAML / file).read_text()) if d is not None]
    return [yaml.safe_load(docs[0]["data"][key])] if key else docs


@st.composite
def mutated(draw: st.DrawFn, files: list[str] = FILES) -> tuple[str, str, str]:
    """(file name, what was changed, the changed file's text)."""
    name = draw(st.sampled_from(files))
    docs = _documents(name)
    index = draw(st.integers(0, len(docs) - 1))
    path: list[str | int] = []
    parent: Any = docs
    key: str | int = index
    while True:
        node = parent[key]
        children: list[str | int] = (
            list(node) if isinstance(node, dict) else list(range(len(node)))
            if isinstance(node, list) else []
        )  # fmt: skip
        if not children or draw(st.integers(0, 3)) == 0:
            break
        parent, key = node, draw(st.sampled_from(children))
        path.append(key)
    how = draw(st.sampled_from(["replace", "replace", "replace", "drop", "add"]))
    node = parent[key]
    if how == "drop" and isinstance(parent, dict) and path:
        del parent[key]
        what = f"dropped {path}"
    elif how == "add" and isinstance(node, dict):
        node[draw(st.sampled_from(["x", "spec", "status", "metadata", "kind"]))] = draw(
            st.sampled_from(ODD_VALUES)
        )
        what = f"added a key at {path}"
    else:
        value = draw(st.sampled_from(ODD_VALUES))
        parent[key] = value
        what = f"{path} = {value!r}"
    return name, what, yaml.safe_dump_all(docs, sort_keys=False)


def _runs_or_is_refused(name: str, text: str, flags: list[str]) -> None:
    """Simulate with ``text`` written as ``name`` and given to ``flags``' last flag."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        argv = ["simulate", *flags, str(path), "--until", "7200", "--events", "/dev/null"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    errors = err.getvalue()
    event(f"exit {code}")
    assert "Traceback" not in errors, errors
    assert code in (0, 2, 3, 4), (code, errors)
    if code == 2:
        lines = errors.splitlines()
        assert len(lines) == 1 and lines[0].startswith("asyncsched: error: "), errors
        assert str(path) in lines[0], lines[0]


@given(mutated())
def test_a_changed_scenario_runs_or_is_refused_with_one_line(
    change: tuple[str, str, str],
) -> None:
    name, what, text = change
    note(f"{name}: {what}")
    _runs_or_is_refused(name, text, ["-f"])


@given(mutated(CONFIGS), st.sampled_from(["gang-training.yaml", "pdb-preempt.yaml"]))
def test_a_changed_configuration_runs_or_is_refused_with_one_line(
    change: tuple[str, str, str], cluster: str
) -> None:
    """The scheduler configuration (Volcano's format) edited: actions, tiers, arguments."""
    name, what, text = change
    note(f"{name}: {what}")
    _runs_or_is_refused(name, text, ["-f", str(YAML / cluster), "--config"])


@given(mutated([*POLICIES, "descheduler-seed000-policy.yaml" + CARRIED]))
def test_a_changed_descheduler_policy_runs_or_is_refused_with_one_line(
    change: tuple[str, str, str],
) -> None:
    name, what, text = change
    note(f"{name}: {what}")
    cluster = ["-f", str(YAML / "deschedule-after-maintenance.yaml")]
    _runs_or_is_refused(name.replace(CARRIED, ""), text, [*cluster, "--descheduler-policy"])


def _plausible(value: Any, strings: list[str]) -> st.SearchStrategy[Any]:
    """A value of the same shape as ``value``: what a user editing it might write."""
    if isinstance(value, bool):
        return st.just(not value)
    if isinstance(value, int):
        return st.sampled_from([0, 1, 2, 3, 5, 10, 100, -1, value + 1, max(value - 1, 0)])
    if isinstance(value, float):
        return st.sampled_from([0.0, 0.5, 1.0, 10.0, 1e6, value * 2])
    if isinstance(value, str):
        if value[:1].isdigit():  # an amount
            return st.sampled_from(["0", "1", "100m", "2", "64", "1Gi", "0.5", "3Ki", "10"])
        if _NAME.fullmatch(value):  # a name: another of the file's names
            return st.sampled_from([s for s in strings if _NAME.fullmatch(s)])
        return st.sampled_from(strings or [value])
    return st.just(value)


def _paired_config(name: str) -> str | None:
    """The configuration a scenario file is run with (``X-config.yaml`` beside ``X.yaml``),
    None for the default."""
    config = name.removesuffix(".yaml") + "-config.yaml"
    return config if (YAML / config).exists() else None


@st.composite
def edited(draw: st.DrawFn, files: list[str] = FILES) -> tuple[str, str, str]:
    """(file name, what was changed, the changed file's text): one or a few fields of one
    scenario file given another value of their own shape (another number, amount or name
    from the file), a key dropped or a list item dropped or doubled."""
    name = draw(st.sampled_from(files))
    docs = _documents(name)
    strings = sorted({s for s in _leaves(docs) if isinstance(s, str) and 0 < len(s) < 64})
    whats = []
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = docs
        key: str | int = draw(st.integers(0, len(docs) - 1))
        path: list[str | int] = [key]
        while isinstance(parent[key], (dict, list)) and parent[key]:
            node = parent[key]
            children = (
                [k for k in node if k not in ("apiVersion", "kind")]  # only ever refused
                if isinstance(node, dict) else list(range(len(node)))
            )  # fmt: skip
            if not children or draw(st.integers(0, 5)) == 0:
                break
            parent, key = node, draw(st.sampled_from(children))
            path.append(key)
        node = parent[key]
        how = draw(st.sampled_from(["value", "value", "value", "drop", "double"]))
        if how == "drop" and len(path) > 2 and path[1:3] != ["metadata", "name"]:
            del parent[key]
            whats.append(f"dropped {path}")
        elif how == "double" and isinstance(node, list) and node:
            node.append(node[draw(st.integers(0, len(node) - 1))])
            whats.append(f"doubled an item of {path}")
        elif key == "actions":  # a configuration's: another choice and order of actions
            chosen = draw(st.permutations(ACTIONS))[: draw(st.integers(1, len(ACTIONS)))]
            parent[key] = ", ".join(chosen)
            whats.append(f"{path}: {node!r} -> {parent[key]!r}")
        elif not isinstance(node, (dict, list)):
            parent[key] = draw(_plausible(node, strings))
            whats.append(f"{path}: {node!r} -> {parent[key]!r}")
    return name, "; ".join(whats), yaml.safe_dump_all(docs, sort_keys=False)


def _leaves(node: Any) -> Iterator[Any]:
    if isinstance(node, dict):
        for child in node.values():
            yield from _leaves(child)
    elif isinstance(node, list):
        for child in node:
            yield from _leaves(child)
    else:
        yield node


@settings(max_examples=max(10, settings().max_examples // 2))
@given(edited(), st.sampled_from([None, 1, 3]))
def test_an_edited_scenario_decides_the_same_twice_and_with_either_kernels(
    change: tuple[str, str, str], budget: int | None
) -> None:
    """Same input, same events: a second run, and one on the NumPy twins of the compiled
    kernels, over the features the scenario files use (Jobs, Deployments, Commands,
    topology, devices), with and without a session budget."""
    name, what, text = change
    note(f"{name}: {what}")
    chosen = _paired_config(name)
    try:
        first = simulate(text, horizon=7200, config=chosen, checked=False, session_budget=budget)
    except ManifestError:
        reject()
    again = simulate(text, horizon=7200, config=chosen, checked=False, session_budget=budget)
    assert again.events == first.events, "a second run of the same input differs"
    if not kernels.NATIVE:
        pytest.skip("the compiled kernels are not built; nothing to compare the twins with")
    with kernels_used(native=False):
        pure = simulate(text, horizon=7200, config=chosen, checked=False, session_budget=budget)
    assert pure.events == first.events, "the NumPy twins decide differently from the kernels"


@given(edited())
def test_invariants_hold_on_an_edited_scenario(change: tuple[str, str, str]) -> None:
    """The edits a user makes to a working file: what the loader takes must run under
    every invariant the generated workloads are held to."""
    name, what, text = change
    note(f"{name}: {what}")
    try:
        run = simulate(text, horizon=7200, config=_paired_config(name))
    except ManifestError:
        reject()
    event(f"outcome: {run.outcome.reason}")


WORKLOADS = [
    "gang-training.yaml",
    "preempt-priority.yaml",
    "reclaim-guarantee.yaml",
    "capacity-hierarchy.yaml",
    "pdb-preempt.yaml",
    "vgpu-sharing.yaml",
]
"""Workloads that make a configuration's actions and plugins work: gangs, priorities,
queues to reclaim between, a queue tree, budgets and vGPU."""


@given(edited(CONFIGS), st.sampled_from([w for w in WORKLOADS if (YAML / w).exists()]))
def test_invariants_hold_under_an_edited_configuration(
    change: tuple[str, str, str], workload: str
) -> None:
    """Actions or plugins dropped, doubled or swapped for another the file names, arguments
    given other values: what the loader takes must schedule under every invariant, and no
    plugin may fail."""
    name, what, config = change
    note(f"{name}: {what}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name  # a file: the runner adds nothing to it
        path.write_text(config)
        try:
            run = simulate((YAML / workload).read_text(), horizon=7200, config=str(path))
        except (ConfigError, ManifestError):
            reject()
    event(f"outcome: {run.outcome.reason}")


@given(
    edited([*POLICIES, "descheduler-seed000-policy.yaml" + CARRIED]),
    st.sampled_from(
        [
            "deschedule-after-maintenance.yaml",
            "deschedule-defragment-gang.yaml",
            "deschedule-pdb.yaml",
        ]
    ),
    st.sampled_from([10.0, 60.0]),
)
def test_invariants_hold_under_an_edited_descheduler_policy(
    change: tuple[str, str, str], workload: str, interval: float
) -> None:
    """Thresholds, evictor arguments and plugins edited: whatever the policy reader takes,
    the descheduler moves only what it may (no gang below minMember, no budget broken,
    only pods a controller makes again) among the scheduler's sessions."""
    name, what, policy = change
    note(f"{name}: {what}")
    text = (YAML / workload).read_text()
    try:
        # beyond the longest wait the edits can write (waitingThreshold: 100m)
        run = simulate(text, horizon=20_000, descheduler=(policy, interval))
    except (PolicyError, ManifestError):
        reject()
    moved = run.events.count(b'"by":"descheduler"')
    event("pods descheduled: " + ("3 or more" if moved >= 3 else str(moved)))
