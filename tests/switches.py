"""Environment switches the core reads when a session opens, set for one block of a test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from asyncsched.framework.calls import SHORTCUTS_ENV


@contextmanager
def shortcuts(on: bool) -> Iterator[None]:
    """Run the block with the session's shortcuts on or off (``ASYNCSCHED_SHORTCUTS``)."""
    before = os.environ.get(SHORTCUTS_ENV)
    os.environ[SHORTCUTS_ENV] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[SHORTCUTS_ENV]
        else:
            os.environ[SHORTCUTS_ENV] = before
