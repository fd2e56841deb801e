"""The main job from what pip installs: the sdist and the wheel, with and without a C compiler.

The sdist is built from this checkout and the wheels from that sdist (``python -m build``,
as a release would be), once as usual and once with ``CC=/bin/false``. Each is installed
into a fresh venv (no system site packages), and ``asyncsched simulate --example
gpu-cluster`` runs from that venv in a directory that is not the checkout.

Dependencies and build requirements come from PyPI, resolved there once per session into
a wheelhouse that is kept (``$ASYNCSCHED_CACHE/wheelhouse``, default
``~/.cache/asyncsched/wheelhouse``); builds and installs then read only that. pip's own
HTTP cache cannot serve here: the registry's answers carry no caching headers, so every
install would download every dependency again.

Installing the sdist with a compiler must give the native kernels, which proves the Cython
source is in it; without a compiler the install must still work, on the NumPy twins. The
installed run must print what the checkout prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from asyncsched.cli import main

ROOT = Path(__file__).resolve().parents[1]
NO_COMPILER = {"CC": "/bin/false"}


@dataclass(frozen=True)
class Dists:
    sdist: Path
    native_wheel: Path
    pure_wheel: Path


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(argv)} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without what would put the checkout on the path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "ASYNCSCHED_PURE", "CC"}
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheelhouse() -> Iterator[Path]:
    """The dependencies and build requirements of pyproject.toml, fetched from PyPI."""
    cache = Path(os.environ.get("ASYNCSCHED_CACHE", Path.home() / ".cache" / "asyncsched"))
    house = cache / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
    with (cache / "wheelhouse.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download at a time into the shared folder
        download = [sys.executable, "-m", "pip", "download", "-q", "-d", str(house)]
        _run([*download, *wanted], cache, _clean_env(), 1200)
    yield house


def _offline(house: Path, **extra: str) -> dict[str, str]:
    """An environment whose pip installs only from the wheelhouse."""
    return _clean_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(house), **extra)


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {folder}, found {found}"
    return found[0]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Dists:
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--outdir"]
    _run([*build, str(out), str(ROOT)], ROOT, _offline(wheelhouse), 900)
    sdist = _one(out, "asyncsched-*.tar.gz")
    native_wheel = _one(out, "asyncsched-*.whl")
    # The wheel again from the same sdist, where no compiler works.
    unpacked = tmp_path_factory.mktemp("sdist")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    pure = tmp_path_factory.mktemp("dist-pure")
    source = _one(unpacked, "asyncsched-*")
    no_cc = _offline(wheelhouse, **NO_COMPILER)
    _run([*build, str(pure), "--wheel", str(source)], unpacked, no_cc, 900)
    return Dists(sdist, native_wheel, _one(pure, "asyncsched-*.whl"))


@pytest.fixture(scope="module")
def checkout_summary() -> str:
    """What the checkout's own code prints for the example."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", "--example", "gpu-cluster"]) == 0
    return out.getvalue()


def test_sdist_carries_the_native_source_and_the_package_data(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    for wanted in (
        "ext/_native.pyx",
        "asyncsched/config/scheduler.yaml",
        "asyncsched/examples/gpu-cluster.yaml",
        "asyncsched/py.typed",
        *(str(p.relative_to(ROOT)) for p in sorted(ROOT.glob("asyncsched/*/*.pxd"))),
        "README.md",
        "pyproject.toml",
        "setup.py",
    ):
        assert wanted in names, f"the sdist lacks {wanted}"
    assert not any(n.endswith((".so", ".c")) for n in names), "build products in the sdist"


def test_the_wheel_carries_the_declarations_its_modules_were_compiled_with(dists: Dists) -> None:
    """The finder hashes a module's .pxd with its .py: without them beside the installed
    modules, every module with one would run from source."""
    with zipfile.ZipFile(dists.native_wheel) as wheel:
        names = set(wheel.namelist())
    declared = [str(p.relative_to(ROOT)) for p in sorted(ROOT.glob("asyncsched/*/*.pxd"))]
    assert declared and set(declared) <= names


@pytest.mark.parametrize(
    ("kind", "compiler"),
    [("sdist", True), ("sdist", False), ("wheel", True), ("wheel", False)],
    ids=["sdist-cc", "sdist-no-cc", "wheel-cc", "wheel-no-cc"],
)
def test_installed_package_runs_the_bundled_example(
    kind: str,
    compiler: bool,
    dists: Dists,
    wheelhouse: Path,
    checkout_summary: str,
    tmp_path: Path,
) -> None:
    env = _offline(wheelhouse) if compiler else _offline(wheelhouse, **NO_COMPILER)
    if kind == "sdist":
        # A path of its own: pip caches the wheel it builds from a local sdist under the
        # sdist's URL, and a wheel built with a compiler must not serve the install without.
        target = tmp_path / "pkg" / dists.sdist.name
        target.parent.mkdir()
        shutil.copy(dists.sdist, target)
    else:
        target = dists.native_wheel if compiler else dists.pure_wheel
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    env_dir = env_dir.resolve()
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--progress-bar", "off", "--no-compile", "-q"]
    _run([*pip, str(target)], tmp_path, env, 1200)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    command = str(env_dir / "bin" / "asyncsched")

    version = _run([command, "version"], elsewhere, env, 120)
    site = env_dir / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert f"from {site / 'site-packages' / 'asyncsched'}" in version, version
    expected = "native kernels: yes" if compiler else "native kernels: no"
    assert expected in version, version
    if compiler:  # every module the build compiled runs compiled
        assert re.search(r"^compiled modules: (\d+) of \1$", version, re.MULTILINE), version
    else:
        assert "compiled modules: no (not built" in version, version
    reader = "compiled pod reader: yes" if compiler else "compiled pod reader: no"
    assert reader in version, version
    watch = "pod watch: protobuf" if compiler else "pod watch: json (no compiled pod reader)"
    assert watch in version, version

    listed = _run([command, "simulate", "--list-examples"], elsewhere, env, 120)
    assert listed.split()[:2] == [
        "gpu-cluster",
        str(site / "site-packages" / "asyncsched" / "examples" / "gpu-cluster.yaml"),
    ], listed

    events = elsewhere / "events.jsonl"
    argv = [command, "simulate", "--example", "gpu-cluster", "--events", str(events)]
    summary = _run(argv, elsewhere, env, 300)
    assert "result: all work done" in summary, summary
    assert summary == checkout_summary
    assert events.read_text().count("\n") > 30
