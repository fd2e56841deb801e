"""Where the whole machine's CPU went in a window: ``perf record`` on every core.

py-spy sees one Python process and, with native frames, stops it at every sample. The bed
shares two cores between the scheduler and the API server, etcd, KWOK and the controller
manager, and the question is what each of them spent where while binds flowed. ``perf
record -a -e cpu-clock`` samples every core from the kernel's timer, stops nothing, and
names the process and the shared object (the interpreter, a compiled module of ours, the
TLS library, the kernel, a Go binary) of every sample. Software events only: this VM
refuses the hardware counters.

``PerfWindow.start()`` at the first bind, ``stop()`` at the last; ``summary()`` then gives
the share of samples per process and, for the processes asked for, per shared object and
per symbol (the top few).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from pathlib import Path

__all__ = ["PerfWindow"]

RATE = 499
"""Samples per second per core: about 1,000 a second on this machine, enough for shares."""


class PerfWindow:
    def __init__(self, output: Path) -> None:
        self.output = output
        self.proc: subprocess.Popen[bytes] | None = None
        self.problem = "" if shutil.which("perf") else "perf is not installed"

    def start(self) -> None:
        if self.problem:
            return
        self.output.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            ["perf", "record", "-a", "-e", "cpu-clock", "-F", str(RATE), "-o", str(self.output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.problem = "perf record did not stop"
        self.proc = None

    def summary(
        self, named: dict[str, int | None], detail: tuple[str, ...], top: int = 12
    ) -> dict[str, object]:
        """Percent of all samples per process of ``named`` (name: pid; the rest together as
        "others"), and for each name in ``detail`` its shared objects and ``top`` symbols.
        Two ``perf report`` passes, each over the whole recording: by thread and shared
        object (the per-process shares are their sums), and by thread and symbol."""
        if self.problem or not self.output.exists():
            return {"problem": self.problem or "no perf data"}
        names = {0: "idle"}
        threads: dict[str, set[int]] = {}
        for name, pid in named.items():
            threads[name] = _threads_of(pid)
            names.update(dict.fromkeys(threads[name], name))
        by_object = self._report(("pid", "dso"))
        per_process: dict[str, float] = {}
        for key, share in by_object.items():
            name = names.get(_pid_of(key), "others")
            per_process[name] = round(per_process.get(name, 0.0) + share, 2)
        found: dict[str, object] = {"per process": per_process}
        by_symbol = self._report(("pid", "sym")) if detail else {}
        for name in detail:
            mine = threads.get(name, set())
            for rows_of, label, kept in (
                (by_object, "shared objects", 8),
                (by_symbol, "top symbols", top),
            ):
                rows: dict[str, float] = {}
                for key, share in rows_of.items():
                    if _pid_of(key) in mine:
                        what = key.split(" | ", 1)[-1]
                        rows[what] = round(rows.get(what, 0.0) + share, 2)
                ranked = sorted(rows.items(), key=lambda row: -row[1])
                found[f"{name}: {label}"] = dict(ranked[:kept])
        return found

    def _report(self, keys: tuple[str, ...]) -> dict[str, float]:
        """``perf report`` sorted by ``keys``: each row's keys joined by " | ", its percent of
        every sample in the window, largest first."""
        argv = ["perf", "report", "-i", str(self.output), "--stdio", "--no-children",
                "--sort", ",".join(keys), "--field-separator", "\t"]  # fmt: skip
        rows: dict[str, float] = {}
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            out = subprocess.run(argv, capture_output=True, text=True, timeout=300).stdout
            for line in out.splitlines():
                if not line.strip() or line.startswith("#"):
                    continue
                share, *named = line.split("\t")
                with contextlib.suppress(ValueError):
                    key = " | ".join(n.strip() for n in named)
                    rows[key] = round(rows.get(key, 0.0) + float(share.strip().rstrip("%")), 2)
        return rows


def _threads_of(pid: int | None) -> set[int]:
    """The thread ids of a process (those alive now): perf names each sample's thread."""
    if pid is None:
        return set()
    try:
        return {int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()} | {pid}
    except (OSError, ValueError):
        return {pid}


def _pid_of(key: str) -> int:
    """The thread id of a ``perf report`` row sorted by pid first ("  1234:comm | ...")."""
    try:
        return int(key.split(":", 1)[0])
    except ValueError:
        return -1
