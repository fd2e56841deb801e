"""The files the package carries besides code: the default configuration and the examples.

They live inside the package (``asyncsched/config``, ``asyncsched/examples``) so that a
plain ``pip install asyncsched`` has them: the scheduler's default is the same file that
deploy/'s ConfigMap holds, and ``asyncsched simulate --example NAME`` runs with no checkout.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_CONFIGURATION_FILE", "EXAMPLES", "default_configuration", "examples"]

_PACKAGE = Path(__file__).resolve().parents[1]

DEFAULT_CONFIGURATION_FILE = _PACKAGE / "config" / "scheduler.yaml"
"""Volcano's default actions and tiers; used whenever no configuration is given."""

EXAMPLES = _PACKAGE / "examples"
"""Example clusters for ``asyncsched simulate --example NAME`` (``NAME.yaml``)."""


def default_configuration() -> str:
    """The text of the default scheduler configuration."""
    return DEFAULT_CONFIGURATION_FILE.read_text(encoding="utf-8")


def examples() -> dict[str, Path]:
    """Bundled example name -> its YAML file, sorted by name."""
    return {path.stem: path for path in sorted(EXAMPLES.glob("*.yaml"))}
