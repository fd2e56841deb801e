"""Devices each queue holds, per GPU model of the nodes its pods run on: the split that
Volcano's per-resource queue metrics cannot show."""

from __future__ import annotations

from asyncsched.backends.kube.gpu_models import MODEL_LABEL, allocated_by_model, is_device
from asyncsched.backends.kube.metrics import Metrics
from asyncsched.model import ClusterSnapshot
from tests.builders import node, pod, podgroup, queue, snapshot


def cluster() -> ClusterSnapshot:
    return snapshot(
        node("a100-0", gpu=8, labels={MODEL_LABEL: "NVIDIA-A100"}),
        node("h100-0", gpu=8, labels={MODEL_LABEL: "NVIDIA-H100"}),
        node("plain", gpu=8),
        queue("ml"),
        podgroup("train", 3, queue="ml"),
        pod("train-0", gpu=4, group="train", node_name="a100-0", phase="Running"),
        pod("train-1", gpu=2, group="train", node_name="h100-0", phase="Running"),
        pod("train-2", gpu=1, group="train", node_name="plain", phase="Running"),
        podgroup("waiting", 1, queue="ml"),
        pod("waiting-0", gpu=8, group="waiting"),
        pod("cpu-only", node_name="plain", phase="Running"),
    )


def test_placed_gpus_are_summed_per_queue_and_node_model() -> None:
    held = allocated_by_model(cluster())
    assert held == {
        ("ml", "nvidia.com/gpu", "NVIDIA-A100"): 4,
        ("ml", "nvidia.com/gpu", "NVIDIA-H100"): 2,
        ("ml", "nvidia.com/gpu", "unknown"): 1,
    }, "a pending pod holds nothing; cpu and memory are not devices"


def test_devices_are_extended_resources() -> None:
    assert is_device("nvidia.com/gpu") and is_device("nvidia.com/a100")
    assert is_device("volcano.sh/vgpu-number")
    assert not any(map(is_device, ("cpu", "memory", "pods", "ephemeral-storage")))
    assert not is_device("hugepages-2Mi")


def test_the_gauge_follows_the_snapshots_at_most_every_few_seconds() -> None:
    metrics = Metrics()
    metrics.observe_devices(cluster(), now=100.0)
    text = metrics.exposition().decode()
    series = (
        'asyncsched_queue_allocated_devices{model="NVIDIA-A100",queue_name="ml",'
        'resource="nvidia.com/gpu"} 4.0'
    )
    assert series in text
    empty = snapshot(node("n1"))
    metrics.observe_devices(empty, now=101.0)
    assert series in metrics.exposition().decode(), "not again within five seconds"
    metrics.observe_devices(empty, now=106.0)
    assert "asyncsched_queue_allocated_devices{" not in metrics.exposition().decode()
