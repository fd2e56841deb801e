"""GPU cards in the simulator's input: a Node's shorthand for them, and checks of what
nodes and pods say about cards before the run starts.

A Node declares vGPU cards with HAMi's own annotation, ``volcano.sh/node-vgpu-register``,
or with the shorthand ``simulation.asyncsched.io/gpus: "<count> <model> <memoryMiB>
[<shares>]"`` (groups separated by ``;``, e.g. ``"4 NVIDIA-A100 40960 4"``), which
becomes that annotation, with cards ``GPU-<node>-<i>``. Either way the node also gets
the allocatable totals HAMi's device plugin advertises (``volcano.sh/vgpu-number``,
``-memory``, ``-cores``, and ``-memory-percentage`` for pods asking a share of memory)
unless it lists them itself.

Refused with one line naming the object: a malformed register annotation or
shorthand, a pod request no card can meet (more than 100 cores, vGPU memory with
``vgpu-number`` 0), and a device annotation naming a card no node has.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from asyncsched.api import Job, Node, Pod
from asyncsched.backends.sim.fields import ManifestError, template_annotations
from asyncsched.backends.sim.objects import Manifest, SimObject
from asyncsched.backends.sim.quantities import pod_specs
from asyncsched.model.devices import (
    ASSIGNED_IDS,
    GPU_INDEX,
    VGPU_REGISTER,
    device_allocatable,
    encode_register,
    node_gpus,
)
from asyncsched.model.gpu_claims import pod_gpu_claim, pod_gpu_request
from asyncsched.model.task import pod_requests

__all__ = ["GPUS_ANNOTATION", "check_device_references", "check_pod_gpus", "with_gpus"]

GPUS_ANNOTATION = "simulation.asyncsched.io/gpus"
DEFAULT_SHARES = 10
"""HAMi's default deviceSplitCount: pods per card."""
_USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
_NO_USE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"


def with_gpus(obj: SimObject, where: str) -> SimObject:
    """A Node with its shorthand turned into the register annotation, its register checked,
    and the vGPU totals added to its allocatable; any other object as it is."""
    if not isinstance(obj, Node):
        return obj
    notes = obj.metadata.annotations
    shorthand = notes.get(GPUS_ANNOTATION)
    if shorthand is not None:
        if VGPU_REGISTER in notes:
            raise ManifestError(f"{where}: give {GPUS_ANNOTATION} or {VGPU_REGISTER}, not both")
        register = encode_register(_shorthand(shorthand, obj.metadata.name, where))
        meta = msgspec.structs.replace(obj.metadata, annotations={**notes, VGPU_REGISTER: register})
        obj = msgspec.structs.replace(obj, metadata=meta)
    elif VGPU_REGISTER not in notes:
        return obj
    gpus = node_gpus(obj)
    assert gpus is not None  # the register annotation is there
    if gpus.problems:
        raise ManifestError(f"{where}: {gpus.problems[0]}")
    if not gpus.cards:
        raise ManifestError(f"{where}: {VGPU_REGISTER} lists no card")
    status = obj.status
    listed = status.allocatable or status.capacity
    extra = {k: str(v) for k, v in device_allocatable(gpus).items() if k not in listed}
    if not extra:
        return obj
    status = msgspec.structs.replace(
        status,
        allocatable={**listed, **extra},
        capacity={**(status.capacity or listed), **extra},
    )
    return msgspec.structs.replace(obj, status=status)


