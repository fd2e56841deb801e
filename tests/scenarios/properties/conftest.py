"""Hypothesis profiles for the property tests.

``asyncsched`` (the normal run and CI): 400 examples per test, derandomized and with no
example database, so every run tries the same inputs and a failure repeats anywhere.
``soak``: many more random examples (5000 per test, or ``ASYNCSCHED_SOAK=N``), remembered
in ``.hypothesis/`` so a failure found once is tried first next time. Choose it with
``ASYNCSCHED_SOAK=1`` (or a number) or ``--hypothesis-profile=soak``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SOAK = os.environ.get("ASYNCSCHED_SOAK", "")
_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "asyncsched",
    max_examples=400,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_IS_FINE,
)
settings.register_profile(
    "soak",
    max_examples=int(_SOAK) if _SOAK.isdigit() and int(_SOAK) > 1 else 5000,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_IS_FINE,
)
if _SOAK not in ("", "0"):
    settings.load_profile("soak")
elif settings.get_current_profile_name() == "default":
    settings.load_profile("asyncsched")
