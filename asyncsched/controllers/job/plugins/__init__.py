"""Job plugins (env, svc, ssh, pytorch, mpi): pure functions that decorate pods and add objects."""

from __future__ import annotations

from asyncsched.controllers.job.plugins import env, mpi, pytorch, ssh, svc
from asyncsched.controllers.job.plugins.base import KeyFactory, Plugin, parse_flags
from asyncsched.controllers.job.plugins.ssh import rsa_key_factory, seeded_key_factory

__all__ = [
    "PLUGINS",
    "UNSUPPORTED_PLUGINS",
    "KeyFactory",
    "Plugin",
    "parse_flags",
    "rsa_key_factory",
    "seeded_key_factory",
]

PLUGINS: dict[str, Plugin] = {
    p.name: p for p in (env.PLUGIN, svc.PLUGIN, ssh.PLUGIN, pytorch.PLUGIN, mpi.PLUGIN)
}
UNSUPPORTED_PLUGINS = frozenset({"tensorflow", "ray", "hcclrank"})
"""Volcano has these; asyncsched does not yet, and says so at admission."""
