"""The project's own checks: lint, format, strict typing and the layer contract.

They run with the suite so the README's one test command is the whole gate.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "asyncsched", "tests", "plugins"],
        [sys.executable, "-m", "ruff", "format", "--check", "asyncsched", "tests", "plugins"],
        [sys.executable, "-m", "mypy"],
        ["lint-imports"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict", "import-layers"],
)
def test_static_check(command: list[str]) -> None:
    if command[0] == "lint-imports":
        command = [str(Path(sys.executable).with_name("lint-imports"))]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