def _shorthand(text: str, node: str, where: str) -> list[tuple[str, int, int, str]]:
    cards: list[tuple[str, int, int, str]] = []
    for group in text.split(";"):
        parts = group.split()
        if not parts:
            continue
        numbers = [parts[0], *parts[2:]]
        if len(parts) not in (3, 4) or not all(p.isdigit() for p in numbers):
            raise ManifestError(
                f"{where}: {GPUS_ANNOTATION} {group.strip()!r}: want '<count> <model> "
                "<memoryMiB> [<shares>]', e.g. '4 NVIDIA-A100 40960 4'"
            )
        count, model, memory = int(parts[0]), parts[1], int(parts[2])
        shares = int(parts[3]) if len(parts) == 4 else DEFAULT_SHARES
        if not count or not memory or not shares:
            raise ManifestError(f"{where}: {GPUS_ANNOTATION} {group.strip()!r}: a zero")
        if "NVIDIA" not in model:
            model = f"NVIDIA-{model}"
        start = len(cards)
        cards += [(f"GPU-{node}-{start + i}", shares, memory, model) for i in range(count)]
    if not cards:
        raise ManifestError(f"{where}: {GPUS_ANNOTATION} is empty")
    if len(cards) > 1024:
        raise ManifestError(f"{where}: {GPUS_ANNOTATION}: more than 1024 cards")
    return cards


def check_pod_gpus(obj: SimObject, where: str) -> None:
    """A pod (or a Job's or Deployment's pod template) whose GPU request no card can meet."""
    for at, spec in pod_specs(obj):
        pod = Pod(spec=spec)
        request = pod_gpu_request(pod, pod_requests(pod)[0].names())
        if request is not None and request.error:
            raise ManifestError(f"{where}: {at}: {request.error}")


def check_device_references(manifests: Sequence[Manifest]) -> list[str]:
    """Every card a pod's annotations name exists: on some node for the UUID filters, on
    the pod's own node for a pod the input gives already bound. A live pod naming cards
    its node has lost is read as the scheduler reads it (a share of no card books
    nothing; a filter naming no card matches none): the notes say so."""
    cards: dict[str, set[str]] = {}
    indices: dict[str, int] = {}
    for m in manifests:
        if isinstance(m.obj, Node):
            gpus = node_gpus(m.obj)
            if gpus is not None:
                cards[m.obj.metadata.name] = {c.uuid for c in gpus.cards if c.uuid}
                indices[m.obj.metadata.name] = len(gpus.cards)
    every = set().union(*cards.values()) if cards else set()
    found = []
    for m in manifests:
        problems = []
        for notes in _annotations(m.obj):
            for key in (_USE_UUID, _NO_USE_UUID):
                named = {u.strip() for u in notes.get(key, "").split(",") if u.strip()}
                missing = sorted(named - every)
                if missing:
                    problems.append(f"{key} names {', '.join(missing)}, which no node has")
        if problems and m.live:  # it names no card: it matches none
            found.append(f"{m.source}: {problems[0]}: the scheduler finds no such card")
            continue
        if isinstance(m.obj, Pod) and m.obj.spec.node_name:
            problems += _bound_problems(m.obj, cards, indices)
        if problems and not m.live:
            raise ManifestError(f"{m.source}: {problems[0]}")
        if problems:
            found.append(
                f"{m.source}: {'; '.join(problems)}: the scheduler books nothing on such a "
                "card (the pod's requests still count on its node)"
            )
    return found


def _annotations(obj: SimObject) -> list[dict[str, str]]:
    if isinstance(obj, Pod):
        return [obj.metadata.annotations]
    if isinstance(obj, Job):
        return [template_annotations(task.template) for task in obj.spec.tasks]
    return []


def _bound_problems(pod: Pod, cards: dict[str, set[str]], indices: dict[str, int]) -> list[str]:
    node = pod.spec.node_name
    problems = []
    request = pod_gpu_request(pod, pod_requests(pod)[0].names())
    claim = pod_gpu_claim(pod, request)
    notes = pod.metadata.annotations
    if request is not None and request.vgpu and ASSIGNED_IDS in notes:
        named = {s.uuid for s in claim.shares} if claim is not None else set()
        missing = sorted(named - cards.get(node, set()))
        if missing or claim is None or not claim.shares:
            what = ", ".join(missing) or repr(notes[ASSIGNED_IDS])
            problems.append(f"{ASSIGNED_IDS} names {what}, not a card of {node}")
    if request is not None and GPU_INDEX in notes:
        have = indices.get(node, 0)
        if claim is None or any(s.index >= have for s in claim.shares):
            problems.append(
                f"{GPU_INDEX} {notes[GPU_INDEX]!r} names a card {node} does not have ({have} cards)"
            )
    return problems
