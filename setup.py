"""Builds the optional Cython kernels in ext/ when Cython and a compiler are present.

Without them the package installs pure-Python and uses the NumPy twins of every
kernel (asyncsched/model/_kernels_py.py); ``asyncsched version`` says which.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class _OptionalBuildExt(build_ext):
    """Compile the kernels if possible; never fail the install because of them."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, broken toolchain...
            _skip(exc)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            _skip(exc)


def _skip(exc: BaseException) -> None:
    print(f"asyncsched: native kernels not built ({exc}); using the NumPy twins", file=sys.stderr)


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
    try:
        return list(cythonize(extensions, language_level=3, quiet=True))
    except Exception as exc:
        _skip(exc)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": _OptionalBuildExt})
