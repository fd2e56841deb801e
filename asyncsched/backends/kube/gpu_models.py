"""GPUs each queue holds, per GPU model: what Volcano's queue metrics cannot tell.

``volcano_queue_allocated_scalar_resources`` has one series per resource name, so a
cluster whose nodes all advertise ``nvidia.com/gpu`` shows its A100s and H100s as one.
The model is the node's ``nvidia.com/gpu.product`` label (NVIDIA's GPU Feature Discovery
sets it); a node without it counts under ``unknown``.
"""

from __future__ import annotations

from asyncsched.model import ClusterSnapshot
from asyncsched.model.status import ALLOCATED

__all__ = ["MODEL_LABEL", "allocated_by_model", "is_device"]

MODEL_LABEL = "nvidia.com/gpu.product"


def is_device(resource: str) -> bool:
    """An extended resource a device plugin advertises (``nvidia.com/gpu``, ``amd.com/gpu``,
    a per-model name such as ``nvidia.com/a100``, ``volcano.sh/vgpu-number``): a name with
    a domain, not cpu, memory, storage, pods or hugepages."""
    return "/" in resource and not resource.startswith(("hugepages-", "kubernetes.io/"))


def allocated_by_model(snapshot: ClusterSnapshot) -> dict[tuple[str, str, str], int]:
    """(queue, resource, model) -> units of devices held by the queue's placed pods, the
    model being their node's. Only jobs that hold a device are looked into, so a cluster
    without any costs one check per job."""
    held: dict[tuple[str, str, str], int] = {}
    for job in snapshot.jobs.values():
        names = [name for name in job.allocated.names() if is_device(name)]
        if not names:
            continue
        for status in ALLOCATED:
            for task in job.by_status.get(status, {}).values():
                node = snapshot.nodes.get(task.node_name)
                model = (node.labels.get(MODEL_LABEL) if node else None) or "unknown"
                for name in names:
                    amount = task.resreq.get(name)
                    if amount:
                        key = (job.queue, name, model)
                        held[key] = held.get(key, 0) + amount
    return held
