"""What a plugin and an action are: a name, and code that runs against a Session."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, Protocol

from asyncsched.framework.arguments import Arguments

if TYPE_CHECKING:
    from asyncsched.framework.session import Session

__all__ = ["Action", "ActionBuilder", "Plugin", "PluginBuilder"]


class Plugin(Protocol):
    """A scheduling policy. It takes part in a session by registering callbacks on it.

    A plugin is built afresh for every configuration from its ``arguments``;
    the builder validates them and raises ArgumentError early.
    """

    name: ClassVar[str]

    def on_session_open(self, ssn: Session) -> None:
        """Register callbacks (``ssn.add(hook, self.name, fn)``) and precompute what they need."""

    def on_session_close(self, ssn: Session) -> None:
        """Report what the session decided (podgroup conditions, counters); no new decisions."""


class Action(Protocol):
    """A step of a session (enqueue, allocate, backfill...); actions run in configured order."""

    name: ClassVar[str]

    def execute(self, ssn: Session) -> None: ...


PluginBuilder = Callable[[Arguments], Plugin]
ActionBuilder = Callable[[Arguments], Action]
