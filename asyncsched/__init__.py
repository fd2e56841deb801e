"""asyncsched: a Volcano-compatible batch scheduler for Kubernetes, in Python."""

import os as _os

from asyncsched import _compiled

_compiled.install(_os.path.dirname(__file__))  # before any compiled module can be imported
