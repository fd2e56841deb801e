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
