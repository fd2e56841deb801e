"""Runs the real `asyncsched simulate` entry function on the scenario YAML files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncsched.backends.sim import Simulation, load_manifests
from asyncsched.cli import main

YAML = Path(__file__).parent / "yaml"


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]
    summary: dict[str, Any]
    """The ``--summary-json`` document (empty when the run was refused)."""

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event]

    def placements(self) -> dict[str, str]:
        """Pod name -> node it was bound to."""
        return {e["name"]: e["node"] for e in self.of("bound")}

    def job(self, name: str) -> dict[str, Any]:
        """The summary's row for one job (``namespace/name``)."""
        found = [j for j in self.summary["jobs"] if j["name"] == name]
        assert len(found) == 1, f"{name} in {[j['name'] for j in self.summary['jobs']]}"
        return found[0]

    def queue(self, name: str) -> dict[str, Any]:
        found = [q for q in self.summary["queues"] if q["name"] == name]
        assert len(found) == 1, f"{name} in {[q['name'] for q in self.summary['queues']]}"
        return found[0]


def variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A copy of the scenario file ``name`` with ``old`` (which it must contain) made ``new``."""
    text = (YAML / name).read_text()
    assert old in text, f"{old!r} is not in {name}"
    written = tmp_path / f"variant-{len(list(tmp_path.glob('variant-*')))}-{name}"
    written.write_text(text.replace(old, new))
    return written


def simulate(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    *files: str | Path,
    config: str | Path | None = None,
    extra: list[str] | None = None,
) -> Run:
    out = tmp_path / "events.jsonl"
    summary = tmp_path / "summary.json"
    argv = ["simulate", "--events", str(out), "--summary-json", str(summary)]
    for f in files:
        argv += ["-f", str(YAML / f) if isinstance(f, str) else str(f)]
    if config is not None:
        argv += ["--config", str(YAML / config) if isinstance(config, str) else str(config)]
    argv += extra or []
    code = main(argv)
    captured = capsys.readouterr()
    events = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    document = json.loads(summary.read_text()) if summary.exists() else {}
    return Run(code, captured.out, captured.err, events, document)


def simulation(
    *files: str | Path, until: float | None = None, config: str | Path | None = None
) -> Simulation:
    """The Simulation object itself (for ``objects()``), built as the CLI builds it."""
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.framework import Registry

    conf = YAML / config if isinstance(config, str) else config
    source = ConfigSource(Registry(), conf)
    sim = Simulation(load_manifests([YAML / f if isinstance(f, str) else f for f in files]), source)
    sim.run(until=until)
    return sim


def refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    cluster: str | None,
    content: str | bytes,
    extra: list[str] | None = None,
) -> tuple[Path, str]:
    """Simulate ``cluster`` (if any) plus a file holding ``content``; assert the run is refused
    with exactly one line, exit 2 and no events written. Returns the bad file and that line."""
    bad = tmp_path / "bad.yaml"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    files = ([] if cluster is None else ["-f", str(YAML / cluster)]) + ["-f", str(bad)]
    return bad, refused_flags(capsys, tmp_path, [*files, *(extra or [])])


def refused_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]) -> str:
    """Run ``asyncsched simulate ARGV`` (with ``--events`` into tmp_path unless ARGV names
    one); assert one line on stderr, exit 2, nothing on stdout and no events written."""
    events = tmp_path / "events.jsonl"
    if "--events" not in argv:
        argv = [*argv, "--events", str(events)]
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    err = captured.err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("asyncsched: error: "), err
    assert captured.out == "", captured.out
    assert not events.exists(), "nothing may run when any input is bad"
    return err
