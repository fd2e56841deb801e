"""Problems with cluster objects, each told once: a log line and, from the leader, an Event.

A replica meets the same bad object again at every relist and every session until someone
fixes it. Telling each distinct problem once keeps the log readable and gives the object's
owner one warning Event (``kubectl describe`` shows it) rather than a flood.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

__all__ = ["TellEvent", "Warned"]


class TellEvent(Protocol):
    """How an Event is written (``StatusWriter.event``)."""

    def __call__(
        self,
        kind: str,
        namespace: str,
        name: str,
        uid: str,
        reason: str,
        message: str,
        type_: str = "Normal",
        api_version: str = "v1",
    ) -> None: ...


class Warned:
    """The problems one replica has told, and how it tells a new one."""

    def __init__(
        self,
        log: logging.Logger,
        tell: TellEvent,
        leading: Callable[[], bool],
        api_versions: Mapping[str, str],
    ) -> None:
        self._log = log
        self._tell = tell
        self._leading = leading
        self._api_versions = api_versions
        self._told: set[tuple[str, str, str, str]] = set()

    def warn(
        self,
        kind: str,
        namespace: str,
        name: str,
        problem: str,
        line: str,
        *,
        reason: str = "",
        message: str = "",
    ) -> bool:
        """Log ``line`` and, with a ``reason``, put a warning Event with ``message`` on the
        object, unless this problem of this object was told before; whether it was new.
        Only the leader writes Events: the other replicas would repeat them."""
        key = (kind, namespace, name, problem)
        if key in self._told:
            return False
        self._told.add(key)
        self._log.warning("%s", line)
        if reason and self._leading():
            api_version = self._api_versions.get(kind, "v1")
            self._tell(
                kind, namespace, name, "", reason, message, "Warning", api_version=api_version
            )
        return True
