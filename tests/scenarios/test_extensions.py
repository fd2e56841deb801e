"""A pip-installed plugin package takes part; a configuration edited on disk applies."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation, load_manifests
from asyncsched.framework import Registry
from tests.scenarios.harness import YAML, simulate

DRAIN_CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: drain-labelled
  - name: binpack
"""


def _cluster_with_draining_node(tmp_path: Path) -> Path:
    text = (
        (YAML / "binpack.yaml")
        .read_text()
        .replace(
            "  name: node-0\n", '  name: node-0\n  labels:\n    example.io/draining: "true"\n', 1
        )
    )
    path = tmp_path / "draining.yaml"
    path.write_text(text)
    return path


def test_the_example_package_is_found_through_its_entry_point() -> None:
    names = {ep.name for ep in entry_points(group="asyncsched.plugins")}
    assert "example" in names, (
        "run the README's test command: it installs tests/fixtures/example_plugin"
    )
    assert "drain-labelled" in Registry().plugins


def test_a_configured_package_plugin_changes_placement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = _cluster_with_draining_node(tmp_path)
    with_plugin = tmp_path / "with.yaml"
    with_plugin.write_text(DRAIN_CONFIG)
    without_plugin = tmp_path / "without.yaml"
    without_plugin.write_text(DRAIN_CONFIG.replace("  - name: drain-labelled\n", ""))

    drained = simulate(capsys, tmp_path, cluster, config=with_plugin)
    plain = simulate(capsys, tmp_path, cluster, config=without_plugin)

    assert len(drained.placements()) == 8
    assert "node-0" not in drained.placements().values()
    assert "node-0" in plain.placements().values(), "binpack alone packs onto node-0 first"


def _best_effort_later(tmp_path: Path) -> Path:
    path = tmp_path / "later.yaml"
    path.write_text(
        (YAML / "binpack.yaml").read_text()
        + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: sidecar\n"
        "spec:\n  schedulerName: volcano\n  containers:\n  - name: c\n    image: busybox\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: late\n  annotations:\n"
        '    simulation.asyncsched.io/submit-at: "10"\n'
        "spec:\n  schedulerName: volcano\n  containers:\n  - name: c\n    image: busybox\n"
        "    resources:\n      requests:\n        cpu: 100m\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: early\n  annotations:\n"
        '    simulation.asyncsched.io/submit-at: "6"\n'
        "spec:\n  schedulerName: volcano\n  containers:\n  - name: c\n    image: busybox\n"
        "    resources:\n      requests:\n        cpu: 100m\n"
    )
    return path


def test_configuration_edited_while_running_changes_the_next_session(tmp_path: Path) -> None:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(
        DRAIN_CONFIG.replace("  - name: drain-labelled\n", "").replace(
            "enqueue, allocate, backfill", "enqueue, allocate"
        )
    )
    sim = Simulation(load_manifests([_best_effort_later(tmp_path)]), ConfigSource(Registry(), conf))

    sim.run(until=5)
    assert "default/sidecar" not in sim.bound_at, "no backfill configured yet"

    conf.write_text("actions: [not, a, string]\n")
    sim.run(until=7)
    assert sim.config.current.configuration.actions == ("enqueue", "allocate")
    assert sim.config_errors and "'actions' must be" in sim.config_errors[0]
    assert "default/early" in sim.bound_at and "default/sidecar" not in sim.bound_at

    conf.write_text(DRAIN_CONFIG.replace("  - name: drain-labelled\n", ""))
    sim.run()
    assert "default/sidecar" in sim.bound_at
    assert sim.bound_at["default/sidecar"] == 10.0, "the session after the edit placed it"
