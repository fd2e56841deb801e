"""Typed access to a plugin's or action's ``arguments:`` map, failing early on a wrong type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ArgumentError", "Arguments"]


class ArgumentError(ValueError):
    """An argument with a value of the wrong type or range."""


class Arguments:
    """The arguments of one plugin or action, as written in the configuration.

    Volcano's YAML carries numbers both bare and quoted (``binpack.weight: 10``
    or ``"10"``); both are accepted.
    """

    __slots__ = ("_owner", "_read", "_values", "warnings")

    def __init__(self, values: Mapping[str, Any] | None = None, owner: str = "") -> None:
        self._values: dict[str, Any] = dict(values or {})
        self._owner = owner
        self._read: set[str] = set()
        self.warnings: list[str] = []
        """What the plugin or action accepted but does not do as written (``warn``)."""

    def warn(self, key: str, what: str) -> None:
        """An argument is accepted and not used as written: said once, when the
        configuration is loaded (``load_configuration`` adds it to its warnings). The
        plugin is built again each session from these same arguments: kept once."""
        where = f"{self._owner}: " if self._owner else ""
        message = f"{where}argument {key!r} {what}"
        if message not in self.warnings:
            self.warnings.append(message)

    def __contains__(self, key: str) -> bool:
        self._read.add(key)
        return key in self._values

    def unread(self) -> list[str]:
        """The arguments given that nothing has asked for (by a getter, ``raw`` or ``in``):
        after a plugin or action is built, the ones it does not use."""
        return [key for key in self._values if key not in self._read]

    def keys(self) -> list[str]:
        return list(self._values)

    def raw(self, key: str) -> Any:
        self._read.add(key)
        return self._values.get(key)

    def _fail(self, key: str, value: Any, wanted: str) -> ArgumentError:
        where = f"{self._owner}: " if self._owner else ""
        return ArgumentError(f"{where}argument {key!r} must be {wanted}, got {value!r}")

    def get_int(self, key: str, default: int) -> int:
        self._read.add(key)
        value = self._values.get(key, default)
        if isinstance(value, bool):
            raise self._fail(key, value, "an integer")
        try:
            return int(str(value).strip())
        except ValueError:
            raise self._fail(key, value, "an integer") from None

    def get_float(self, key: str, default: float) -> float:
        self._read.add(key)
        value = self._values.get(key, default)
        if isinstance(value, bool):
            raise self._fail(key, value, "a number")
        try:
            return float(str(value).strip())
        except ValueError:
            raise self._fail(key, value, "a number") from None

    def get_bool(self, key: str, default: bool) -> bool:
        self._read.add(key)
        value = self._values.get(key, default)
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no"):
            return False
        raise self._fail(key, value, "true or false")

    def get_str(self, key: str, default: str) -> str:
        self._read.add(key)
        value = self._values.get(key, default)
        return str(value)
