"""gpufrag: place GPU pods where they fragment the cluster's GPUs least.

Fragmentation is FGD's measure (``asyncsched.model.gpufrag``): the idle GPU that the
pods of the workload could not use. The workload is the one the cluster sees: the
shapes of the last ``gpufrag.window`` pods that arrived (recomputed every
``gpufrag.refresh`` arrivals), or a fixed list given in ``gpufrag.workload``. Cards
and what pods hold of them are the device model's (``NodeInfo.gpus``/``gpu_use``,
booked through the Statement); the plugin filters the nodes whose cards cannot take a
pod's GPU (a vectorised first cut: with ``deviceshare`` on, its per-node rules still
apply), scores the rest, and chooses the card a shared pod takes
(``Session.gpu_chooser``, so list it after ``deviceshare``); the bind carries
Volcano's vGPU annotations.

Policies (``gpufrag.policy``):

- ``packing`` (default): FGD's gradient, plus the GPU the placement starves of CPU
  (idle cards whose pods, at the workload's CPU per GPU, the node's CPU left could
  not feed; ``gpufrag.cpuWeight``), plus best fit's leftover as a small pull toward
  the fuller node (``gpufrag.fitWeight``). FGD alone counts CPU only when the node
  falls below a pod shape's whole request, so CPU-hungry pods drain the CPU beside
  idle cards a bit at a time; and it sees many nodes alike, where best fit's
  leftover keeps nodes whole.
- ``fgd``: the paper's policy as its scheduler plugin scores: the gradient squashed
  to an integer 0-100 (sigmoid of the gradient in cards), ties broken at random.
- ``bestfit``: the node with least CPU and GPU left after placement (half each,
  relative to the largest node); a share on the fullest card with room.
- ``random``: any node that fits, uniformly (seeded by ``gpufrag.seed`` and the pod).

Arguments:

- ``gpufrag.policy``: as above.
- ``gpufrag.weight`` (1): multiplies the score (scores add up with other plugins').
- ``gpufrag.workload``: a list of ``{cpu, gpuMilli, gpus, models, weight}`` (cpu a
  quantity, gpuMilli per card 0-1000, models a list of card models, weight the shape's
  share); when absent the workload is learned from arrivals.
- ``gpufrag.window`` (2000), ``gpufrag.refresh`` (200), ``gpufrag.coverage`` (0.95):
  how many recent arrivals make the workload, how often it is recomputed (it replaces
  the one in use only when they differ by more than 5%, total variation), and which
  share of those pods its most popular shapes must cover (FGD's "typical pods").
- ``gpufrag.cpuWeight`` (1) and ``gpufrag.fitWeight`` (0.1): ``packing``'s terms.
- ``gpufrag.seed`` (0): for ``random`` and ``fgd``'s ties.

A pod's GPU in thousandths of a card: a vGPU share of fewer than 100 cores counts
``cores x 10`` on one card; 100 cores or plain ``nvidia.com/gpu`` ask whole cards
(``asyncsched.plugins._gpucards``). What the plugin learns (cards as arrays, the
workload, per-shape answers; ``asyncsched.plugins._fragmemory``) is kept from one
session to the next while the configuration stays, and only the nodes that changed are
computed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from asyncsched.api.quantity import to_units
from asyncsched.framework import ArgumentError, Arguments, EventHandler, Session
from asyncsched.framework.hooks import (
    BATCH_NODE_ORDER,
    BATCH_PREDICATE,
    BatchNodeOrderFn,
)
from asyncsched.model.gpufrag import CARD, PodShape, Workload
from asyncsched.model.resource import CPU
from asyncsched.plugins._fragmemory import FragMemory, FragScorer
from asyncsched.plugins._gpucards import CardBooks

__all__ = ["POLICIES", "GpuFragPlugin", "card_books"]

POLICIES = ("packing", "fgd", "bestfit", "random")


class GpuFragPlugin:
    """Filters by card room, scores by fragmentation, picks cards."""

    name: ClassVar[str] = "gpufrag"

    def __init__(self, arguments: Arguments) -> None:
        self.policy = arguments.get_str("gpufrag.policy", "packing")
        if self.policy not in POLICIES:
            raise ArgumentError(
                f"plugin gpufrag: argument 'gpufrag.policy' must be one of "
                f"{', '.join(POLICIES)}, got {self.policy!r}"
            )
        self.weight = arguments.get_float("gpufrag.weight", 1.0)
        self.window = arguments.get_int("gpufrag.window", 2000)
        self.refresh = arguments.get_int("gpufrag.refresh", 200)
        self.coverage = arguments.get_float("gpufrag.coverage", 0.95)
        self.fit_weight = arguments.get_float("gpufrag.fitWeight", 0.1)
        self.cpu_weight = arguments.get_float("gpufrag.cpuWeight", 1.0)
        self.seed = arguments.get_int("gpufrag.seed", 0)
        if self.window < 1 or self.refresh < 1 or not 0 < self.coverage <= 1:
            raise ArgumentError(
                "plugin gpufrag: gpufrag.window and gpufrag.refresh must be at least 1 "
                "and gpufrag.coverage in (0, 1]"
            )
        self.fixed = _workload_argument(arguments.raw("gpufrag.workload"))
        self.memory = _memory_of(arguments, self)

    def on_session_open(self, ssn: Session) -> None:
        memory = self.memory
        books = memory.books
        books.sync(ssn.node_list, ssn.table, ssn.node_flags)
        if self.fixed is None:
            memory.observe(ssn)
        memory.ensure_classes()
        ssn.add(BATCH_PREDICATE, self.name, memory.failures)
        score: BatchNodeOrderFn = FragScorer(memory, ssn)
        ssn.add(BATCH_NODE_ORDER, self.name, score)
        ssn.add_event_handler(
            self.name,
            EventHandler(
                on_allocate=lambda task: memory.moved(ssn, task),
                on_deallocate=lambda task: memory.moved(ssn, task),
            ),
        )
        ssn.gpu_chooser = lambda task, node: memory.choose(task, node)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _workload_argument(raw: Any) -> Workload | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise ArgumentError("plugin gpufrag: argument 'gpufrag.workload' must be a list")
    shapes, weights = [], []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ArgumentError(f"plugin gpufrag: gpufrag.workload[{i}] must be a mapping")
        try:
            cpu = to_units(CPU, item.get("cpu", 0))
            milli = int(item.get("gpuMilli", 0))
            gpus = int(item.get("gpus", 1 if milli else 0))
            weight = float(item.get("weight", 1))
            models = tuple(str(m) for m in item.get("models", ()) or ())
        except (TypeError, ValueError) as exc:
            raise ArgumentError(f"plugin gpufrag: gpufrag.workload[{i}]: {exc}") from None
        if not 0 <= milli <= CARD or gpus < 0 or weight < 0 or (milli == 0) != (gpus == 0):
            raise ArgumentError(
                f"plugin gpufrag: gpufrag.workload[{i}]: gpuMilli must be 0-1000, gpus and "
                "weight not negative, and gpus 0 exactly when gpuMilli is 0"
            )
        shapes.append(PodShape(cpu, milli, gpus, models))
        weights.append(weight)
    total = sum(weights)
    if total <= 0:
        raise ArgumentError("plugin gpufrag: gpufrag.workload has no weight")
    return Workload(tuple(shapes), tuple(w / total for w in weights))


_MEMORIES: dict[int, tuple[Arguments, FragMemory]] = {}
"""What the plugin keeps from one session to the next, per loaded configuration (its
Arguments object stands for it); the last few configurations only."""


def card_books(arguments: Arguments) -> CardBooks | None:
    """The cards as the plugin built with ``arguments`` last saw them (for reports)."""
    found = _MEMORIES.get(id(arguments))
    return found[1].books if found is not None and found[0] is arguments else None


def _memory_of(arguments: Arguments, plugin: GpuFragPlugin) -> FragMemory:
    found = _MEMORIES.get(id(arguments))
    if found is not None and found[0] is arguments:
        found[1].plugin = plugin
        return found[1]
    memory = FragMemory(plugin)
    if len(_MEMORIES) >= 8:
        _MEMORIES.pop(next(iter(_MEMORIES)))
    _MEMORIES[id(arguments)] = (arguments, memory)
    return memory
