"""The hot resource arithmetic, compiled when it can be: the one door to ``asyncsched._native``.

``asyncsched._native`` is built from ``ext/_native.pyx`` by setup.py when
Cython and a C compiler are present. Without it (or with the environment
variable ``ASYNCSCHED_PURE=1``, read at import) the NumPy twins in
:mod:`asyncsched.model._kernels_py` serve, with the same answers. ``NATIVE``
says which path is in use; ``describe()`` says it in words. ``use_native``
switches paths in a running process, so a test can compare both on one input
without a subprocess; callers reach the kernels as ``kernels.NAME`` at call
time, so a switch takes effect at the next call.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType
from typing import Any

from asyncsched.model import _kernels_py as _pure

__all__ = [
    "KERNELS",
    "NATIVE",
    "PURE_ENV",
    "FitRows",
    "OffsetRows",
    "RowBooks",
    "ScoreRows",
    "TreePair",
    "add_amounts",
    "any_open",
    "best_open",
    "binpack_rows",
    "book",
    "book_status",
    "by_seq",
    "describe",
    "fit_rows",
    "free_cards",
    "merge_amounts",
    "nodes_current",
    "offset_rows",
    "picked",
    "resource_scores",
    "task_owners",
    "tree_refresh",
    "trees_refresh",
    "unique_rows",
    "use_native",
    "within_limits",
]

log = logging.getLogger(__name__)

PURE_ENV = "ASYNCSCHED_PURE"
"""Set to 1 to use the NumPy twins even when the compiled kernels are installed."""

KERNELS = tuple(name for name in _pure.__all__ if name != "MAX_NODE_SCORE")
"""The kernels' names, as the twins' module lists them: each is served by the compiled
module or by the twin alike."""

FitRows: Any = _pure.FitRows
OffsetRows: Any = _pure.OffsetRows
RowBooks: Any = _pure.RowBooks
ScoreRows: Any = _pure.ScoreRows
TreePair: Any = _pure.TreePair
add_amounts = _pure.add_amounts
any_open = _pure.any_open
best_open = _pure.best_open
book = _pure.book
book_status = _pure.book_status
by_seq = _pure.by_seq
fit_rows = _pure.fit_rows
free_cards = _pure.free_cards
merge_amounts = _pure.merge_amounts
nodes_current = _pure.nodes_current
offset_rows = _pure.offset_rows
picked = _pure.picked
resource_scores = _pure.resource_scores
task_owners = _pure.task_owners
binpack_rows = _pure.binpack_rows
tree_refresh = _pure.tree_refresh
trees_refresh = _pure.trees_refresh
unique_rows = _pure.unique_rows
within_limits = _pure.within_limits
NATIVE = False
_why = "not built (no Cython or C compiler at install time)"

_native: ModuleType | None
try:
    _native = importlib.import_module("asyncsched._native")
except ImportError:
    _native = None


def _stale(module: ModuleType | None) -> list[str]:
    """The kernels (and bound kernels' methods) a compiled module lacks (built from an
    older ``ext/_native.pyx``)."""
    if module is None:
        return []
    missing = [n for n in KERNELS if not hasattr(module, n)]
    for name in KERNELS:
        twin, built = getattr(_pure, name), getattr(module, name, None)
        if isinstance(twin, type) and built is not None:
            missing += [
                f"{name}.{m}"
                for m in vars(twin)
                if not m.startswith("_") and callable(getattr(twin, m)) and not hasattr(built, m)
            ]
    return missing


if _missing := _stale(_native):  # an old build must not break the import: use the twins
    _why = f"built from an older ext/_native.pyx (missing {', '.join(_missing)}); rebuild"
    _native = None


def use_native(native: bool) -> bool:
    """Serve the compiled kernels (True) or the NumPy twins (False) from now on; returns
    whether the compiled ones were in use before. ValueError if they are not built."""
    global NATIVE, _why
    if native and _native is None:
        raise ValueError(f"the compiled kernels are {_why}")
    before = NATIVE
    source: Any = _native if native else _pure
    here = globals()
    for name in KERNELS:
        here[name] = getattr(source, name)
    NATIVE = native
    if not native and _native is not None:
        _why = "switched off in this process"
    return before


if os.environ.get(PURE_ENV, "") not in ("", "0"):
    _why = f"disabled by {PURE_ENV}"
elif _native is not None:
    use_native(True)


def describe() -> str:
    """``native kernels: yes`` or ``native kernels: no (why)``."""
    return "native kernels: yes" if NATIVE else f"native kernels: no ({_why})"


log.debug("scheduling kernels: %s", describe())
