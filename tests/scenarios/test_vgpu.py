"""vGPU sharing in the simulator: pods share cards within their memory and cores, the
report shows each card's use, queue quotas count vGPU resources, bad input is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asyncsched.api import Pod
from asyncsched.model.devices import ASSIGNED_IDS, VGPU_REGISTER
from tests.scenarios.harness import YAML, Run, refused, simulate, simulation

CONFIG = "vgpu-config.yaml"


def test_vgpu_pods_share_cards_and_the_report_shows_each_card(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "vgpu-sharing.yaml", config=CONFIG)
    assert run.code == 0, run.stderr
    started = {e["name"]: e["time"] for e in run.of("bound")}
    assert started == {f"infer-{i}": 0.0 for i in range(4)} | {
        "train": 0.0,
        "t4-job": 0.0,
        "two-cards": 100.0,  # both A100s free only when the sharers and train are done
    }
    assert run.placements()["t4-job"] == "t4"
    cards = {(g["node"], g["index"]): g for g in run.summary["gpus"]}
    assert (cards["a100", 0]["peak_memory"], cards["a100", 0]["most_pods"]) == (40960, 4)
    assert cards["a100", 1]["peak_cores"] == 100 and cards["a100", 1]["most_pods"] == 1
    assert cards["t4", 0]["peak_memory"] == 4096
    assert "gpus (what running pods held of each card" in run.stdout
    assert "NVIDIA-Tesla-T4" in run.stdout


def test_the_allocation_annotations_are_on_the_pods() -> None:
    sim = simulation("vgpu-sharing.yaml", until=1.0, config=YAML / CONFIG)
    pods = {p.metadata.name: p for p in sim.store.list(Pod).values()}
    shared = {pods[f"infer-{i}"].metadata.annotations[ASSIGNED_IDS] for i in range(4)}
    assert len(shared) == 1, "binpack puts the four sharers on one card"
    (ids,) = shared
    assert ids.startswith("GPU-a100-") and ids.endswith(",NVIDIA,10240,25:")
    train = pods["train"].metadata.annotations
    assert train[ASSIGNED_IDS].endswith(",NVIDIA,40960,100:")
    assert train[ASSIGNED_IDS].split(",")[0] != ids.split(",")[0], "alone on the other card"
    assert train["volcano.sh/vgpu-node"] == "a100"
    assert train["volcano.sh/devices-to-allocate"] == train[ASSIGNED_IDS]


def most_running(run: Run) -> int:
    running = most = 0
    for e in run.events:
        if e["kind"] == "Pod" and e["event"] in ("bound", "completed"):
            running += 1 if e["event"] == "bound" else -1
            most = max(most, running)
    return most


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_a_queue_capability_in_vgpu_memory_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, plugin: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text((YAML / CONFIG).read_text().replace("name: proportion", f"name: {plugin}"))
    run = simulate(capsys, tmp_path, "vgpu-queue-quota.yaml", config=config)
    assert run.code == 0, run.stderr
    assert most_running(run) == 2, "20 GiB of vGPU memory: two 10 GiB pods at a time"
    assert "3/3" in run.stdout


NODE = """apiVersion: v1
kind: Node
metadata:
  name: gpu
  annotations: {annotations}
status: {{allocatable: {{cpu: "8", memory: 32Gi}}}}
"""
POD = """---
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {annotations}
spec:
  schedulerName: volcano
  nodeName: "{node}"
  containers:
  - name: main
    resources:
      limits: {limits}
"""
GOOD_NODE = NODE.format(annotations='{simulation.asyncsched.io/gpus: "2 NVIDIA-A100 40960 4"}')


def bad_pod(limits: str, annotations: str = "{}", node: str = "") -> str:
    return GOOD_NODE + POD.format(limits=limits, annotations=annotations, node=node)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            NODE.format(annotations=f'{{{VGPU_REGISTER}: "GPU-0,4,40960,NVIDIA-A100:"}}'),
            "Node gpu: volcano.sh/node-vgpu-register entry 0 'GPU-0,4,40960,NVIDIA-A100': "
            "wants uuid,count,memory,type,health,mode",
        ),
        (
            NODE.format(annotations=f'{{{VGPU_REGISTER}: "GPU-0,four,1,NVIDIA,true,x:"}}'),
            "count 'four' is not a whole number",
        ),
        (
            NODE.format(annotations='{simulation.asyncsched.io/gpus: "two A100"}'),
            "Node gpu: simulation.asyncsched.io/gpus 'two A100': want '<count> <model>",
        ),
        (
            bad_pod('{volcano.sh/vgpu-number: "1", volcano.sh/vgpu-cores: "150"}'),
            "Pod default/p: spec: container main: volcano.sh/vgpu-cores 150 is more than the "
            "100 of a card",
        ),
        (
            bad_pod('{volcano.sh/vgpu-number: "0", volcano.sh/vgpu-memory: "1024"}'),
            "Pod default/p: spec: container main: volcano.sh/vgpu-number is 0 but it asks",
        ),
        (
            bad_pod(
                '{volcano.sh/vgpu-number: "1"}', '{volcano.sh/vgpu-use-gpuuuid: "GPU-nowhere"}'
            ),
            "Pod default/p: volcano.sh/vgpu-use-gpuuuid names GPU-nowhere, which no node has",
        ),
        (
            bad_pod(
                '{volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "1024"}',
                f'{{{ASSIGNED_IDS}: "GPU-gone,NVIDIA,1024,0:"}}',
                node="gpu",
            ),
            "Pod default/p: volcano.sh/vgpu-ids-new names GPU-gone, not a card of gpu",
        ),
    ],
    ids=[
        "register-short-entry",
        "register-bad-count",
        "bad-shorthand",
        "cores-over-100",
        "memory-without-cards",
        "uuid-nowhere",
        "bound-to-missing-card",
    ],
)
def test_bad_device_input_is_refused_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, None, content)
    assert str(bad) in err and expected in err, err


def test_device_requests_in_job_templates_are_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    job: dict[str, Any] = {
        "name": "w",
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "resources": {"limits": {"volcano.sh/vgpu-cores": "20"}},
                    }
                ]
            }
        },
    }
    import json

    content = GOOD_NODE + (
        "---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
        f"spec:\n  tasks: [{json.dumps(job)}]\n"
    )
    _, err = refused(capsys, tmp_path, None, content)
    assert "Job default/j: spec.tasks[0].template.spec: container c:" in err, err
    assert "without volcano.sh/vgpu-number" in err
