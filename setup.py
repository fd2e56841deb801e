"""Builds the optional Cython kernels in ext/, and compiles the scheduling core's own
modules, when Cython and a compiler are present.

Without them the package installs pure-Python and uses the NumPy twins of every
kernel (asyncsched/model/_kernels_py.py) and the core's sources; ``asyncsched version``
says which. The core's modules are compiled from their ``.py`` files as they are (no
types taken from annotations, so they mean what the interpreter makes of them; a ``.pxd``
beside a few makes their classes extension types with the same fields), and
``asyncsched/_compiled.json`` records the hash of each source compiled and what its ``.pxd``
cimports: only a module whose source is still that one, and whose cimports run compiled,
runs compiled (``asyncsched/_compiled.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


COMPILED_PACKAGES = ("model", "cache", "framework", "actions", "plugins")
"""The scheduling core: what a session and a snapshot run (BENCHMARKS.md, "The core
compiled")."""

NOT_COMPILED = {
    "asyncsched.model._kernels_py": "the NumPy twins: the pure path's kernels",
    "asyncsched.model._twins_bound": "the NumPy twins",
    "asyncsched.model._twins_objects": "the NumPy twins",
    "asyncsched.model._twins_rows": "the NumPy twins",
    "asyncsched.framework.hookspecs": "pluggy reads the hook specifications' signatures",
}


def _load_compiled_rule() -> ModuleType:
    """``asyncsched/_compiled.py`` by its path (it imports only the standard library), so that
    the build hashes a module as the finder will; importing the package would install the
    finder in this process."""
    path = os.path.join(HERE, "asyncsched", "_compiled.py")
    spec = importlib.util.spec_from_file_location("_asyncsched_compiled_rule", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses looks its module up while defining
    spec.loader.exec_module(module)
    return module


_RULE = _load_compiled_rule()
MANIFEST = _RULE.MANIFEST

SOURCE_HASHES: dict[str, str] = {}
"""Each core module's source hash, taken before Cython reads the source: an edit during
the build then makes the module stale rather than recorded as current."""

CIMPORTS: dict[str, list[str]] = {}
"""The core modules each compiled module's ``.pxd`` cimports: its compiled code is laid out
for their compiled classes, so it may run compiled only while they do."""


def _cimports(base: str) -> list[str]:
    """The package's modules named by ``from M cimport ...`` in a module's ``.pxd``."""
    if not os.path.isfile(base + ".pxd"):
        return []
    with open(base + ".pxd", encoding="utf-8") as read:
        words = [line.split() for line in read]
    return sorted(
        {
            w[1]
            for w in words
            if len(w) > 2
            and w[0] == "from"
            and w[2] == "cimport"
            and w[1].startswith("asyncsched.")
        }
    )


def _core_modules() -> list[str]:
    found = []
    for package in COMPILED_PACKAGES:
        for path in sorted((Path(HERE) / "asyncsched" / package).glob("*.py")):
            name = f"asyncsched.{package}.{path.stem}"
            if path.stem != "__init__" and name not in NOT_COMPILED:
                found.append(name)
    return found


class _OptionalBuildExt(build_ext):
    """Compile the kernels and the core if possible; never fail the install because of
    them."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # about a hundred modules: use every core
            self.parallel = os.cpu_count() or 1
        self.failed: set[str] = set()

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, broken toolchain...
            _skip(exc, "the kernels and the core", "the pure-Python twins and sources")
        self._write_manifest()

    def _write_manifest(self) -> None:
        """Each core module compiled, with the hash of the source it was compiled from.
        Written even when empty, so a build that compiled nothing leaves no older list."""
        package_dir = os.path.dirname(self.get_ext_fullpath("asyncsched._native"))
        modules = {
            ext.name: SOURCE_HASHES[ext.name]
            for ext in self.extensions
            if ext.name in SOURCE_HASHES
            and ext.name not in self.failed
            and os.path.isfile(self.get_ext_fullpath(ext.name))
        }
        cimports = {name: CIMPORTS[name] for name in modules if CIMPORTS.get(name)}
        os.makedirs(package_dir, exist_ok=True)
        with open(os.path.join(package_dir, MANIFEST), "w", encoding="utf-8") as out:
            json.dump({"modules": modules, "cimports": cimports}, out, indent=1, sort_keys=True)
            out.write("\n")

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self.failed.add(ext.name)  # an older build's module may still be there
            core = ext.name in SOURCE_HASHES
            _skip(exc, ext.name, "its source" if core else "its pure-Python twin")


def _skip(
    exc: BaseException, what: str = "native kernels", instead: str = "their pure-Python twins"
) -> None:
    print(f"asyncsched: {what} not compiled ({exc}); using {instead}", file=sys.stderr)


def _settings_stamp(build_dir: str) -> Path:
    Path(build_dir).mkdir(parents=True, exist_ok=True)
    return Path(build_dir, "settings.json")


def _settings_changed(build_dir: str, settings: dict[str, Any]) -> bool:
    """Whether the C in ``build_dir`` was generated with other directives or another Cython:
    cythonize compares only the files' times, so a change of settings alone would leave
    every module's old C in place."""
    try:
        before = json.loads(_settings_stamp(build_dir).read_text())
    except (OSError, ValueError):
        return True
    return bool(before != settings)


def _extensions() -> list[Any]:
    if os.environ.get("ASYNCSCHED_NO_NATIVE"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("asyncsched: Cython not found; using the NumPy twins", file=sys.stderr)
        return []
    from setuptools import Extension

    extensions = [
        Extension(
            module,
            [os.path.join("ext", source)],
            extra_compile_args=["-O3"] if os.name == "posix" else [],
        )
        for module, source in (
            ("asyncsched._native", "_native.pyx"),
            ("asyncsched._protowire", "_protowire.pyx"),
        )
        if os.path.exists(os.path.join(HERE, "ext", source))
    ]
    core = []
    for module in _core_modules():
        source = os.path.join(*module.split(".")) + ".py"
        base = os.path.join(HERE, source[: -len(".py")])
        SOURCE_HASHES[module] = _RULE.module_hash(base)
        CIMPORTS[module] = _cimports(base)
        flags = ["-O2"] if os.name == "posix" else []
        core.append(Extension(module, [source], extra_compile_args=flags))
    try:
        built = list(cythonize(extensions, language_level=3, quiet=True))
    except Exception as exc:
        _skip(exc)
        return []
    try:  # generated C under build/, not beside the sources
        # nonecheck: a field read through a variable a .pxd types raises AttributeError on
        # None, as interpreted, instead of reading from a null pointer
        directives = {"annotation_typing": False, "nonecheck": True}
        build_dir = os.path.join("build", "cython")
        import Cython

        settings = {"directives": directives, "language_level": 3, "cython": Cython.__version__}
        changed = _settings_changed(build_dir, settings)
        built += cythonize(
            core,
            language_level=3,
            quiet=True,
            build_dir=build_dir,
            compiler_directives=directives,
            force=changed,
        )
        if changed:
            _settings_stamp(build_dir).write_text(json.dumps(settings, sort_keys=True))
    except Exception as exc:
        SOURCE_HASHES.clear()
        CIMPORTS.clear()
        _skip(exc, "the core's modules", "their sources")
    return built


setup(ext_modules=_extensions(), cmdclass={"build_ext": _OptionalBuildExt})
