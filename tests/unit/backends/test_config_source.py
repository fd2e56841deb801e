"""Configuration reload: validated whole, last good kept on error, unchanged files not re-read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import ConfigError, Registry

GOOD = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'


def _touch(path: Path, text: str, bump: int) -> None:
    path.write_text(text)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + bump))


def test_changes_apply_and_bad_edits_keep_the_last_good(tmp_path: Path) -> None:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(GOOD)
    source = ConfigSource(Registry(), conf)
    assert source.poll().changed is False

    _touch(conf, GOOD.replace("gang", "gang\n  - name: binpack"), 1_000_000)
    outcome = source.poll()
    assert outcome.changed and source.current.configuration.plugin_names() == ["gang", "binpack"]

    _touch(conf, GOOD.replace("gang", "nope"), 2_000_000)
    outcome = source.poll()
    assert not outcome.changed and "unknown plugin 'nope'" in outcome.error
    assert source.current.configuration.plugin_names() == ["gang", "binpack"]
    assert source.rejections == 1

    conf.unlink()
    assert "cannot read" in source.poll().error
    assert source.current.configuration.plugin_names() == ["gang", "binpack"]


def test_a_bad_file_at_start_is_an_error(tmp_path: Path) -> None:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text("actions: 3\n")
    with pytest.raises(ConfigError, match="'actions' must be"):
        ConfigSource(Registry(), conf)


VOLCANO_CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-configmap
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
      - name: conformance
    - plugins:
      - name: overcommit
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
      - name: binpack
"""


def test_a_volcano_config_map_manifest_is_read_as_its_configuration(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler-configmap.yaml"
    conf.write_text(VOLCANO_CONFIG_MAP)
    source = ConfigSource(Registry(), conf)
    assert source.current.configuration.plugin_names()[-1] == "binpack"

    _touch(conf, VOLCANO_CONFIG_MAP.replace("volcano-scheduler.conf", "other.conf"), 1_000_000)
    outcome = source.poll()
    assert not outcome.changed
    assert outcome.error == (
        f"{conf}: a ConfigMap with none of the keys scheduler.yaml, volcano-scheduler.conf "
        "under data"
    )
    assert source.current.configuration.plugin_names()[-1] == "binpack", "the last good kept"


def test_a_config_map_without_the_key_is_refused_at_start(tmp_path: Path) -> None:
    conf = tmp_path / "cm.yaml"
    conf.write_text("apiVersion: v1\nkind: ConfigMap\ndata: {x: y}\n")
    with pytest.raises(ConfigError, match="none of the keys"):
        ConfigSource(Registry(), conf)


def test_a_configuration_read_through_the_api_is_named_by_its_config_map() -> None:
    source = ConfigSource.from_text(Registry(), GOOD, "ConfigMap ns/cm[volcano-scheduler.conf]")
    assert source.name == "ConfigMap ns/cm[volcano-scheduler.conf]"
    assert source.current.configuration.plugin_names() == ["gang"]
    assert source.poll().changed is False
    with pytest.raises(ConfigError, match="ConfigMap ns/cm"):
        ConfigSource.from_text(Registry(), "actions: 3", "ConfigMap ns/cm[volcano-scheduler.conf]")
