"""A configuration naming the plugin where the package is not installed: one line, exit 2.

The run happens in a Python whose library holds everything installed here except this
package (links to the rest of site-packages), as on a machine where someone copied the
configuration but not the ``pip install``."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import asyncsched

YAML = Path(__file__).parent / "yaml"


def _library_without_the_package(folder: Path) -> Path:
    library = folder / "site-packages"
    library.mkdir()
    for root in site.getsitepackages():
        for entry in Path(root).iterdir():
            if "antistarvation" not in entry.name and not (library / entry.name).exists():
                (library / entry.name).symlink_to(entry)
    return library


def test_naming_the_plugin_without_the_package_installed_is_one_clear_line(
    tmp_path: Path,
) -> None:
    library = _library_without_the_package(tmp_path)
    checkout = Path(asyncsched.__file__).resolve().parents[1]  # an editable install's source
    env = {**os.environ, "PYTHONPATH": f"{library}{os.pathsep}{checkout}"}
    done = subprocess.run(
        [
            sys.executable,
            "-S",  # no site-packages of its own, so no .pth adds the package back
            "-m",
            "asyncsched.cli",
            "simulate",
            "-f",
            str(YAML / "starving-gang.yaml"),
            "--config",
            str(YAML / "antistarvation-config.yaml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "antistarvation-config.yaml" in lines[0]
    assert "unknown plugin 'antistarvation'" in lines[0] and "pip-installed" in lines[0]
    assert "Traceback" not in done.stderr and not done.stdout
