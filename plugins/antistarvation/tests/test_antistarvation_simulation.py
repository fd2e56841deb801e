"""The plugin in the simulator: a large gang that starves behind a stream of small jobs
(yaml/starving-gang.yaml, read its header) runs within the threshold plus the longest
small pod, at a cost to the small jobs a user would accept."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncsched.cli import main

YAML = Path(__file__).parent / "yaml"
WORKLOAD = YAML / "starving-gang.yaml"
CONFIG = YAML / "antistarvation-config.yaml"
SUBMITTED, THRESHOLD, LONGEST_SMALL_POD = 60.0, 600.0, 700.0


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]

    def started(self, prefix: str) -> float:
        return min(
            e["time"]
            for e in self.events
            if e["event"] == "started" and e["name"].startswith(prefix)
        )

    def last_end(self) -> float:
        return max(e["time"] for e in self.events if e["event"] == "completed")


def simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> Run:
    events = tmp_path / "events.jsonl"
    code = main(["simulate", "--events", str(events), *argv])
    out = capsys.readouterr()
    lines = events.read_text().splitlines() if events.exists() else []
    return Run(code, out.out, out.err, [json.loads(line) for line in lines])


def test_without_the_plugin_the_gang_waits_until_the_stream_of_small_jobs_dries_up(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "-f", str(WORKLOAD))
    assert run.code == 0, run.stderr
    assert run.started("llama-") > 6000.0
    assert run.started("llama-") >= run.started("small-11-")


def test_with_the_plugin_the_gang_starts_within_threshold_and_one_small_pod(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = simulate(capsys, tmp_path, "-f", str(WORKLOAD))
    run = simulate(capsys, tmp_path, "-f", str(WORKLOAD), "--config", str(CONFIG))
    assert run.code == 0, run.stderr
    assert "plugin antistarvation failed" not in run.stderr
    assert run.started("llama-") <= SUBMITTED + THRESHOLD + LONGEST_SMALL_POD
    # What it costs the small jobs: the last one ends less than 1% later.
    assert run.last_end() <= before.last_end() * 1.01


def test_the_reservation_is_shown_on_the_gang_and_on_the_pods_kept_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "-f", str(WORKLOAD), "--config", str(CONFIG), "--until", "800")
    held = [line for line in run.stdout.splitlines() if line.startswith("  Job default/llama ")]
    assert len(held) == 1
    assert "Reserved: holding node-" in held[0]
    assert "starving after waiting 11 min; room expected in" in held[0]
    kept_out = [
        e for e in run.events if e["event"] == "unschedulable" and e["name"].startswith("small-")
    ]
    assert any("node(s) reserved for starving job default/llama." in e["reason"] for e in kept_out)
    assert all(e["time"] >= SUBMITTED + THRESHOLD for e in kept_out if "reserved" in e["reason"])


def test_before_the_threshold_nothing_is_held(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "-f", str(WORKLOAD), "--config", str(CONFIG), "--until", "600")
    assert "Reserved" not in run.stdout
    assert not any("reserved" in e.get("reason", "") for e in run.events)


def test_in_a_fifo_queue_jobs_behind_a_held_gang_run_beside_its_reservation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo-default.yaml"
    fifo.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: default\n"
        "spec:\n  weight: 1\n  dequeueStrategy: fifo\n"
    )
    strict = simulate(capsys, tmp_path, "-f", str(fifo), "-f", str(WORKLOAD))
    held = simulate(capsys, tmp_path, "-f", str(fifo), "-f", str(WORKLOAD), "--config", str(CONFIG))
    assert strict.code == held.code == 0, held.stderr
    # Strict order: the gang heads the queue, so nothing behind it starts before it does.
    assert strict.started("small-2-") >= strict.started("llama-")
    assert "is fifo: waiting behind job default/llama" in "".join(
        e.get("reason", "") for e in strict.events
    )
    # Once the gang holds a reservation the queue goes on past it, on the other nodes.
    assert held.started("small-2-") < strict.started("small-2-")


@pytest.mark.parametrize(
    ("argument", "value", "wanted"),
    [
        ("antistarvation.waitingThreshold", "soon", "must be a duration such as 30m or 1h30m"),
        ("antistarvation.maxReservedShare", "0", "must be a share above 0, at most 1"),
    ],
)
def test_a_bad_argument_stops_the_run_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argument: str, value: str, wanted: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: antistarvation\n"
        f"    arguments:\n      {argument}: {value!r}\n"
    )
    run = simulate(capsys, tmp_path, "-f", str(WORKLOAD), "--config", str(config))
    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert str(config) in lines[0] and f"argument '{argument}'" in lines[0] and wanted in lines[0]
    assert not run.events
