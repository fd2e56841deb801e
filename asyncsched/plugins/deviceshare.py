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
"""

from __future__ import annotations

import math
from typing import ClassVar

from asyncsched.framework import ArgumentError, Arguments, Session
from asyncsched.framework.hooks import NODE_ORDER, PREDICATE
from asyncsched.model import NodeInfo, TaskInfo
from asyncsched.model.devices import GpuClaim
from asyncsched.plugins._cards import BINPACK, SPREAD, Fit, fit_cards

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
        ssn.add(PREDICATE, self.name, self._predicate)
        if self.weight > 0:
            ssn.add(NODE_ORDER, self.name, self._score)
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

    def _predicate(self, task: TaskInfo, node: NodeInfo) -> str | None:
        found = self._fit(task, node)
        return found if isinstance(found, str) else None

    def _score(self, task: TaskInfo, node: NodeInfo) -> float:
        found = self._fit(task, node)
        if not isinstance(found, Fit):
            return 0.0
        return float(math.floor(found.score + 0.5) * self.weight)

    def _choose(self, task: TaskInfo, node: NodeInfo) -> GpuClaim | None:
        found = self._fit(task, node)
        return found.claim if isinstance(found, Fit) else None
