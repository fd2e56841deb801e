"""benchmarks/ceiling_reading.py: a round's rates read against its binder runs, as measured
and at the pace KWOK's CPU per pod shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_modules import load

reading = load("ceiling_reading")


def run(
    scheduler: str, rate: float, kwok_s: float, gang: int = 1, round_: int = 0
) -> dict[str, Any]:
    return {
        "scheduler": scheduler,
        "protocol": "precreated",
        "gang": gang,
        "round": round_,
        "bound": 10000,
        "throughput_pods_per_s": rate,
        "window_cpu_seconds": {"kwok": kwok_s, "kube-apiserver": 4 * kwok_s},
    }


def test_a_slower_machine_is_read_at_one_pace() -> None:
    """The binder at 800 pods/s when KWOK spends 0.35 ms a pod and at 500 when it spends
    0.56 ms (the same share of the machine): a scheduler at 500 pods/s while KWOK spends
    0.56 ms a pod is at the ceiling by pace, and at 0.77 of it as measured."""
    measured = [
        run("minimal-binder", 800.0, 3.5),
        run("asyncsched", 500.0, 5.6),
        run("minimal-binder", 500.0, 5.6),
    ]
    reading.read_against_ceiling(measured)
    ours = measured[1]
    assert ours["ceiling_pods_per_s"] == 650.0
    assert ours["fraction_of_ceiling"] == pytest.approx(500 / 650, abs=1e-3)
    assert ours["kwok_cpu_ms_per_pod"] == pytest.approx(0.56)
    assert ours["fraction_of_ceiling_at_kwok_pace"] == pytest.approx(1.0, abs=1e-3)
    assert measured[0]["fraction_of_ceiling_at_kwok_pace"] == pytest.approx(1.0, abs=1e-3)


def test_a_scheduler_that_takes_the_machine_reads_lower_at_any_pace() -> None:
    """Same pace (KWOK's CPU per pod) as the binder, lower rate: lower by both readings."""
    measured = [run("minimal-binder", 600.0, 4.0), run("asyncsched", 540.0, 4.0, gang=10)]
    reading.read_against_ceiling(measured)
    assert measured[1]["fraction_of_ceiling"] == pytest.approx(0.9)
    assert measured[1]["fraction_of_ceiling_at_kwok_pace"] == pytest.approx(0.9)


def test_no_paced_reading_without_kwok_figures_and_none_without_every_binder_rate() -> None:
    no_kwok = [run("minimal-binder", 600.0, 4.0), run("asyncsched", 540.0, 4.0)]
    del no_kwok[0]["window_cpu_seconds"]
    reading.read_against_ceiling(no_kwok)
    assert no_kwok[1]["fraction_of_ceiling"] == pytest.approx(0.9)
    assert "fraction_of_ceiling_at_kwok_pace" not in no_kwok[1]

    failed_binder = [
        run("minimal-binder", 600.0, 4.0),
        run("asyncsched", 540.0, 4.0),
        {**run("minimal-binder", 0.0, 4.0), "throughput_pods_per_s": 0.0},
    ]
    reading.read_against_ceiling(failed_binder)
    assert "fraction_of_ceiling" not in failed_binder[1]


def test_a_saved_report_is_read_again_round_by_round(tmp_path: Path) -> None:
    runs = [
        run("minimal-binder", 600.0, 4.0, round_=0),
        run("asyncsched", 540.0, 4.0, round_=0),
        run("minimal-binder", 600.0, 4.0, round_=0),
        run("minimal-binder", 400.0, 6.0, round_=1),
        run("asyncsched", 400.0, 6.0, gang=10, round_=1),
        run("minimal-binder", 400.0, 6.0, round_=1),
    ]
    saved = tmp_path / "bed.out"
    saved.write_text("not json\n" + json.dumps({"runs": runs}) + "\n")
    again = reading.reread(json.loads(saved.read_text().splitlines()[-1]))
    assert again["fractions"] == {"asyncsched-g1": [0.9], "asyncsched-g10": [1.0]}
    assert again["fractions_at_kwok_pace"] == {"asyncsched-g1": [0.9], "asyncsched-g10": [1.0]}
    assert reading.main([str(saved)]) == 0


def test_a_file_without_a_report_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.out"
    empty.write_text("Traceback (most recent call last):\n")
    assert reading.main([str(empty)]) == 2
    assert capsys.readouterr().err.strip() == f"{empty}: no e2e_throughput JSON line in it"


def test_a_missing_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = tmp_path / "gone.out"
    assert reading.main([str(gone)]) == 2
    assert capsys.readouterr().err.strip() == f"{gone}: cannot be read (FileNotFoundError)"


def test_each_run_is_read_against_the_binder_runs_either_side_of_it() -> None:
    """With the binder between every two runs, a run's ceiling is the mean of the binder
    runs just before and after it (a lone-pod entry between them changes nothing), not the
    round's: 760 pods/s beside two binder runs at 800 reads 0.95, where the round's mean
    (700) would read 1.09."""
    measured = [
        run("minimal-binder", 800.0, 3.5),
        run("asyncsched", 760.0, 3.5),
        run("minimal-binder", 800.0, 3.5),
        {"scheduler": "asyncsched", "protocol": "lone", "round": 0, "gang": 1},
        run("asyncsched", 450.0, 5.6, gang=10),
        run("minimal-binder", 500.0, 5.6),
    ]
    reading.read_against_ceiling(measured)
    assert measured[1]["ceiling_pods_per_s"] == 800.0
    assert measured[1]["fraction_of_ceiling"] == pytest.approx(0.95)
    assert measured[4]["ceiling_pods_per_s"] == 650.0
    assert measured[4]["fraction_of_ceiling"] == pytest.approx(450 / 650, abs=1e-3)
    assert measured[4]["fraction_of_ceiling_at_kwok_pace"] == pytest.approx(0.9, abs=1e-3)
    assert measured[0]["ceiling_pods_per_s"] == 700.0
    assert "fraction_of_ceiling" not in measured[3]


def test_the_binder_is_read_against_its_own_neighbours_round_by_round() -> None:
    """With the binder between every two runs, each binder run with binder runs either side
    of it in its round is read against them, as a scheduler's run is: 600 between 800 and
    700 reads 0.8. The round's first and last binder runs, and lone entries, read nothing."""
    runs = [
        run("minimal-binder", 800.0, 3.5, round_=0),
        run("asyncsched", 700.0, 3.5, round_=0),
        run("minimal-binder", 600.0, 3.5, round_=0),
        {"scheduler": "asyncsched", "protocol": "lone", "round": 0},
        run("asyncsched", 700.0, 3.5, gang=10, round_=0),
        run("minimal-binder", 700.0, 3.5, round_=0),
        run("minimal-binder", 500.0, 3.5, round_=1),
        run("asyncsched", 500.0, 3.5, round_=1),
        run("minimal-binder", 500.0, 3.5, round_=1),
    ]
    assert reading.self_fractions(runs) == [0.8]
    assert reading.readings(runs)["ceiling_self_fractions"] == {"minimal-binder": [0.8]}
