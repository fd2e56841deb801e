"""Queue quotas in cards of each model: a queue's capability in a model pool's resource bounds
the cards of that model its pods get, whether they ask for the pool's resource, plain
nvidia.com/gpu or vGPU shares; the queue metrics report the cards held per model."""

from __future__ import annotations

import logging

import pytest

from asyncsched.api import Node, Pod, PodGroup, Queue
from asyncsched.cache import ClusterCache
from asyncsched.framework import ConfigError, Registry, run_session
from asyncsched.framework.cycle import load_configuration
from asyncsched.framework.results import SessionResult
from asyncsched.model.gpu_pools import parse_pools
from tests.builders import cache_of, node, pod, podgroup, queue, vgpu_node, vgpu_pod

PRODUCT = "nvidia.com/gpu.product"
A100 = "nvidia.com/a100"


def conf(pools: str = "[nvidia.com/a100, nvidia.com/h100]", vgpu: bool = False) -> str:
    return (
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
        "  - name: predicates\n  - name: capacity\n  - name: deviceshare\n    arguments:\n"
        f"      deviceshare.VGPUEnable: {str(vgpu).lower()}\n"
        f"      deviceshare.ModelResources: {pools}\n"
    )


def session(cache: ClusterCache, text: str) -> SessionResult:
    loaded = load_configuration(text, Registry())
    cache.set_gpu_pools(loaded.gpu_pools)
    result, _ = run_session(cache.snapshot(), loaded)
    for bind in result.binds:
        assert cache.mark_binding(bind.uid, bind.node, bind.gpu_claim)
    return result


def gpu_node(name: str, model: str, gpus: int = 4) -> Node:
    return node(name, "64", "256Gi", gpu=gpus, labels={PRODUCT: model})


def team(name: str, jobs: int, gpus: int = 1, **capability: str) -> list[Queue | PodGroup | Pod]:
    made: list[Queue | PodGroup | Pod] = [
        queue(name, capability={A100: capability.get("a100", "0")})
    ]
    for i in range(jobs):
        made.append(podgroup(f"{name}-{i}", queue=name, phase="Pending"))
        made.append(pod(f"{name}-{i}", gpu=gpus, group=f"{name}-{i}"))
    return made


def placed(result: SessionResult) -> dict[str, str]:
    return {bind.name: bind.node for bind in result.binds}


def test_generic_gpu_pods_get_no_more_cards_of_a_model_than_their_queue_may_hold() -> None:
    cache = cache_of(
        gpu_node("a100", "NVIDIA-A100-SXM4-80GB"),
        gpu_node("t4", "Tesla-T4"),
        *team("team-b", 7, a100="2"),
    )
    result = session(cache, conf())
    nodes = list(placed(result).values())
    assert nodes.count("a100") == 2, "capability 2 A100: the rest go to the T4 node"
    assert nodes.count("t4") == 4
    (waiting,) = {n.message for n in result.unschedulable}
    assert "queue team-b would be over its capability of 2 nvidia.com/a100 cards" in waiting


def test_the_pool_resource_and_generic_requests_share_the_one_capability() -> None:
    cache = cache_of(
        gpu_node("a100", "NVIDIA-A100-SXM4-80GB"),
        *team("team-b", 1, gpus=2, a100="3"),
    )
    assert len(session(cache, conf()).binds) == 1  # 2 generic cards on the A100 node
    cache.upsert_node(gpu_node("a100-pool", "NVIDIA-A100-SXM4-80GB", gpus=0))
    pooled = node("pool", "64", "256Gi")
    pooled.status.allocatable[A100] = 4
    cache.upsert_node(pooled)
    cache.upsert_podgroup(podgroup("named", queue="team-b", phase="Pending"))
    asks = pod("named", group="named")
    asks.spec.containers[0].resources.limits[A100] = 2
    cache.upsert_pod(asks)
    result = session(cache, conf())
    assert result.binds == [], "2 held + 2 asked by name is over the capability of 3"


def test_vgpu_shares_count_one_card_each_in_their_cards_model() -> None:
    cards = [("A-0", 4, 40960, "NVIDIA-A100"), ("A-1", 4, 40960, "NVIDIA-A100")]
    cache = cache_of(
        vgpu_node("v", cards),
        queue("team-b", capability={A100: "1"}),
        *(podgroup(f"s{i}", queue="team-b", phase="Pending") for i in range(3)),
        *(vgpu_pod(f"s{i}", 1, 1024, 10, group=f"s{i}") for i in range(3)),
    )
    result = session(cache, conf(vgpu=True))
    assert len(result.binds) == 1, "each share takes one A100 of a capability of 1"


def test_capacity_reports_the_cards_held_per_model_as_the_queue_allocated_amount() -> None:
    cache = cache_of(
        gpu_node("a100", "NVIDIA-A100-SXM4-80GB"),
        *team("team-b", 3, a100="4"),
    )
    session(cache, conf())
    result = session(cache, conf())  # the next session sees them placed
    gauges = {
        (g.name, dict(g.labels).get("queue_name"), dict(g.labels).get("resource")): g.value
        for g in result.plugin_gauges
    }
    allocated = "volcano_queue_allocated_scalar_resources"
    assert gauges[allocated, "team-b", A100] == 3000.0, "3 A100 cards, in milli-units"
    assert gauges[allocated, "team-b", "nvidia.com/gpu"] == 3000.0


def test_a_deserved_amount_generic_cards_do_not_count_toward_is_announced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = cache_of(
        gpu_node("a100", "NVIDIA-A100-SXM4-80GB"),
        queue("team-w", deserved={A100: "2"}, capability={A100: "4"}),
    )
    with caplog.at_level(logging.WARNING):
        session(cache, conf())
    (line,) = [r.getMessage() for r in caplog.records if "team-w" in r.getMessage()]
    assert "spec.deserved nvidia.com/a100 counts only pods asking for nvidia.com/a100" in line
    assert "not enforced" in line


def test_a_bad_model_resource_is_one_line_naming_the_configuration_and_key() -> None:
    with pytest.raises(ConfigError) as caught:
        load_configuration(conf("[nvidia.com/A 100]"), Registry(), "sched.yaml")
    message = str(caught.value)
    assert message.startswith("sched.yaml: plugin deviceshare: argument ")
    assert "'deviceshare.ModelResources'" in message and "'nvidia.com/A 100'" in message
    assert "\n" not in message


def test_new_pools_in_a_reloaded_configuration_read_cards_and_pods_again() -> None:
    pooled = node("pool", "64", "256Gi")
    pooled.status.allocatable[A100] = 2
    asks = pod("p", node_name="pool", phase="Running")
    asks.spec.containers[0].resources.limits[A100] = 1
    cache = cache_of(pooled, asks)
    assert cache.nodes["pool"].gpus is None
    cache.set_gpu_pools(parse_pools([A100]))
    use = cache.nodes["pool"].gpu_use
    assert use is not None and use.sharers == [1, 0], "the running pod holds one card"
    assert cache.snapshot().nodes["pool"].gpu_use == use
