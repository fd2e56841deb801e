"""Volcano CronJobs in the simulator: Jobs made on the schedule, concurrency policies,
history limits, and a run that must be given an end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, refused, refused_flags, simulate, simulation, variant

NODES = "nodes-cpu.yaml"
CRON = "cronjob-nightly.yaml"


def _made(events: list[dict[str, object]]) -> list[tuple[float, str]]:
    return [
        (float(e["time"]), str(e["name"]))  # type: ignore[arg-type]
        for e in events
        if e["event"] == "created" and e["kind"] == "Job"
    ]


def test_forbid_skips_a_time_while_the_last_run_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, NODES, CRON, extra=["--until", "3600"])

    assert run.code == 0, run.stderr
    minute = 1_767_225_600 // 60
    # Runs at 00:10, 00:30, 00:50; 00:20 and 00:40 find the last run still going.
    assert _made(run.events) == [
        (600.0, f"eval-{minute + 10}"),
        (1800.0, f"eval-{minute + 30}"),
        (3000.0, f"eval-{minute + 50}"),
    ]
    # The skipped times (00:20, 00:40, 01:00) are told, as the CronJob's Warning Events.
    warned = [(e["time"], e["kind"], e["name"]) for e in run.of("warning")]
    assert warned == [(t, "CronJob", "eval") for t in (1200.0, 2400.0, 3600.0)]
    assert all(str(e["reason"]).startswith("ForbidConcurrent: ") for e in run.of("warning"))
    # The first run, Completed at 1500, goes when the second completes (history limit 1).
    deleted = [(e["time"], e["name"]) for e in run.of("deleted") if e["kind"] == "Job"]
    assert deleted == [(2700.0, f"eval-{minute + 10}")]
    sim = simulation(NODES, CRON, until=3600)
    cron = sim.objects("CronJob")["default/eval"]
    assert cron["status"]["lastScheduleTime"] == "2026-01-01T00:50:00Z"
    assert cron["status"]["lastSuccessfulTime"] == "2026-01-01T00:45:00Z"
    assert [r["name"] for r in cron["status"]["active"]] == [f"eval-{minute + 50}"]
    jobs = sim.objects("Job")
    assert sorted(jobs) == [f"default/eval-{minute + 30}", f"default/eval-{minute + 50}"]
    made = jobs[f"default/eval-{minute + 50}"]
    assert made["metadata"]["labels"] == {"team": "research"}
    assert made["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == (
        "2026-01-01T00:50:00Z"
    )
    assert made["metadata"]["ownerReferences"][0]["kind"] == "CronJob"


def test_without_a_deadline_a_skipped_time_runs_when_the_last_run_ends(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    late = variant(tmp_path, CRON, "  startingDeadlineSeconds: 60\n", "")
    run = simulate(capsys, tmp_path, NODES, late, extra=["--until", "3600"])

    assert run.code == 0, run.stderr
    minute = 1_767_225_600 // 60
    # 00:20 waits for the first run to end at 1500, then runs; at 2400 the most recent
    # time, 00:40, runs (00:30 is passed over: only the most recent missed time runs).
    assert _made(run.events) == [
        (600.0, f"eval-{minute + 10}"),
        (1500.0, f"eval-{minute + 20}"),
        (2400.0, f"eval-{minute + 40}"),
        (3300.0, f"eval-{minute + 50}"),
    ]


def test_replace_deletes_the_running_job_for_the_next(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    replace = variant(tmp_path, CRON, "concurrencyPolicy: Forbid", "concurrencyPolicy: Replace")
    run = simulate(capsys, tmp_path, NODES, replace, extra=["--until", "2000"])

    assert run.code == 0, run.stderr
    minute = 1_767_225_600 // 60
    assert [n for _, n in _made(run.events)] == [f"eval-{minute + m}" for m in (10, 20, 30)]
    deleted = [(e["time"], e["name"]) for e in run.of("deleted") if e["kind"] == "Job"]
    assert deleted == [(1200.0, f"eval-{minute + 10}"), (1800.0, f"eval-{minute + 20}")]
    # The replaced runs' pods go with their Jobs: never more than one run's pods at once.
    bound = {e["name"] for e in run.of("bound")}
    assert len(bound) == 6


def test_allow_runs_them_side_by_side(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    allow = variant(tmp_path, CRON, "concurrencyPolicy: Forbid", "concurrencyPolicy: Allow")
    run = simulate(capsys, tmp_path, NODES, allow, extra=["--until", "1300"])

    assert run.code == 0, run.stderr
    assert [t for t, _ in _made(run.events)] == [600.0, 1200.0]
    assert not [e for e in run.of("deleted") if e["kind"] == "Job"]


def test_a_suspended_cronjob_makes_nothing_and_needs_no_end(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    suspended = variant(tmp_path, CRON, "  concurrencyPolicy: Forbid", "  suspend: true")
    run = simulate(capsys, tmp_path, NODES, suspended)

    assert run.code == 0, run.stderr
    assert _made(run.events) == []


def test_a_run_with_a_cronjob_must_be_given_an_end(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = refused_flags(capsys, tmp_path, ["-f", str(YAML / NODES), "-f", str(YAML / CRON)])
    assert line == (
        f"asyncsched: error: {YAML / CRON}: CronJob default/eval: a CronJob makes Jobs for "
        "ever: give --until SECONDS\n"
    )


@pytest.mark.parametrize(
    ("old", "new", "wanted"),
    [
        ('"*/10 * * * *"', '"*/10 * * *"', "expected exactly 5 fields, found 4"),
        ('"*/10 * * * *"', '"TZ=UTC */10 * * * *"', "must not contain TZ or CRON_TZ"),
        ("concurrencyPolicy: Forbid", "concurrencyPolicy: Never", "must be one of Allow"),
        ("successfulJobsHistoryLimit: 1", "successfulJobsHistoryLimit: -1", "not be negative"),
        ("  name: eval", "  name: " + "e" * 53, "52 characters or less"),
        ("concurrencyPolicy: Forbid", "timeZone: Mars/Olympus", "not a zone of the tz database"),
        ("minAvailable: 2", "minAvailable: 3", "the Jobs it makes would be refused by admission"),
    ],
)
def test_a_cronjob_volcano_would_refuse_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, old: str, new: str, wanted: str
) -> None:
    text = (YAML / CRON).read_text()
    assert old in text
    _, line = refused(capsys, tmp_path, NODES, text.replace(old, new), ["--until", "60"])
    assert "CronJob default/" in line and wanted in line, line
