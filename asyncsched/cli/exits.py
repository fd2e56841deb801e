"""Exit codes of the ``asyncsched`` command."""

EXIT_OK = 0
EXIT_UNREACHABLE = 1
"""A bad kubeconfig or an API server that does not answer."""
EXIT_BAD_INPUT = 2
"""Manifests or a configuration that cannot be used."""
EXIT_DEADLOCK = 3
"""The simulation ended with running pods waiting forever for their groups."""
EXIT_STUCK = 4
"""The simulation ended with pods that can never be placed (each is named, with why)."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (SIGINT): what was simulated so far is summarized."""
