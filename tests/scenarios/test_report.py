"""The summary a person reads, and the JSON a tool reads: jobs, queues, what is stuck, why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asyncsched.cli import main
from asyncsched.cli.exits import EXIT_INTERRUPTED, EXIT_STUCK
from tests.scenarios.harness import YAML, simulate

ROOT = Path(__file__).resolve().parents[2]


def test_work_that_can_never_run_is_named_with_its_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "stuck.yaml")

    assert run.code == EXIT_STUCK == 4
    assert run.summary["result"] == "stuck"
    stuck = {(s["kind"], s["name"]): s for s in run.summary["stuck"]}
    assert set(stuck) == {
        ("Pod", "default/five-gpus"),
        ("Pod", "default/wrong-pool"),
        ("PodGroup", "default/too-big"),
    }
    assert "2 Insufficient nvidia.com/gpu" in stuck[("Pod", "default/five-gpus")]["reason"]
    assert "node affinity/selector" in stuck[("Pod", "default/wrong-pool")]["reason"]
    assert stuck[("PodGroup", "default/too-big")]["pods"] == 3
    assert "2/3 tasks in gang fit" in stuck[("PodGroup", "default/too-big")]["reason"]
    assert run.job("default/fits")["phase"] == "Completed", "the rest still runs"
    text = run.stdout.split("waiting when the run ended (3):\n", 1)[1]
    assert "Pod default/five-gpus (1 pod): 0/2 nodes are unavailable" in text
    assert "PodGroup default/too-big (3 pods): 2/3 tasks in gang fit" in text


def test_the_job_table_says_when_each_job_ran_and_where(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "jobs-together.yaml")

    third = run.job("default/third")
    assert third["kind"] == "Job" and third["pods"] == 2 and third["min_member"] == 2
    assert (third["submitted"], third["started"], third["waited"]) == (5.0, 20.0, 15.0)
    assert (third["finished"], third["phase"], third["nodes"]) == (50.0, "Completed", ["small"])
    rows = run.stdout.split("\njobs:\n", 1)[1].splitlines()
    assert rows[0].split() == [
        "NAME", "KIND", "QUEUE", "PODS", "SUBMITTED", "STARTED", "WAITED", "FINISHED",
        "PHASE", "RETRIES", "NODES",
    ]  # fmt: skip
    assert rows[3].split() == [
        "default/third", "Job", "default", "2", "5", "20", "15", "50", "Completed", "0", "small",
    ]  # fmt: skip


def test_output_json_is_the_summary_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["simulate", "-f", str(YAML / "lone-pods.yaml"), "-o", "json"])
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert code == 0 and summary["result"] == "done"
    assert sorted(j["name"] for j in summary["jobs"]) == [
        "default/lone-a",
        "default/lone-b",
        "default/lone-c",
    ]
    assert {j["kind"] for j in summary["jobs"]} == {"Pod"}


def _many_pods(path: Path, count: int) -> None:
    docs = [
        "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\n"
        'status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}'
    ]
    for i in range(count):
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\n  annotations:\n"
            f'    simulation.asyncsched.io/duration: "{1 + i % 7}"\n'
            "spec:\n  schedulerName: volcano\n"
            '  containers: [{name: c, resources: {requests: {cpu: "1"}}}]'
        )
    path.write_text("\n---\n".join(docs))


def test_ctrl_c_stops_with_the_summary_so_far(tmp_path: Path) -> None:
    work = tmp_path / "many.yaml"
    _many_pods(work, 20000)
    events = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "asyncsched", "simulate", "-f", str(work), "--events", str(events)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # Ctrl-C from a terminal reaches the process; a shell's background job starts with
        # SIGINT ignored, and the child would inherit that (and never stop).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (events.exists() and events.stat().st_size):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == EXIT_INTERRUPTED == 130, err
    assert "Traceback" not in err, err
    assert "result: interrupted at t=" in out
    assert "waiting when the run ended" in out, "the pods not placed yet are listed"
    lines = events.read_text().splitlines()
    assert lines and json.loads(lines[-1])["time"] >= 0, "the events written so far are whole"
