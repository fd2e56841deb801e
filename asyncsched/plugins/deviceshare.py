"""deviceshare: GPU sharing as Volcano's plugin of that name does it.

vGPU pods (``volcano.sh/vgpu-number``, ``-memory``, ``-memory-percentage``,
``-cores``) go on cards registered by HAMi's device plugin
(``volcano.sh/node-vgpu-register``); gpushare pods (``volcano.sh/gpu-memory``,
``volcano.sh/gpu-number``) on the cards counted in the node's capacity. The
predicate says whether the pod's cards fit (and why not), the score follows
``deviceshare.SchedulePolicy`` (binpack: fullest memory; spread: unused cards)
times ``deviceshare.ScheduleWeight``, and when the Statement places the pod
this plugin chooses its cards (``Session.gpu_chooser``); the bind carries the
annotations Volcano writes (``volcano.sh/vgpu-ids-new``... or
``volcano.sh/gpu-index``). The card rules are in ``asyncsched.plugins._cards``.

Arguments (Volcano's): ``deviceshare.VGPUEnable``, ``deviceshare.GPUSharingEnable``,
``deviceshare.GPUNumberEnable`` (all false by default), ``deviceshare.SchedulePolicy``
(``binpack``, ``spread`` or empty), ``deviceshare.ScheduleWeight`` (0: no score).
``deviceshare.NodeLockEnable`` has no effect here (one scheduler books the cards in
its own cache), and is reported as unused.

``deviceshare.ModelResources`` (ours): the resource names of GPU model pools, as a list
(``[nvidia.com/a100, nvidia.com/h100]``, the model being the name after the ``/``) or a
map from name to card model (``asyncsched.model.gpu_pools``). A node reporting such a
resource has that many whole cards of the model; a pod asking for it gets whole cards of
it; and a queue's capability in it also bounds the cards of that model its pods get
when they ask ``nvidia.com/gpu`` or vGPU shares (``asyncsched.plugins._model_quota``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from asyncsched.framework import ArgumentError, Arguments, EventHandler, Session
from asyncsched.framework.hooks import (
    BATCH_NODE_ORDER,
    BATCH_PREDICATE,
    BatchNodeOrderFn,
    BoolArray,
    FloatArray,
    IntArray,
)
from asyncsched.model import NodeInfo, TaskInfo
from asyncsched.model.gpu_claims import GpuClaim
from asyncsched.model.gpu_pools import MODEL_RESOURCES, parse_pools
from asyncsched.plugins._cards import BINPACK, SPREAD, CardFitter, Fit, fit_cards
from asyncsched.plugins._model_quota import ModelQuota

__all__ = [
    "GPU_NUMBER_ENABLE",
    "GPU_SHARING_ENABLE",
    "SCHEDULE_POLICY",
    "SCHEDULE_WEIGHT",
    "VGPU_ENABLE",
    "DeviceSharePlugin",
]

VGPU_ENABLE = "deviceshare.VGPUEnable"
GPU_SHARING_ENABLE = "deviceshare.GPUSharingEnable"
GPU_NUMBER_ENABLE = "deviceshare.GPUNumberEnable"
SCHEDULE_POLICY = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT = "deviceshare.ScheduleWeight"


class DeviceSharePlugin:
    name: ClassVar[str] = "deviceshare"

    def __init__(self, arguments: Arguments) -> None:
        vgpu = arguments.get_bool(VGPU_ENABLE, False)
        sharing = arguments.get_bool(GPU_SHARING_ENABLE, False)
        number = arguments.get_bool(GPU_NUMBER_ENABLE, False)
        self.policy = arguments.get_str(SCHEDULE_POLICY, "")
        self.weight = arguments.get_int(SCHEDULE_WEIGHT, 0)
        try:
            self.pools = parse_pools(arguments.raw(MODEL_RESOURCES))
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        if sharing and number:
            raise ArgumentError(
                f"plugin deviceshare: {GPU_SHARING_ENABLE} and {GPU_NUMBER_ENABLE} "
                "cannot both be true (Volcano refuses it too)"
            )
        if vgpu and (sharing or number):
            raise ArgumentError(
                f"plugin deviceshare: {VGPU_ENABLE} cannot be used with gpushare "
                f"({GPU_SHARING_ENABLE}, {GPU_NUMBER_ENABLE})"
            )
        if self.policy not in ("", BINPACK, SPREAD):
            raise ArgumentError(
                f"plugin deviceshare: argument {SCHEDULE_POLICY!r} must be binpack, spread "
                f"or empty, got {self.policy!r}"
            )
        if self.weight < 0:
            raise ArgumentError(
                f"plugin deviceshare: argument {SCHEDULE_WEIGHT!r} must be at least 0, "
                f"got {self.weight}"
            )
        kinds = {"plain"}
        if vgpu:
            kinds.add("vgpu")
        if sharing:
            kinds.add("gpu-memory")
        if number:
            kinds.add("gpu-number")
        self.kinds = frozenset(kinds)

    def on_session_open(self, ssn: Session) -> None:
        self.nodes = ssn.node_list
        self.with_cards = [i for i, node in enumerate(self.nodes) if node.gpus is not None]
        """Rows of the nodes that have GPU cards (the only ones whose answers differ)."""
        self.zeros = np.zeros(len(self.nodes))
        self.zeros.setflags(write=False)
        # Batch hooks, answering [] and a shared zero row for the many tasks without a GPU:
        # placement keeps its fast path for them.
        self.epoch = 0
        """Counts placements and their undoing: what the cards' use has been through."""
        self._answers: tuple[str, int, dict[int, Fit | str]] | None = None
        self.quota = ModelQuota(ssn, self.pools) if self.pools else None
        if self.quota is not None:
            ssn.model_cards = self.quota.allocated
        ssn.add_event_handler(self.name, EventHandler(self._placed, self._removed))
        ssn.add(BATCH_PREDICATE, self.name, self._failures)
        if self.weight > 0:
            scores: BatchNodeOrderFn = _Scores(self)
            ssn.add(BATCH_NODE_ORDER, self.name, scores)
        ssn.gpu_chooser = self._choose

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""

    def _fit(self, task: TaskInfo, node: NodeInfo) -> Fit | str | None:
        request = task.gpu_request
        if request is None:
            return None
        return fit_cards(
            request,
            node.gpus,
            node.gpu_use,
            task.pod.metadata.annotations,
            self.policy,
            self.kinds,
        )

    def _placed(self, task: TaskInfo) -> None:
        if task.gpu_request is not None:
            self.epoch += 1
            if self.quota is not None:
                self.quota.add(task)

    def _removed(self, task: TaskInfo) -> None:
        if task.gpu_request is not None:
            self.epoch += 1
            if self.quota is not None:
                self.quota.remove(task)

    def _every_node(self, task: TaskInfo) -> dict[int, Fit | str]:
        """The answer of every node with cards, by row: worked out once per task while no
        GPU placement changes anything (the predicate and the score both ask)."""
        known = self._answers
        if known is not None and known[0] == task.uid and known[1] == self.epoch:
            return known[2]
        request = task.gpu_request
        assert request is not None
        fitter = CardFitter(request, task.pod.metadata.annotations, self.policy, self.kinds)
        found: dict[int, Fit | str] = {}
        nodes = self.nodes
        for i in self.with_cards:
            node = nodes[i]
            answer = fitter(node.gpus, node.gpu_use)
            if answer is not None:
                found[i] = answer
        self._answers = (task.uid, self.epoch, found)
        return found

    def _failures(self, task: TaskInfo) -> list[tuple[str, BoolArray]]:
        """Per reason, the nodes whose cards cannot take the task (fresh every call: the
        cards' use changes with every placement)."""
        request = task.gpu_request
        if request is None:
            return []
        masks: dict[str, BoolArray] = {}
        n = len(self.nodes)
        elsewhere = fit_cards(request, None, None, {}, self.policy, self.kinds)
        if isinstance(elsewhere, str):  # every node without cards fails alike
            mask = masks[elsewhere] = np.ones(n, dtype=np.bool_)
            mask[self.with_cards] = False
        answers = self._every_node(task)
        quota = self.quota
        chain = quota.bounding(task) if quota is not None else []
        for i in self.with_cards if chain else answers:
            found = answers.get(i)
            if quota is not None and chain and not isinstance(found, str):
                claim = found.claim if found is not None else None
                found = quota.refusal(task, self.nodes[i], claim, chain) or found
            if isinstance(found, str):
                if found not in masks:
                    masks[found] = np.zeros(n, dtype=np.bool_)
                masks[found][i] = True
        return list(masks.items())

    def score_rows(self, task: TaskInfo) -> FloatArray:
        """Every node's device score for the task (0 where its cards do not fit)."""
        if task.gpu_request is None:
            return self.zeros
        scores = np.zeros(len(self.nodes))
        for i, found in self._every_node(task).items():
            if isinstance(found, Fit):
                scores[i] = math.floor(found.score + 0.5) * self.weight
        return scores

    def _choose(self, task: TaskInfo, node: NodeInfo) -> GpuClaim | None:
        found = self._fit(task, node)
        return found.claim if isinstance(found, Fit) else None


class _Scores:
    """deviceshare's batch node order, readable row by row (a RowScorer): scores do not
    depend on the candidates."""

    def __init__(self, plugin: DeviceSharePlugin) -> None:
        self.plugin = plugin

    def __call__(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        return self.plugin.score_rows(task)[candidates]

    def all_rows(self, task: TaskInfo) -> FloatArray | None:
        return self.plugin.score_rows(task)
