"""The scheduler configuration file, re-read when it changes.

A new file is validated whole before it replaces the one in force; on any
error the previous configuration stays and the error is kept for the caller
to report (log, Event, metric). Both the simulator and the kube backend poll
this before each session, so a change applies at the next session.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import yaml

from asyncsched.backends.bundled import default_configuration
from asyncsched.framework import ConfigError, LoadedConfiguration, Registry, load_configuration

__all__ = ["CONFIG_KEYS", "ConfigSource", "ReloadOutcome", "unwrap_config_map"]

CONFIG_KEYS = ("scheduler.yaml", "volcano-scheduler.conf")
"""The keys a ConfigMap carries the configuration under: ours, then Volcano's."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReloadOutcome:
    """What a poll found: a new configuration, a rejected one, or nothing new."""

    changed: bool
    error: str = ""
    warnings: tuple[str, ...] = ()


class ConfigSource:
    """A configuration from a file (or the bundled default, config/scheduler.yaml, without one)."""

    def __init__(self, registry: Registry, path: str | Path | None = None) -> None:
        self.registry = registry
        self.path = Path(path) if path is not None else None
        self._stamp: tuple[int, int] | None = None
        self._digest = ""
        self.reloads = 0
        self.rejections = 0
        self.last_error = ""
        self._label = ""
        if self.path is None:
            self.current = load_configuration(default_configuration(), registry, "built-in default")
            return
        text = unwrap_config_map(self._read(), str(self.path))
        self.current = load_configuration(text, registry, str(self.path))
        self._digest = hashlib.sha256(text.encode()).hexdigest()

    @classmethod
    def from_text(cls, registry: Registry, text: str, source: str) -> ConfigSource:
        """A fixed configuration read elsewhere (a ConfigMap through the API, for a what-if);
        ConfigError when it is invalid. Polling it finds nothing new."""
        config = cls(registry)
        text = unwrap_config_map(text, source)
        config.current = load_configuration(text, registry, source)
        config._digest = hashlib.sha256(text.encode()).hexdigest()
        config._label = source
        return config

    @property
    def name(self) -> str:
        if self._label:
            return self._label
        return str(self.path) if self.path is not None else "built-in default"

    def _read(self) -> str:
        assert self.path is not None
        try:
            stat = self.path.stat()
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        self._stamp = (stat.st_mtime_ns, stat.st_size)
        return text

    def poll(self) -> ReloadOutcome:
        """Re-read the file if it changed on disk; keep the last good configuration on error."""
        if self.path is None:
            return ReloadOutcome(changed=False)
        try:
            stat = self.path.stat()
        except OSError as exc:
            return self._reject(f"{self.path}: cannot read: {exc.strerror or exc}")
        if (stat.st_mtime_ns, stat.st_size) == self._stamp:
            return ReloadOutcome(changed=False)
        try:
            text = unwrap_config_map(self._read(), str(self.path))
        except ConfigError as exc:
            return self._reject(str(exc))
        return self.offer(text, str(self.path))

    def offer(self, text: str, source: str) -> ReloadOutcome:
        """Consider a configuration text (from the file, or from a ConfigMap watch)."""
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest == self._digest:
            return ReloadOutcome(changed=False)
        self._digest = digest
        try:
            loaded: LoadedConfiguration = load_configuration(text, self.registry, source)
        except ConfigError as exc:
            return self._reject(str(exc))
        self.current = loaded
        self.reloads += 1
        warnings = loaded.configuration.warnings
        log.info("configuration from %s taken into use", source)
        for warning in warnings:
            log.warning("%s", warning)
        return ReloadOutcome(changed=True, warnings=warnings)

    def _reject(self, message: str) -> ReloadOutcome:
        self.rejections += 1
        self.last_error = message
        log.error("configuration rejected, keeping the previous one: %s", message)
        return ReloadOutcome(changed=False, error=message)


def unwrap_config_map(text: str, source: str) -> str:
    """The configuration in ``text``: the text itself, or, when it is a ConfigMap manifest
    (as Volcano ships its ``volcano-scheduler-configmap``), the value of its first key of
    CONFIG_KEYS. ConfigError when a ConfigMap has none of them."""
    if "ConfigMap" not in text:
        return text
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # not YAML at all: the configuration parser says so
    if not isinstance(doc, dict) or doc.get("kind") != "ConfigMap":
        return text
    data = doc.get("data") or {}
    for key in CONFIG_KEYS:
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str):
            return value
    raise ConfigError(
        f"{source}: a ConfigMap with none of the keys {', '.join(CONFIG_KEYS)} under data"
    )
