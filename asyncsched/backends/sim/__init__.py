"""The sim backend: an in-memory cluster with a virtual clock, running the real core."""

from asyncsched.backends.sim.manifests import (
    Input,
    Manifest,
    ManifestError,
    load_input,
    load_manifests,
)
from asyncsched.backends.sim.report import SimReport
from asyncsched.backends.sim.simulation import Outcome, Simulation
from asyncsched.backends.sim.summary import summarize

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
