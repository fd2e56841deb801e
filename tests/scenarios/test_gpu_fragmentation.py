"""GPU fragmentation in the simulate summary: the idle GPU the typical GPU pods (those
seen so far) could not use, as a share of the idle GPU, and GPU allocation.

Four 8-GPU nodes; four 1-GPU pods come first, two 8-GPU pods ten seconds later. Spread
over the nodes (the default node order), the small pods leave 7 GPUs on each node and
no 8-GPU pod fits: a third of the typical pods (the 8-GPU ones) can use none of the 28
idle GPUs. Packed (gpufrag) onto one node, both large pods run and only the 4 GPUs left
beside the small pods are out of the large pods' reach: 1/3 x 4 of 12 idle.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncsched.backends.bundled import DEFAULT_CONFIGURATION_FILE
from tests.scenarios.harness import Run, simulate

NODE = """---
apiVersion: v1
kind: Node
metadata: {{name: gpu-{i}}}
status: {{allocatable: {{cpu: "32", memory: 256Gi, nvidia.com/gpu: "8", pods: "110"}}}}
"""
POD = """---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations:
    simulation.asyncsched.io/submit-at: "{at}"
    simulation.asyncsched.io/duration: "1000"
spec:
  schedulerName: volcano
  containers:
  - name: main
    resources: {{requests: {{cpu: "{cpu}", nvidia.com/gpu: "{gpus}"}}}}
"""


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, packed: bool) -> Run:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "".join(NODE.format(i=i) for i in range(4))
        + "".join(POD.format(name=f"small-{i}", at=0, cpu=2, gpus=1) for i in range(4))
        + "".join(POD.format(name=f"large-{i}", at=10, cpu=8, gpus=8) for i in range(2))
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        DEFAULT_CONFIGURATION_FILE.read_text() + ("  - name: gpufrag\n" if packed else "")
    )
    found = simulate(capsys, tmp_path, cluster, config=config, extra=["--until", "500"])
    assert found.code == 0, found.stderr
    return found


def test_spreading_small_gpu_pods_shows_as_fragmentation_and_packing_does_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spread = run(capsys, tmp_path, packed=False)
    packed = run(capsys, tmp_path, packed=True)

    assert len(set(spread.placements().values())) == 4, "the default node order spreads"
    assert "large-0" not in spread.placements()
    assert set(packed.placements()) == {*(f"small-{i}" for i in range(4)), "large-0", "large-1"}
    frag, alloc = spread.summary["gpu_fragmentation"], packed.summary["gpu_fragmentation"]
    assert frag["fragmentation"] == pytest.approx(1 / 3)  # 28 idle GPUs, none for 8-GPU pods
    assert alloc["fragmentation"] == pytest.approx(4 / 3 / 12)
    assert (frag["allocation"], alloc["allocation"]) == (4 / 32, 20 / 32)
    assert frag["idle_gpus"] == 28 and alloc["idle_gpus"] == 12
    assert frag["typical_shapes"] == alloc["typical_shapes"] == 2
    # Since t=0: the first 10 s saw only 1-GPU pods, for which no idle GPU is lost.
    assert frag["mean_fragmentation"] == pytest.approx(1 / 3 * 490 / 500)
    assert (
        "gpu fragmentation (share of the idle GPU the typical GPU pods could not use): "
        "33.3% at the end (28 GPUs idle), 32.7% on average since the first GPU pod"
    ) in spread.stdout
    assert "11.1% at the end (12 GPUs idle)" in packed.stdout
    assert "gpu allocation (share of the cards held by running pods): 62.5% at the end" in (
        packed.stdout
    )


def test_a_cluster_without_gpus_has_no_fragmentation_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    found = simulate(capsys, tmp_path, "binpack.yaml")
    assert found.code == 0, found.stderr
    assert found.summary["gpu_fragmentation"] is None
    assert "gpu fragmentation" not in found.stdout and "gpu allocation" not in found.stdout
