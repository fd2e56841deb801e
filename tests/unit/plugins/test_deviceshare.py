"""deviceshare: vGPU and gpushare pods placed on cards as Volcano places them, never beyond
a card, with the annotations the device plugin reads carried by the bind."""

from __future__ import annotations

import pytest

from asyncsched.api import Node, Pod
from asyncsched.api.core import NodeStatus
from asyncsched.cache import ClusterCache
from asyncsched.framework import ConfigError, Registry, run_session
from asyncsched.framework.cycle import load_configuration
from asyncsched.framework.results import SessionResult
from asyncsched.model.devices import ASSIGNED_IDS, GPU_INDEX, VGPU_REGISTER
from tests.builders import cache_of, node, pod, vgpu_node, vgpu_pod

A100 = ("NVIDIA-A100", 40960)


def conf(**args: object) -> str:
    arguments = {"deviceshare.VGPUEnable": True, **args}
    lines = "".join(f"      {k}: {v!r}\n" for k, v in arguments.items())
    return (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
        f"  - name: deviceshare\n    arguments:\n{lines}"
    )


def cards(prefix: str, n: int, model: str = "NVIDIA-A100", memory: int = 40960, shares: int = 4):
    return [(f"{prefix}-{i}", shares, memory, model) for i in range(n)]


def session(cache: ClusterCache, text: str | None = None) -> SessionResult:
    """One session; its binds are carried into the cache as a backend would."""
    loaded = load_configuration(text or conf(), Registry())
    result, _ = run_session(cache.snapshot(), loaded)
    for bind in result.binds:
        assert cache.mark_binding(bind.uid, bind.node, bind.gpu_claim)
    return result


def ids(result: SessionResult) -> dict[str, str]:
    return {b.name: dict(b.annotations).get(ASSIGNED_IDS, "") for b in result.binds}


def reasons(result: SessionResult) -> dict[str, str]:
    return {n.name: n.message for n in result.unschedulable}


def test_vgpu_pods_share_a_card_within_its_memory_and_cores() -> None:
    # Two 40 GiB cards: the node's total (80 GiB) takes five 16 GiB pods, each card two.
    cache = cache_of(
        vgpu_node("n", cards("GPU", 2)),
        *(vgpu_pod(f"p{i}", 1, 16384, 30) for i in range(5)),
    )
    result = session(cache)
    assert (
        sorted(ids(result).values())
        == ["GPU-0,NVIDIA,16384,30:"] * 2 + ["GPU-1,NVIDIA,16384,30:"] * 2
    )
    (waiting,) = reasons(result).values()
    assert "not enough room on the GPUs" in waiting
    use = cache.nodes["n"].gpu_use
    assert use is not None
    assert (use.memory, use.cores, use.sharers) == ([32768, 32768], [60, 60], [2, 2])


def test_the_bind_carries_volcanos_allocation_annotations() -> None:
    cache = cache_of(vgpu_node("n", cards("GPU", 2)), vgpu_pod("p", 2, 1024, 10))
    (bind,) = session(cache).binds
    notes = dict(bind.annotations)
    assert notes[ASSIGNED_IDS] == "GPU-1,NVIDIA,1024,10:GPU-0,NVIDIA,1024,10:"
    assert notes["volcano.sh/devices-to-allocate"] == notes[ASSIGNED_IDS]
    assert notes["volcano.sh/vgpu-node"] == "n"
    assert notes["volcano.sh/bind-phase"] == "allocating"


def test_a_whole_card_pod_never_goes_on_a_shared_card() -> None:
    shared = vgpu_pod(
        "shared",
        1,
        1024,
        10,
        node_name="n",
        phase="Running",
        annotations={ASSIGNED_IDS: "GPU-0,NVIDIA,1024,10:"},
    )
    cache = cache_of(vgpu_node("n", cards("GPU", 2)), shared, vgpu_pod("whole", 1, cores=100))
    assert ids(session(cache)) == {"whole": "GPU-1,NVIDIA,40960,100:"}
    cache = cache_of(vgpu_node("n", cards("GPU", 1)), shared, vgpu_pod("whole", 1, cores=100))
    result = session(cache)
    assert not result.binds and "whole" in reasons(result)
    # and nobody joins a card held whole
    held = vgpu_pod(
        "held",
        1,
        cores=100,
        node_name="n",
        phase="Running",
        annotations={ASSIGNED_IDS: "GPU-0,NVIDIA,40960,100:"},
    )
    cache = cache_of(vgpu_node("n", cards("GPU", 1)), held, vgpu_pod("small", 1, 512, 5))
    assert not session(cache).binds


