"""GPUs as devices: inventories read from nodes, requests and claims read from pods, and
the per-card books kept with the tasks through the cache, the snapshot and a Statement."""

from __future__ import annotations

from asyncsched.api.core import NodeStatus
from asyncsched.framework import Session, Statement, parse_configuration
from asyncsched.model.devices import ASSIGNED_IDS, GPU_INDEX, VGPU_REGISTER, node_gpus
from asyncsched.model.gpu_claims import (
    CardShare,
    GpuClaim,
    claim_annotations,
    pod_gpu_claim,
    pod_gpu_request,
)
from asyncsched.model.task import pod_requests
from tests.builders import cache_of, node, pod, vgpu_node, vgpu_pod

A100 = [("GPU-a", 4, 40960, "NVIDIA-A100"), ("GPU-b", 4, 40960, "NVIDIA-A100")]


def request_of(made):  # type: ignore[no-untyped-def]
    return pod_gpu_request(made, pod_requests(made)[0].names())


def test_register_annotation_gives_cards_with_uuid_model_memory_and_shares() -> None:
    gpus = node_gpus(vgpu_node("n", A100))
    assert gpus is not None and gpus.source == "vgpu" and not gpus.problems
    assert [(c.index, c.uuid, c.model, c.memory, c.shares) for c in gpus.cards] == [
        (0, "GPU-a", "NVIDIA-A100", 40960, 4),
        (1, "GPU-b", "NVIDIA-A100", 40960, 4),
    ]


def test_a_malformed_register_entry_is_named_and_the_other_cards_stay() -> None:
    made = vgpu_node("n", A100)
    made.metadata.annotations[VGPU_REGISTER] = (
        "GPU-a,4,40960,NVIDIA-A100,true,hami-core:GPU-x,four,1,T4,true,hami-core:"
        "GPU-y,2:GPU-b,4,40960,NVIDIA-A100,true,hami-core:"
    )
    gpus = node_gpus(made)
    assert gpus is not None
    assert [c.uuid for c in gpus.cards] == ["GPU-a", "GPU-b"]
    assert len(gpus.problems) == 2
    assert "count 'four'" in gpus.problems[0] and "GPU-y" in gpus.problems[1]


def test_plain_and_gpushare_inventories() -> None:
    plain = node("p", gpu=4, labels={"nvidia.com/gpu.product": "Tesla-T4"})
    gpus = node_gpus(plain)
    assert gpus is not None and gpus.source == "plain"
    assert [(c.index, c.model) for c in gpus.cards] == [(i, "Tesla-T4") for i in range(4)]
    share = node("s")
    counts = {"volcano.sh/gpu-memory": 32768, "volcano.sh/gpu-number": 2}
    share = share.__class__(
        metadata=share.metadata,
        spec=share.spec,
        status=NodeStatus(allocatable={**share.status.allocatable, **counts}, capacity={**counts}),
    )
    gpus = node_gpus(share)
    assert gpus is not None and gpus.source == "gpushare"
    assert [c.memory for c in gpus.cards] == [16384, 16384]
    assert node_gpus(node("cpu-only")) is None


def test_a_vgpu_nodes_totals_are_the_ones_it_advertises() -> None:
    info = cache_of(vgpu_node("n", A100)).nodes["n"]
    assert info.allocatable.get("volcano.sh/vgpu-number") == 8
    assert info.allocatable.get("volcano.sh/vgpu-memory") == 81920
    assert info.allocatable.get("volcano.sh/vgpu-cores") == 200


def test_requests_and_the_ones_no_card_can_meet() -> None:
    asked = request_of(vgpu_pod("p", 2, 1024, 30))
    assert asked is not None and not asked.error
    assert [(v.number, v.memory, v.cores) for v in asked.vgpu] == [(2, 1024, 30)]
    whole_memory = request_of(vgpu_pod("q", 1))
    assert whole_memory is not None and whole_memory.vgpu[0].percentage == 100
    too_many_cores = request_of(vgpu_pod("r", 1, 1024, 150))
    assert too_many_cores is not None and "vgpu-cores 150" in too_many_cores.error
    no_cards = request_of(vgpu_pod("s", 0, 1024))
    assert no_cards is not None and "vgpu-number is 0" in no_cards.error
    assert request_of(pod("cpu")) is None
    plain = request_of(pod("g", gpu=2))
    assert plain is not None and plain.plain == 2


def test_claim_annotations_read_back_as_the_same_claim() -> None:
    gpus = node_gpus(vgpu_node("n", A100))
    assert gpus is not None
    claim = GpuClaim("vgpu", (CardShare("GPU-b", -1, 1024, 30, False),))
    notes = claim_annotations(claim, gpus, "n", 1700000000)
    assert notes[ASSIGNED_IDS] == "GPU-b,NVIDIA,1024,30:"
    assert notes["volcano.sh/vgpu-node"] == "n"
    made = vgpu_pod("p", 1, 1024, 30, annotations=notes)
    assert pod_gpu_claim(made, request_of(made)) == claim


def bound(name: str, ids: str, **kwargs) -> object:  # type: ignore[no-untyped-def]
    return vgpu_pod(name, annotations={ASSIGNED_IDS: ids}, node_name="n", phase="Running", **kwargs)


