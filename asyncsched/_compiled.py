"""Which of the core's modules run compiled: the one rule, applied at every import.

``setup.py`` compiles the scheduling core's modules (``asyncsched.model``, ``cache``,
``framework``, ``actions``, ``plugins``, less the few it names) with Cython, from the
same ``.py`` files, when Cython and a C compiler are present, and writes
``_compiled.json`` beside them: each compiled module's name, the SHA-256 of the source it
was compiled from (its ``.py``, and its ``.pxd`` where one declares the module's classes
as extension types) and the core modules each ``.pxd`` cimports. A compiled module is the
same code as its source, and no faster algorithm: it spares the interpreter's dispatch,
which is most of what is left around the kernels, and a class its ``.pxd`` declares keeps
its fields as C struct members (BENCHMARKS.md, "The core compiled").

An extension module would shadow its ``.py`` at every import, so an edited source would
silently not run until the next build. The finder installed here (first on
``sys.meta_path``, by ``asyncsched/__init__.py``) therefore imports a module compiled only
when its source is the one it was compiled from and every module it cimports runs compiled
too (a compiled subclass of a class that now runs from source would not load), and from the
source otherwise; with ``ASYNCSCHED_PURE=1`` (read at import, as the kernels read it)
always from the source, and with ``ASYNCSCHED_COMPILED_MODULES=0`` too, the kernels staying
compiled: profilers see no frames of compiled code, so the benchmarks' ``--profile`` sets
it. ``asyncsched version`` says how many run compiled and names the stale ones.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from types import ModuleType

__all__ = [
    "COMPILED_ENV",
    "MANIFEST",
    "PURE_ENV",
    "CompiledModules",
    "install",
    "module_hash",
    "state",
]

MANIFEST = "_compiled.json"
"""Beside ``asyncsched/__init__.py``: ``{"modules": {name: module_hash}, "cimports": {name:
[names its .pxd cimports]}}``."""

PURE_ENV = "ASYNCSCHED_PURE"
"""The same switch as the kernels' (``asyncsched.model.kernels.PURE_ENV``)."""

COMPILED_ENV = "ASYNCSCHED_COMPILED_MODULES"
"""0: the core's modules from source, the kernels as they are."""


def module_hash(base: str) -> str:
    """The SHA-256 of ``base.py``'s bytes, then of ``base.pxd``'s when there is one, as
    ``setup.py`` records it."""
    with open(base + ".py", "rb") as source:
        digest = hashlib.sha256(source.read())
    if os.path.isfile(base + ".pxd"):
        with open(base + ".pxd", "rb") as declarations:
            digest.update(b"\0pxd\0" + declarations.read())
    return digest.hexdigest()


@dataclass
class CompiledModules:
    """The finder, and what ``asyncsched version`` says of it."""

    package: str
    package_dir: str
    built: dict[str, str]
    """The manifest: module name -> hash of the source it was compiled from."""
    cimports: dict[str, list[str]]
    """The manifest: module name -> the modules its ``.pxd`` cimports."""
    pure: bool
    """Every module from source."""
    why: str = ""
    """Who asked for the sources (an environment variable), when ``pure``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """A spec from the source when an extension module beside it must not run; None
        lets the usual finders (which prefer an extension module) import it."""
        if not path or not fullname.startswith(self.package + "."):
            return None
        leaf = fullname.rpartition(".")[2]
        for entry in path:
            source = os.path.join(entry, f"{leaf}.py")
            if os.path.isfile(source):
                break
        else:
            return None  # a package, or an extension module with no source (the kernels)
        if not any(os.path.isfile(os.path.join(entry, leaf + s)) for s in EXTENSION_SUFFIXES):
            return None
        if not self.pure and self._runs_compiled(fullname, source[: -len(".py")]):
            return None
        return importlib.util.spec_from_file_location(fullname, source)

    def _runs_compiled(
        self, name: str, base: str | None = None, asking: frozenset[str] = frozenset()
    ) -> bool:
        """The extension module is there, was compiled from the source as it is, and so
        were those of every module it cimports (``asking``: the modules whose answer waits
        on this one, so that a cycle of cimports ends)."""
        wanted = self.built.get(name)
        if wanted is None:
            return False
        if name in asking:
            return True  # its own files are checked where the cycle began
        if base is None:
            base = os.path.join(self.package_dir, *name.split(".")[1:])
        if not (
            os.path.isfile(base + ".py")
            and any(os.path.isfile(base + s) for s in EXTENSION_SUFFIXES)
            and module_hash(base) == wanted
        ):
            return False
        asking = asking | {name}
        return all(self._runs_compiled(used, asking=asking) for used in self.cimports.get(name, ()))

    def current(self) -> list[str]:
        """The manifest's modules that would run compiled now (imported or not)."""
        return [name for name in sorted(self.built) if self._runs_compiled(name)]

    def count(self) -> int:
        """How many of the core's modules run compiled: 0 when every one runs from source."""
        return 0 if self.pure else len(self.current())

    def describe(self) -> str:
        """One line for ``asyncsched version``."""
        if not self.built:
            return "compiled modules: no (not built: no Cython or C compiler at install time)"
        if self.pure:
            return f"compiled modules: no (disabled by {self.why})"
        current = self.current()
        line = f"compiled modules: {len(current)} of {len(self.built)}"
        if len(current) < len(self.built):
            names = ", ".join(sorted(set(self.built) - set(current)))
            line += (
                f" (from source, changed or missing since the build, or cimporting one that"
                f" is: {names}; rebuild)"
            )
        return line


_state: CompiledModules | None = None


def install(package_dir: str, package: str = "asyncsched") -> CompiledModules:
    """Put the finder first on ``sys.meta_path`` (once) for the modules the manifest in
    ``package_dir`` names."""
    global _state
    if _state is not None:
        return _state
    try:
        with open(os.path.join(package_dir, MANIFEST), encoding="utf-8") as found:
            manifest = json.load(found)
        built = dict(manifest["modules"])
        cimports = {name: list(used) for name, used in manifest.get("cimports", {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        built, cimports = {}, {}
    why = ""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        why = PURE_ENV
    elif os.environ.get(COMPILED_ENV, "") == "0":
        why = f"{COMPILED_ENV}=0"
    _state = CompiledModules(package, package_dir, built, cimports, bool(why), why)
    sys.meta_path.insert(0, _state)
    return _state


def state() -> CompiledModules:
    """The installed finder (``asyncsched/__init__.py`` installs it)."""
    assert _state is not None, "asyncsched._compiled.install was not called"
    return _state
