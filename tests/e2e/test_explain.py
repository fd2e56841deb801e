"""`asyncsched explain` against the real control plane, beside the running scheduler.

The scheduler process writes its FailedScheduling Event and PodGroup condition; explain,
reading the cluster (and the scheduler's ConfigMap) through the API with the admin
kubeconfig, must give the same text and say node by node why the pod fits nowhere.
"""

from __future__ import annotations

import json

from tests.e2e.kubeops import wait_for
from tests.e2e.scheduler_proc import CONFIG_MAP
from tests.e2e.test_cli import cli
from tests.e2e.test_scheduler import Bed, bed  # noqa: F401  (the fixture)


async def test_explain_says_why_a_pending_pod_waits_in_the_schedulers_words(
    bed: Bed,  # noqa: F811
) -> None:
    scheduler = bed.scheduler()
    try:
        await bed.submit(bed.podgroup("huge", 1), bed.pod("huge-0", group="huge", gpu=16))

        async def reported() -> bool:  # the Event and the PodGroup status go concurrently
            conditions = (await bed.podgroup_status("huge")).get("conditions", [])
            return any(
                e["reason"] == "FailedScheduling" for e in await bed.events_for("huge-0")
            ) and any(c["type"] == "Unschedulable" for c in conditions)

        await wait_for(reported, 30, "a FailedScheduling event and the PodGroup condition")
        event = next(e for e in await bed.events_for("huge-0") if e["reason"] == "FailedScheduling")
        condition = next(
            c
            for c in (await bed.podgroup_status("huge"))["conditions"]
            if c["type"] == "Unschedulable"
        )

        ns = bed.kube.namespace
        result = await cli(
            bed.kube, "explain", "huge-0", "-n", ns, "--config-map", CONFIG_MAP, "-o", "json"
        )
        assert result.code == 0, result.err
        found = json.loads(result.out)
    finally:
        scheduler.terminate()

    assert found["kind"] == "Pod" and found["target"] == f"{ns}/huge-0"
    assert found["verdict"] == event["message"] == found["recorded"]["event"]
    assert found["gang"]["condition"]["message"] == condition["message"]
    assert found["gang"]["job"] == f"{ns}/huge"
    assert (found["gang"]["min_member"], found["gang"]["waiting"]) == (1, 1)
    assert found["queue"]["name"] == "default"
    nodes = {n["node"]: n for n in found["nodes"]}
    for name in bed.nodes:  # the test's own nodes: 8 GPUs each, 16 asked
        assert (nodes[name]["refused_by"], nodes[name]["reason"]) == (
            "resources",
            "Insufficient nvidia.com/gpu",
        )
    others = [n for name, n in nodes.items() if name not in bed.nodes]
    assert others and all("affinity/selector" in n["reason"] for n in others), others

    text = await cli(bed.kube, "explain", "huge-0", "-n", ns)
    assert text.code == 0, text.err
    assert text.out.startswith(f"Pod {ns}/huge-0: {event['message']}\n")
    assert f"{bed.nodes[0]}" in text.out and "resources: Insufficient nvidia.com/gpu" in text.out

    no_map = await cli(bed.kube, "explain", "huge-0", "-n", ns, "--config-map", f"{ns}/none")
    assert (no_map.code, no_map.err) == (1, f"asyncsched: error: ConfigMap {ns}/none not found\n")

    missing = await cli(bed.kube, "explain", "nobody", "-n", ns)
    assert (missing.code, missing.out) == (1, "")
    assert missing.err == (
        f"asyncsched: error: no pod, PodGroup or Volcano Job 'nobody' in namespace '{ns}'\n"
    )
