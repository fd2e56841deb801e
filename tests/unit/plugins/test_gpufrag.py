"""gpufrag: GPU pods placed where they leave the idle cards most usable to the workload,
on the device model's cards (booked through the Statement, Volcano's annotations on the
bind)."""

from __future__ import annotations

import json

import pytest

from asyncsched.cache import ClusterCache
from asyncsched.framework import ConfigError, Registry, run_session
from asyncsched.framework.cycle import load_configuration
from asyncsched.framework.results import SessionResult
from asyncsched.model.devices import ASSIGNED_IDS
from tests.builders import cache_of, vgpu_node, vgpu_pod

TWO_CARD_PODS = [{"cpu": "1", "gpuMilli": 1000, "gpus": 2, "weight": 1}]


def conf(policy: str, **args: object) -> str:
    arguments = {"gpufrag.policy": policy, "gpufrag.workload": TWO_CARD_PODS, **args}
    plugins = [{"name": "gpufrag", "arguments": arguments}]
    return json.dumps({"actions": "allocate", "tiers": [{"plugins": plugins}]})


def cards(prefix: str, n: int) -> list[tuple[str, int, int, str]]:
    return [(f"{prefix}-{i}", 10, 16384, "NVIDIA-A100") for i in range(n)]


def place(cache: ClusterCache, text: str, *pods: object) -> list[SessionResult]:
    """One session per pod, in order; binds carried into the cache as a backend would."""
    loaded = load_configuration(text, Registry())
    results = []
    for made in pods:
        cache.upsert_pod(made)  # type: ignore[arg-type]
        result, _ = run_session(cache.snapshot(), loaded)
        for bind in result.binds:
            assert cache.mark_binding(bind.uid, bind.node, bind.gpu_claim)
        results.append(result)
    return results


def whole(name: str, cards_wanted: int) -> object:
    return vgpu_pod(name, cards_wanted, cores=100, percentage=100)


@pytest.mark.parametrize("policy", ["packing", "fgd"])
def test_a_one_card_pod_leaves_room_for_the_two_card_pods_best_fit_would_lose(
    policy: str,
) -> None:
    # Nodes of 2 and 3 cards, and the workload asks two cards at a time. Best fit puts a
    # one-card pod on the smaller node (tightest fit): one card left there, two on the
    # big one, and only one two-card pod fits. Fragmentation-aware placement takes the
    # big node's third card: both two-card pods fit.
    pods = (whole("one", 1), whole("two-a", 2), whole("two-b", 2))
    cache = cache_of(vgpu_node("small", cards("S", 2)), vgpu_node("big", cards("B", 3)))
    results = place(cache, conf(policy), *pods)
    assert results[0].binds[0].node == "big"
    assert sorted(r.binds[0].node for r in results[1:]) == ["big", "small"]

    cache = cache_of(vgpu_node("small", cards("S", 2)), vgpu_node("big", cards("B", 3)))
    results = place(cache, conf("bestfit"), *pods)
    assert [r.binds[0].node if r.binds else None for r in results] == ["small", "big", None]
    assert "not enough room on the node's GPU cards" in results[2].unschedulable[0].message


def test_a_share_goes_on_the_card_it_spoils_least_and_the_bind_names_it() -> None:
    # One card is half used: a 40% share on it leaves the free card whole for the
    # whole-card pods of the workload (binpack by memory would pick the same card, but
    # here the free card comes first in Volcano's order).
    workload = [{"cpu": "1", "gpuMilli": 1000, "gpus": 1, "weight": 1}]
    cache = cache_of(vgpu_node("n", cards("G", 2)))
    first = vgpu_pod("half", 1, cores=50, percentage=50)
    place(cache, conf("packing", **{"gpufrag.workload": workload}), first)
    taken = cache.nodes["n"].gpu_use
    assert taken is not None
    half_on = taken.cores.index(50)
    (result,) = place(
        cache,
        conf("packing", **{"gpufrag.workload": workload}),
        vgpu_pod("share", 1, cores=40, percentage=40),
    )
    (bind,) = result.binds
    assert dict(bind.annotations)[ASSIGNED_IDS].startswith(f"G-{half_on},")
    use = cache.nodes["n"].gpu_use
    assert use is not None and sorted(use.cores) == [0, 90] and not use.over()


def test_the_workload_is_learned_from_arrivals_without_a_list() -> None:
    plugin = {"name": "gpufrag", "arguments": {"gpufrag.refresh": 1}}
    learned = json.dumps({"actions": "allocate", "tiers": [{"plugins": [plugin]}]})
    pods = (whole("two-a", 2), whole("one", 1), whole("two-b", 2), whole("two-c", 2))

    def nodes() -> ClusterCache:
        return cache_of(
            vgpu_node("pair", cards("P", 2)),
            vgpu_node("small", cards("S", 2)),
            vgpu_node("big", cards("B", 3)),
        )

    # Having seen a two-card pod arrive, the one-card pod keeps out of the 2-card nodes.
    assert all(r.binds for r in place(nodes(), learned, *pods))
    # Best fit puts it on a 2-card node, and the last two-card pod finds no room.
    results = place(nodes(), conf("bestfit"), *pods)
    assert [bool(r.binds) for r in results] == [True, True, True, False]


@pytest.mark.parametrize(
    ("args", "wording"),
    [
        ({"gpufrag.policy": "greedy"}, "must be one of packing, fgd, bestfit, random"),
        ({"gpufrag.workload": [{"gpuMilli": 1200}]}, "gpuMilli must be 0-1000"),
        ({"gpufrag.workload": "all"}, "must be a list"),
        ({"gpufrag.window": 0}, "must be at least 1"),
    ],
)
def test_bad_arguments_are_refused_with_one_line(args: dict[str, object], wording: str) -> None:
    text = json.dumps(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "gpufrag", "arguments": args}]}]}
    )
    with pytest.raises(ConfigError, match=wording):
        load_configuration(text, Registry())
