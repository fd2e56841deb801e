"""The hot resource arithmetic, compiled when it can be: the one door to ``asyncsched._native``.

``asyncsched._native`` is built from ``ext/_native.pyx`` by setup.py when
Cython and a C compiler are present. Without it (or with the environment
variable ``ASYNCSCHED_PURE=1``) the NumPy twins in
:mod:`asyncsched.model._kernels_py` serve, with the same answers. ``NATIVE``
says which path is in use; ``describe()`` says it in words.
"""

from __future__ import annotations

import logging
import os

from asyncsched.model import _kernels_py as _pure

__all__ = [
    "NATIVE",
    "PURE_ENV",
    "best_open",
    "binpack_rows",
    "book",
    "describe",
    "fit_rows",
    "resource_scores",
    "tree_refresh",
]

log = logging.getLogger(__name__)

PURE_ENV = "ASYNCSCHED_PURE"
"""Set to 1 to use the NumPy twins even when the compiled kernels are installed."""

best_open = _pure.best_open
book = _pure.book
fit_rows = _pure.fit_rows
resource_scores = _pure.resource_scores
binpack_rows = _pure.binpack_rows
tree_refresh = _pure.tree_refresh
NATIVE = False
_why = "not built (no Cython or C compiler at install time)"

if os.environ.get(PURE_ENV, "") not in ("", "0"):
    _why = f"disabled by {PURE_ENV}"
else:
    try:
        import asyncsched._native as _native
    except ImportError:
        pass
    else:
        best_open = _native.best_open
        book = _native.book
        fit_rows = _native.fit_rows
        resource_scores = _native.resource_scores
        binpack_rows = _native.binpack_rows
        tree_refresh = _native.tree_refresh
        NATIVE = True


def describe() -> str:
    """``native kernels: yes`` or ``native kernels: no (why)``."""
    return "native kernels: yes" if NATIVE else f"native kernels: no ({_why})"


log.debug("scheduling kernels: %s", describe())
