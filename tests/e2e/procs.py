"""Processes of the test bed: each in its own process group, logging to a file."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

STOP_TIMEOUT = 10.0


class StartupError(RuntimeError):
    """A component did not come up; the message carries the tail of its log."""


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Component:
    name: str
    argv: list[str]
    log: Path
    pid: int | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    cwd: Path | None = None

    def start(self, die_with_parent: bool) -> None:
        with self.log.open("ab") as out:
            out.write(f"\n=== {time.strftime('%H:%M:%S')} {' '.join(self.argv)}\n".encode())
            out.flush()
            # PDEATHSIG fires when the *thread* that forked exits: only from the main thread.
            guard = die_with_parent and threading.current_thread() is threading.main_thread()
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                cwd=self.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: killpg reaches its children
                preexec_fn=_die_with_parent if guard else None,
            )
        self.pid = self.proc.pid

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        if self.pid is None:
            return False
        try:  # not ours (stop from another process): check it is still this binary
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")[0]
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return cmdline.decode() == self.argv[0] and stat.rsplit(")", 1)[1].split()[0] != "Z"

    def check(self) -> None:
        if not self.alive():
            raise StartupError(f"{self.name} exited\n--- {self.log} ---\n{tail(self.log)}")

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM to the process group, SIGKILL after timeout."""
        if self.pid is None or not (self.proc or self.alive()):
            self.pid = None  # gone already (or the pid now belongs to someone else)
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            if self.alive():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, sig)
            deadline = time.monotonic() + wait
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # stragglers left in the group
        if self.proc is not None:
            self.proc.wait()
        self.pid = self.proc = None


def wait_http(
    comp: Component,
    url: str,
    ok: Callable[[bytes], bool],
    timeout: float,
    context: ssl.SSLContext | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Polls url until ok(body); fails early (with the log) if the component exits."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        comp.check()
        try:
            request = urllib.request.Request(url, headers=dict(headers or {}))
            with urllib.request.urlopen(request, timeout=2, context=context) as r:
                body = r.read()
                if ok(body):
                    return
                last = body[:200].decode(errors="replace")
        except Exception as exc:
            last = repr(exc)
        time.sleep(0.25)
    raise StartupError(
        f"{comp.name} not ready at {url} after {timeout:.0f}s ({last})\n"
        f"--- {comp.log} ---\n{tail(comp.log)}"
    )
