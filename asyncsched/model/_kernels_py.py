"""The NumPy twins of the compiled kernels in ``ext/_native.pyx``, gathered in one namespace.

Each name here has a compiled twin of the same name and signature in
``asyncsched._native``; :mod:`asyncsched.model.kernels` picks one, reading this module's
``__all__`` as the list of kernels. The twins live by concept: the kernels on the node
table's rows (:mod:`~asyncsched.model._twins_rows`), those kernels bound once to a class's
arrays and kept current with the table's change log (:mod:`~asyncsched.model._twins_bound`),
and the kernels on dicts and model objects (:mod:`~asyncsched.model._twins_objects`). The
tests hold both twins to the same answers on random inputs.
"""

from __future__ import annotations

from asyncsched.model._twins_bound import (
    FitRows,
    OffsetRows,
    RowBooks,
    ScoreRows,
    TreePair,
    unique_rows,
)
from asyncsched.model._twins_objects import (
    add_amounts,
    by_seq,
    free_cards,
    merge_amounts,
    nodes_current,
    task_owners,
    within_limits,
)
from asyncsched.model._twins_rows import (
    MAX_NODE_SCORE,
    any_open,
    best_open,
    binpack_rows,
    book,
    book_status,
    fit_rows,
    offset_rows,
    picked,
    resource_scores,
    tree_refresh,
    trees_refresh,
)

__all__ = [
    "MAX_NODE_SCORE",
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
    "within_limits",
]