def test_binpack_fills_a_card_and_spread_uses_the_idle_one() -> None:
    def placed(policy: str) -> dict[str, str]:
        cache = cache_of(vgpu_node("n", cards("GPU", 2)), vgpu_pod("a", 1, 4096, 10))
        session(cache, conf(**{"deviceshare.SchedulePolicy": policy}))
        cache.upsert_pod(vgpu_pod("b", 1, 4096, 10))
        return ids(session(cache, conf(**{"deviceshare.SchedulePolicy": policy})))

    assert placed("binpack") == {"b": "GPU-0,NVIDIA,4096,10:"}
    assert placed("spread") == {"b": "GPU-1,NVIDIA,4096,10:"}


def test_binpack_weight_prefers_the_node_whose_card_is_fuller() -> None:
    busy = vgpu_pod(
        "busy",
        1,
        20480,
        10,
        node_name="busy",
        phase="Running",
        annotations={ASSIGNED_IDS: "B-0,NVIDIA,20480,10:"},
    )
    cache = cache_of(
        vgpu_node("idle", cards("I", 1)),
        vgpu_node("busy", cards("B", 1)),
        busy,
        vgpu_pod("p", 1, 4096, 10),
    )
    text = conf(**{"deviceshare.SchedulePolicy": "binpack", "deviceshare.ScheduleWeight": 10})
    (bind,) = session(cache, text).binds
    assert bind.node == "busy"


def test_model_and_uuid_filters() -> None:
    nodes = [vgpu_node("a100", cards("A", 1)), vgpu_node("t4", cards("T", 1, "NVIDIA-Tesla-T4"))]
    want_t4 = vgpu_pod("p", 1, 1024, annotations={"nvidia.com/use-gputype": "t4"})
    (bind,) = session(cache_of(*nodes, want_t4)).binds
    assert bind.node == "t4"
    no_t4 = vgpu_pod("p", 1, 1024, annotations={"nvidia.com/nouse-gputype": "T4,V100"})
    (bind,) = session(cache_of(*nodes, no_t4)).binds
    assert bind.node == "a100"
    by_uuid = vgpu_pod("p", 1, 1024, annotations={"volcano.sh/vgpu-use-gpuuuid": "T-0"})
    (bind,) = session(cache_of(*nodes, by_uuid)).binds
    assert bind.node == "t4"
    not_uuid = vgpu_pod("p", 1, 1024, annotations={"volcano.sh/vgpu-nouse-gpuuuid": "T-0"})
    (bind,) = session(cache_of(*nodes, not_uuid)).binds
    assert bind.node == "a100"
    missing = vgpu_pod("p", 1, 1024, annotations={"volcano.sh/vgpu-use-gpuuuid": "GPU-gone"})
    result = session(cache_of(*nodes, missing))
    assert not result.binds and "GPU-gone" in reasons(result)["p"]


def test_completion_frees_the_card_for_the_pod_waiting() -> None:
    cache = cache_of(
        vgpu_node("n", cards("GPU", 1)), vgpu_pod("a", 1, 30000, 60), vgpu_pod("b", 1, 30000, 60)
    )
    first = session(cache)
    assert [b.name for b in first.binds] == ["a"] or [b.name for b in first.binds] == ["b"]
    done = first.binds[0].name
    cache.delete_pod("default", done)
    (second,) = session(cache).binds
    assert second.name != done


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (vgpu_pod("p", 1, 1024, 150), "vgpu-cores 150 is more than the 100 of a card"),
        (vgpu_pod("p", 0, 1024), "vgpu-number is 0"),
    ],
    ids=["cores-over-100", "memory-without-cards"],
)
def test_a_request_no_card_can_meet_is_unschedulable_with_the_reason(
    made: Pod, expected: str
) -> None:
    result = session(cache_of(vgpu_node("n", cards("GPU", 2)), made))
    assert not result.binds and expected in reasons(result)["p"]


