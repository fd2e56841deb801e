"""PLACEHOLDER: being written; replaced before commit."""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import Arguments, Session


class BackfillAction:
    name: ClassVar[str] = "backfill"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        pass
