"""The sim backend: an in-memory cluster with a virtual clock, running the real core."""

from asyncsched.backends.sim.manifests import (
    Input,
    Manifest,
    ManifestError,
    load_input,
    load_manifests,
)
from asyncsched.backends.sim.report import SimReport, summarize
from asyncsched.backends.sim.simulation import Outcome, Simulation

__all__ = [
    "Input",
    "Manifest",
    "ManifestError",
    "Outcome",
    "SimReport",
    "Simulation",
    "load_input",
    "load_manifests",
    "summarize",
]