def test_a_malformed_register_entry_leaves_the_other_cards_usable() -> None:
    broken = vgpu_node("n", cards("GPU", 1))
    broken.metadata.annotations[VGPU_REGISTER] += "GPU-bad,x,1,NVIDIA,true,hami-core:"
    result = session(cache_of(broken, vgpu_pod("a", 1, 1024), vgpu_pod("b", 1, 1024)))
    assert ids(result) == {"a": "GPU-0,NVIDIA,1024,0:", "b": "GPU-0,NVIDIA,1024,0:"}
    only_broken = vgpu_node("m", cards("GPU", 1))
    only_broken.metadata.annotations[VGPU_REGISTER] = "GPU-bad,x,1,NVIDIA,true,hami-core:"
    result = session(cache_of(only_broken, vgpu_pod("a", 1, 1024)))
    # No card left: the reason names the bad entry.
    assert "count 'x' is not a whole number" in reasons(result)["a"]


def gpushare_node(name: str, cards_: int, memory: int) -> Node:
    made = node(name)
    counts = {"volcano.sh/gpu-memory": cards_ * memory, "volcano.sh/gpu-number": cards_}
    status = NodeStatus(allocatable={**made.status.allocatable, **counts}, capacity=counts)
    return Node(metadata=made.metadata, spec=made.spec, status=status)


def share_pod(name: str, memory: int = 0, number: int = 0, **kwargs: object) -> Pod:
    made = pod(name, **kwargs)  # type: ignore[arg-type]
    limits = made.spec.containers[0].resources.limits
    if memory:
        limits["volcano.sh/gpu-memory"] = memory
    if number:
        limits["volcano.sh/gpu-number"] = number
    return made


def test_gpushare_memory_pods_get_a_gpu_index_and_fill_cards_in_order() -> None:
    cache = cache_of(gpushare_node("n", 2, 16384), *(share_pod(f"p{i}", 10000) for i in range(3)))
    result = session(
        cache, conf(**{"deviceshare.VGPUEnable": False, "deviceshare.GPUSharingEnable": True})
    )
    assert {b.name: dict(b.annotations)[GPU_INDEX] for b in result.binds} == {"p0": "0", "p1": "1"}
    assert "p2" in reasons(result)


def test_gpushare_number_pods_take_idle_cards_whole() -> None:
    busy = share_pod("busy", number=1, node_name="n", phase="Running", annotations={GPU_INDEX: "0"})
    cache = cache_of(gpushare_node("n", 3, 16384), busy, share_pod("p", number=2))
    result = session(
        cache, conf(**{"deviceshare.VGPUEnable": False, "deviceshare.GPUNumberEnable": True})
    )
    assert {b.name: dict(b.annotations)[GPU_INDEX] for b in result.binds} == {"p": "1,2"}


@pytest.mark.parametrize(
    "args",
    [
        {"deviceshare.GPUSharingEnable": True},
        {
            "deviceshare.VGPUEnable": False,
            "deviceshare.GPUSharingEnable": True,
            "deviceshare.GPUNumberEnable": True,
        },
        {"deviceshare.SchedulePolicy": "pack"},
        {"deviceshare.ScheduleWeight": -1},
    ],
    ids=["vgpu-and-gpushare", "sharing-and-number", "unknown-policy", "negative-weight"],
)
def test_arguments_volcano_refuses_are_refused(args: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="deviceshare"):
        load_configuration(conf(**args), Registry())


def test_node_lock_is_announced_as_not_used() -> None:
    loaded = load_configuration(conf(**{"deviceshare.NodeLockEnable": True}), Registry())
    assert any("NodeLockEnable" in w for w in loaded.configuration.warnings)
