"""``-f -`` reads the manifests from stdin; ``--events -`` writes the JSONL to stdout."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, refused_flags, simulate

ROOT = Path(__file__).resolve().parents[2]


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_stdin_in_events_out_on_stdout_summary_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A real pipe both ways, as a shell runs it: nothing but events on stdout."""
    from_file = simulate(capsys, tmp_path, "binpack.yaml")

    piped = subprocess.run(
        [sys.executable, "-m", "asyncsched.cli", "simulate", "-f", "-", "--events", "-"],
        input=(YAML / "binpack.yaml").read_bytes(),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=120,
    )

    assert piped.returncode == 0, piped.stderr.decode()
    events = [json.loads(line) for line in piped.stdout.decode().splitlines()]
    assert events == from_file.events and len(from_file.placements()) == 8
    assert piped.stderr.decode() == from_file.stdout, "the summary moves to stderr, whole"


def test_stdin_mixes_with_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pods = (YAML / "binpack.yaml").read_text().split("---\n", 5)[-1]
    _stdin(monkeypatch, pods.encode())

    run = simulate(capsys, tmp_path, "nodes-cpu.yaml", extra=["-f", "-"])

    assert run.code == 0, run.stderr
    assert "4 nodes, 8 pods" in run.stdout and len(run.placements()) == 8


def test_errors_in_stdin_name_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stdin(monkeypatch, b"apiVersion: v1\nkind: Pod\nmetadata: {name: Bad}\n")
    err = refused_flags(capsys, tmp_path, ["-f", str(YAML / "binpack.yaml"), "-f", "-"])
    assert err.startswith("asyncsched: error: <stdin>: Pod default/Bad: metadata.name 'Bad'")


def test_stdin_can_be_read_only_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stdin(monkeypatch, (YAML / "binpack.yaml").read_bytes())
    err = refused_flags(capsys, tmp_path, ["-f", "-", "-f", "-"])
    assert "-f -: standard input can be read only once" in err
