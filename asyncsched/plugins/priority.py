"""PLACEHOLDER: being written; replaced before commit."""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import Arguments, Session


class PriorityPlugin:
    name: ClassVar[str] = "priority"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        pass

    def on_session_close(self, ssn: Session) -> None:
        pass