def test_usage_is_rebuilt_from_bound_pods_and_released_with_them() -> None:
    cache = cache_of(
        vgpu_node("n", A100),
        bound("a", "GPU-a,NVIDIA,10240,30:", memory=10240, cores=30),
        bound("b", "GPU-a,NVIDIA,4096,20:", memory=4096, cores=20),
        bound("c", "GPU-b,NVIDIA,40960,100:", cores=100),
    )
    use = cache.nodes["n"].gpu_use
    assert use is not None
    assert (use.memory, use.cores, use.sharers, use.whole) == (
        [14336, 40960],
        [50, 100],
        [2, 1],
        [0, 1],
    )
    assert use.free_memory(0) == 40960 - 14336 and use.free_cores(0) == 50
    assert use.free_milli() == (500, 0)
    cache.delete_pod("default", "c")
    assert use.sharers == [2, 0] and use.free_milli() == (500, 1000)


def test_an_annotation_naming_a_card_the_node_lacks_books_nothing() -> None:
    cache = cache_of(vgpu_node("n", A100), bound("a", "GPU-zz,NVIDIA,1024,10:", memory=1024))
    use = cache.nodes["n"].gpu_use
    assert use is not None and use.sharers == [0, 0]


def test_gpushare_index_annotation_books_that_card() -> None:
    share = node("n")
    counts = {"volcano.sh/gpu-memory": 32768, "volcano.sh/gpu-number": 2}
    share = share.__class__(
        metadata=share.metadata,
        spec=share.spec,
        status=NodeStatus(allocatable={**share.status.allocatable, **counts}, capacity=counts),
    )
    holder = pod("h", node_name="n", phase="Running", annotations={GPU_INDEX: "1"})
    holder.spec.containers[0].resources.limits["volcano.sh/gpu-memory"] = 4096
    use = cache_of(share, holder).nodes["n"].gpu_use
    assert use is not None and use.memory == [0, 4096]


CONF = parse_configuration('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n')


def test_statement_books_the_chosen_cards_and_discard_gives_them_back() -> None:
    cache = cache_of(vgpu_node("n", A100), vgpu_pod("p", 1, 2048, 25))
    snap = cache.snapshot()
    ssn = Session(snap, CONF, {})
    ssn.gpu_chooser = lambda task, n: GpuClaim("vgpu", (CardShare("GPU-b", -1, 2048, 25, False),))
    task = next(iter(snap.jobs.values())).tasks["default/p"]
    stmt = Statement(ssn)
    stmt.allocate(task, snap.nodes["n"])
    use = snap.nodes["n"].gpu_use
    assert use is not None and use.memory == [0, 2048] and use.cores == [0, 25]
    cache_use = cache.nodes["n"].gpu_use
    assert cache_use is not None and cache_use.memory == [0, 0], "the cache's books are apart"
    stmt.discard()
    assert use.memory == [0, 0] and use.sharers == [0, 0] and task.gpu_claim is None


def test_commit_puts_the_annotations_on_the_bind_and_the_cache_holds_the_cards() -> None:
    cache = cache_of(vgpu_node("n", A100), vgpu_pod("p", 1, 2048, 25))
    snap = cache.snapshot()
    ssn = Session(snap, CONF, {})
    ssn.gpu_chooser = lambda task, n: GpuClaim("vgpu", (CardShare("GPU-a", -1, 2048, 25, False),))
    task = next(iter(snap.jobs.values())).tasks["default/p"]
    stmt = Statement(ssn)
    stmt.allocate(task, snap.nodes["n"])
    stmt.commit()
    (bind,) = ssn.result.binds
    assert dict(bind.annotations)[ASSIGNED_IDS] == "GPU-a,NVIDIA,2048,25:"
    assert cache.mark_binding(bind.uid, bind.node, bind.gpu_claim)
    use = cache.nodes["n"].gpu_use
    assert use is not None and use.memory == [2048, 0]
    cache.bind_failed(bind.uid)
    assert use.memory == [0, 0], "a refused bind frees the cards"


def test_plain_gpu_pods_take_whole_cards_without_a_device_plugin() -> None:
    cache = cache_of(
        node("n", gpu=4), pod("p", gpu=2), pod("r", gpu=1, node_name="n", phase="Running")
    )
    snap = cache.snapshot()
    ssn = Session(snap, CONF, {})
    task = next(j for j in snap.jobs.values() if "default/p" in j.tasks).tasks["default/p"]
    Statement(ssn).allocate(task, snap.nodes["n"])
    use = snap.nodes["n"].gpu_use
    assert use is not None and use.sharers == [1, 1, 1, 0] and use.whole == [1, 1, 1, 0]


def test_without_deviceshare_vgpu_pods_take_no_card() -> None:
    cache = cache_of(vgpu_node("n", A100), vgpu_pod("p", 1, 2048, 25))
    snap = cache.snapshot()
    ssn = Session(snap, CONF, {})
    task = next(iter(snap.jobs.values())).tasks["default/p"]
    Statement(ssn).allocate(task, snap.nodes["n"])
    use = snap.nodes["n"].gpu_use
    assert use is not None and use.sharers == [0, 0] and task.gpu_claim is None


def test_a_node_whose_cards_change_rebooks_the_pods_on_it() -> None:
    cache = cache_of(vgpu_node("n", A100[:1]), bound("a", "GPU-b,NVIDIA,1024,10:", memory=1024))
    use = cache.nodes["n"].gpu_use
    assert use is not None and use.sharers == [0], "GPU-b is not registered yet"
    cache.upsert_node(vgpu_node("n", A100))
    use = cache.nodes["n"].gpu_use
    assert use is not None and use.sharers == [0, 1] and use.memory == [0, 1024]
