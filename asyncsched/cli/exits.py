"""Exit codes of the ``asyncsched`` command."""

EXIT_OK = 0
EXIT_UNREACHABLE = 1
"""A bad kubeconfig or an API server that does not answer."""
EXIT_BAD_INPUT = 2
"""Manifests or a configuration that cannot be used."""
EXIT_DEADLOCK = 3
"""The simulation ended with running pods waiting forever for their groups."""
