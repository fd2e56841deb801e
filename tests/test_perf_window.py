"""benchmarks/perf_window.py: ``perf report``'s rows, each a thread, summed per process."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_modules import load

perf_window = load("perf_window")

HEADER = (
    "# Samples: 12K of event 'cpu-clock'\n#\n"
    "# Overhead\t    Pid:Command        \tShared Object                               \n"
)


def report(rows: list[tuple[float, int, str, str]]) -> str:
    """``perf report --sort pid,dso --field-separator '\\t'`` as perf 6.1 prints it."""
    lines = [f" {share:.2f}% \t  {tid}:{comm} \t{dso}   " for share, tid, comm, dso in rows]
    return HEADER + "\n".join(lines) + "\n"


@pytest.fixture
def a_second_thread() -> Any:
    """A thread of this process that lives through the test: perf names samples by thread."""
    ready, done = threading.Event(), threading.Event()
    found: list[int] = []

    def live() -> None:
        found.append(threading.get_native_id())
        ready.set()
        done.wait(30)

    thread = threading.Thread(target=live)
    thread.start()
    ready.wait(30)
    yield found[0]
    done.set()
    thread.join()


def test_every_thread_of_a_process_counts_as_that_process(
    tmp_path: Path, a_second_thread: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = os.getpid()
    text = report([
        (40.0, 7001, "kube-apiserver", "kube-apiserver"),
        (12.5, me, "python3", "libpython3.11.so.1.0"),
        (7.5, a_second_thread, "python3", "libpython3.11.so.1.0"),
        (2.0, me, "python3", "[kernel.kallsyms]"),
        (0.5, 0, "swapper", "[kernel.kallsyms]"),
        (30.0, 4242, "etcd", "etcd"),
    ])  # fmt: skip
    monkeypatch.setattr(
        perf_window.subprocess,
        "run",
        lambda argv, **_: subprocess.CompletedProcess(argv, 0, stdout=text, stderr=""),
    )
    data = tmp_path / "perf.data"
    data.write_bytes(b"")
    window = perf_window.PerfWindow(data)
    window.problem = ""

    found = window.summary({"scheduler": me, "gone": None}, ("scheduler",))

    assert found["per process"] == {"others": 70.0, "scheduler": 22.0, "idle": 0.5}
    assert found["scheduler: shared objects"] == {
        "libpython3.11.so.1.0": 20.0,
        "[kernel.kallsyms]": 2.0,
    }


def test_without_perf_or_its_data_the_summary_says_so(tmp_path: Path) -> None:
    window = perf_window.PerfWindow(tmp_path / "never-recorded.data")

    assert window.summary({}, ())["problem"] in ("perf is not installed", "no perf data")
