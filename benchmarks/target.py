"""Which asyncsched a benchmark measures, and how it says so in its JSON line.

By default a benchmark imports asyncsched from the checkout it sits in: the source tree,
with the native kernels only if they were built in place (``pip install -e .``). With
``--installed`` it measures the package installed in the site-packages of the Python that
runs it, and refuses in one line (exit 2) when ``import asyncsched`` finds anything else
(this checkout when nothing is installed, or a checkout an editable install points at)::

    python3 -m venv /tmp/bench && /tmp/bench/bin/pip install .      # not -e
    /tmp/bench/bin/python benchmarks/throughput.py --installed ...

Either way the JSON line carries ``asyncsched_version``, ``asyncsched_path`` (the folder
the package was imported from), ``native`` (compiled kernels or the NumPy twins),
``compiled_pod_reader`` and ``pod_encoding`` (how the scheduler watches pods).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = [
    "INSTALLED",
    "ROOT",
    "checked_identity",
    "identity",
    "identity_of",
    "put_on_path",
    "refuse_checkout",
]

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
INSTALLED = "--installed"
INSTALLED_HELP = "measure the installed asyncsched, not this checkout (refused if they are one)"


def put_on_path(argv: list[str], source: Path = ROOT) -> bool:
    """Put ``source`` (and the checkout, for tests/) first on sys.path; with ``--installed``
    the checkout last instead (its tests/ helpers only: an installed asyncsched comes first).

    With ``--profile``, also run the core's modules from source, in this process and in the
    processes it starts with its environment: a profiler sees no frame of compiled code."""
    if "--profile" in argv:
        os.environ["ASYNCSCHED_COMPILED_MODULES"] = "0"  # asyncsched._compiled.COMPILED_ENV
        print("--profile: the core's modules run from source", file=sys.stderr)
    installed = INSTALLED in argv
    if installed:
        sys.path.append(str(ROOT))
    else:
        sys.path[:0] = list(dict.fromkeys([str(source), str(ROOT)]))
    return installed


def identity() -> dict[str, Any]:
    """Version, import folder and kernels of the asyncsched this process imports."""
    import asyncsched

    try:
        installed = version("asyncsched")
    except PackageNotFoundError:
        installed = "not installed"
    try:
        from asyncsched.model import kernels

        native: bool | None = kernels.NATIVE
    except ImportError:  # a version from before the compiled kernels
        native = None
    try:
        from asyncsched.backends.kube import pod_protobuf, protobuf

        pod_watch: dict[str, Any] = {
            "compiled_pod_reader": protobuf.COMPILED,
            "pod_encoding": pod_protobuf.POD_ENCODING.name,
        }
    except (ImportError, AttributeError):  # a version from before the choice
        pod_watch = {}
    try:
        from asyncsched import _compiled

        compiled: dict[str, Any] = {"compiled_modules": _compiled.state().count()}
    except (ImportError, AttributeError):  # a version from before the compiled core
        compiled = {}
    return {
        "asyncsched_version": installed,
        "asyncsched_path": str(Path(asyncsched.__file__).resolve().parent),
        "native": native,
        **compiled,
        **pod_watch,
    }


def identity_of(python: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """identity() of another process started as ``python -m ...`` in ``cwd`` with ``env``."""
    probe = (
        f"import json, sys; sys.path.insert(0, {str(HERE)!r}); import target; "
        "print(json.dumps(target.identity()))"
    )
    done = subprocess.run(
        [python, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def checked_identity(installed: bool) -> dict[str, Any]:
    """``identity()``, after refusing (``refuse_checkout``) a checkout when ``installed``."""
    found = identity()
    if installed:
        refuse_checkout(found)
    return found


def refuse_checkout(found: dict[str, Any]) -> None:
    """With --installed, only a package in this Python's site-packages is the right thing to
    measure: not this checkout, nor any other one an editable install points at."""
    path = Path(found["asyncsched_path"])
    paths = sysconfig.get_paths()
    site_packages = {Path(paths["purelib"]).resolve(), Path(paths["platlib"]).resolve()}
    if path.parent not in site_packages:
        where = "this checkout" if path.is_relative_to(ROOT) else "outside site-packages"
        print(
            f"{INSTALLED}: asyncsched is imported from {path} ({where}), not an installed "
            "package: `pip install .` (not -e) into a venv and run this with its python",
            file=sys.stderr,
        )
        sys.exit(2)
