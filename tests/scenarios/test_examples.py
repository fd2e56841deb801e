"""``asyncsched simulate --example``: the bundled examples, by name, with the other flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncsched.backends.bundled import DEFAULT_CONFIGURATION_FILE, examples
from asyncsched.cli import main
from tests.scenarios.harness import simulate

ROOT = Path(__file__).resolve().parents[2]

LONE_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: extra}\nspec: {schedulerName: volcano, "
    "containers: [{name: main, resources: {requests: {cpu: '1'}}}]}\n"
)


def _pods(summary: str) -> int:
    """The pod count of the summary's first line: "... 6 nodes, 33 pods, ..."."""
    words = summary.splitlines()[0].replace(",", "").split()
    return int(words[words.index("pods") - 1])


def test_example_runs_with_config_events_and_until(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys,
        tmp_path,
        config="config-without-gang.yaml",
        extra=["--example", "gpu-cluster", "--until", "600"],
    )
    assert run.code == 0, run.stderr
    assert "config-without-gang.yaml" in run.stdout
    assert "result: stopped at t=600s" in run.stdout
    assert run.of("bound") and max(e["time"] for e in run.events) <= 600


def test_example_is_the_file_the_checkout_shows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    by_name = simulate(capsys, tmp_path, extra=["--example", "gpu-cluster"])
    by_file = simulate(capsys, tmp_path, ROOT / "examples" / "gpu-cluster.yaml")
    assert by_name.code == by_file.code == 0
    assert by_name.stdout == by_file.stdout
    assert by_name.events == by_file.events


def test_example_and_files_combine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(LONE_POD)
    alone = simulate(capsys, tmp_path, extra=["--example", "gpu-cluster"])
    both = simulate(capsys, tmp_path, extra, extra=["--example", "gpu-cluster"])
    assert both.code == 0, both.stderr
    assert _pods(both.stdout) == _pods(alone.stdout) + 1
    assert "extra" in both.placements()


@pytest.mark.parametrize("argv", [["--example"], ["--list-examples"]])
def test_examples_are_listed_with_their_files(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(["simulate", *argv]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: Path(line.split()[1]) for line in lines}
    assert "gpu-cluster" in listed
    assert listed == examples()
    assert all(path.is_file() for path in listed.values())


def test_unknown_example_is_one_line_naming_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    code = main(["simulate", "--example", "gpu-clustr", "--events", str(events)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "--example" in err and "gpu-clustr" in err and "gpu-cluster" in err
    assert not events.exists()


def test_nothing_to_simulate_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--until", "10"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "-f" in err and "--example" in err, err


def test_checkout_folders_are_the_bundled_ones() -> None:
    # One copy of each file: the checkout's examples/ and config/ are the package's folders.
    assert (ROOT / "examples" / "gpu-cluster.yaml").resolve() == examples()["gpu-cluster"]
    assert (ROOT / "config" / "scheduler.yaml").resolve() == DEFAULT_CONFIGURATION_FILE
