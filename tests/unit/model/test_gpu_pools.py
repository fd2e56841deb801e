"""GPU model pools: the configuration, cards of a pool's resource, and whose model a card is."""

from __future__ import annotations

import pytest

from asyncsched.api import Node, Pod
from asyncsched.model.devices import node_gpus
from asyncsched.model.gpu_claims import (
    CardShare,
    GpuClaim,
    GpuRequest,
    pod_gpu_claim,
    pod_gpu_request,
)
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools, parse_pools, pool_cards
from asyncsched.model.gpu_use import GpuUse
from asyncsched.model.task import pod_requests
from tests.builders import node, pod, vgpu_node

POOLS = parse_pools(["nvidia.com/a100", "nvidia.com/h100"])
PRODUCT = "nvidia.com/gpu.product"


def pool_node(name: str, **amounts: int) -> Node:
    made = node(name)
    for resource, count in amounts.items():
        made.status.allocatable[f"nvidia.com/{resource}"] = count
    return made


def asking(**amounts: int) -> Pod:
    made = pod("p")
    for resource, count in amounts.items():
        made.spec.containers[0].resources.limits[f"nvidia.com/{resource}"] = count
    return made


def request_of(made: Pod, pools: GpuPools = POOLS) -> GpuRequest | None:
    return pod_gpu_request(made, pod_requests(made)[0].names(), pools)


def test_the_argument_is_a_list_of_names_or_a_map_to_models() -> None:
    assert POOLS.pools == (("nvidia.com/a100", "A100"), ("nvidia.com/h100", "H100"))
    assert parse_pools("nvidia.com/a100, nvidia.com/h100") == POOLS
    mapped = parse_pools({"example.com/big": "NVIDIA-A100-SXM4-80GB"})
    assert mapped.model("example.com/big") == "NVIDIA-A100-SXM4-80GB"
    assert parse_pools(None) == NO_POOLS and not NO_POOLS


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (["a100"], "'a100' is not a valid resource name: has no domain prefix"),
        (["nvidia.com/a 100"], "'nvidia.com/a 100' is not a valid resource name: name 'a 100'"),
        (["NVIDIA.com/a100"], "prefix 'NVIDIA.com' is not a DNS subdomain"),
        (["kubernetes.io/a100"], "the kubernetes.io domain is reserved"),
        (["nvidia.com/gpu"], "nvidia.com/gpu is the generic card"),
        (["nvidia.com/a100", "nvidia.com/a100"], "'nvidia.com/a100' is listed twice"),
        ({"nvidia.com/a100": ""}, "'nvidia.com/a100' names no card model"),
        (7, "must be a list of resource names or a map"),
    ],
)
def test_a_bad_pool_is_refused_naming_the_argument(raw: object, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_pools(raw)
    message = str(caught.value)
    assert message.startswith("plugin deviceshare: argument 'deviceshare.ModelResources'")
    assert said in message and "\n" not in message


def test_a_card_belongs_to_the_pool_with_the_longest_model_it_contains() -> None:
    pools = parse_pools({"nvidia.com/a10": "A10", "nvidia.com/a100": "A100"})
    assert pools.pool_of("NVIDIA-A100-SXM4-80GB") == "nvidia.com/a100"
    assert pools.pool_of("nvidia-a10g") == "nvidia.com/a10"  # case does not matter
    assert pools.pool_of("Tesla-T4") == ""


def test_a_node_reporting_a_pool_resource_has_that_many_whole_cards_of_the_model() -> None:
    gpus = node_gpus(pool_node("n", a100=2, gpu=1), POOLS)
    assert gpus is not None and gpus.source == "plain"
    cards = [(c.index, c.model, c.resource) for c in gpus.cards]
    assert cards == [
        (0, "A100", "nvidia.com/a100"),
        (1, "A100", "nvidia.com/a100"),
        (2, "NVIDIA", "nvidia.com/gpu"),
    ]
    assert node_gpus(pool_node("n", a100=2), NO_POOLS) is None, "without pools: no cards"
    labelled = pool_node("n", a100=1)
    labelled.metadata.labels[PRODUCT] = "NVIDIA-A100-SXM4-80GB"
    found = node_gpus(labelled, POOLS)
    assert found is not None and found.cards[0].model == "NVIDIA-A100-SXM4-80GB"


def test_a_pod_asking_a_pool_resource_asks_whole_cards_of_its_model() -> None:
    request = request_of(asking(a100=2))
    assert request is not None
    assert (request.plain, request.resource, request.model) == (2, "nvidia.com/a100", "A100")
    assert request_of(asking(a100=2), NO_POOLS) is None, "without pools: not a GPU request"
    mixed = request_of(asking(a100=1, h100=1))
    assert mixed is not None and "asks cards of more than one kind" in mixed.error


def test_a_pool_claim_books_only_cards_of_its_resource() -> None:
    gpus = node_gpus(pool_node("n", gpu=2, a100=2), POOLS)
    assert gpus is not None
    use = GpuUse(gpus)
    claim = pod_gpu_claim(asking(a100=2), request_of(asking(a100=2)))
    assert claim == GpuClaim("plain", (), 2, resource="nvidia.com/a100")
    use.book("a", claim)
    assert use.sharers == [1, 1, 0, 0]
    assert (use.idle_cards("nvidia.com/a100"), use.idle_cards("nvidia.com/gpu")) == (0, 2)
    use.release("a")
    assert use.idle_cards() == 4


def test_cards_count_in_the_pool_of_their_model_whatever_they_were_asked_as() -> None:
    plain = node("n", gpu=4, labels={PRODUCT: "NVIDIA-A100-SXM4-80GB"})
    gpus = node_gpus(plain, POOLS)
    assert gpus is not None
    assert pool_cards(GpuClaim("plain", (), 3), gpus, POOLS) == {"nvidia.com/a100": 3}
    t4 = node_gpus(node("t", gpu=4, labels={PRODUCT: "Tesla-T4"}), POOLS)
    assert t4 is not None and pool_cards(GpuClaim("plain", (), 3), t4, POOLS) == {}
    # vGPU shares: one card each, in the pool of that card's model.
    mixed = node_gpus(
        vgpu_node("v", [("G0", 4, 40960, "NVIDIA-A100"), ("G1", 4, 81920, "NVIDIA-H100")]),
        POOLS,
    )
    assert mixed is not None
    shares = tuple(CardShare(u, -1, 1024, 10, False) for u in ("G0", "G1", "G9"))
    assert pool_cards(GpuClaim("vgpu", shares), mixed, POOLS) == {
        "nvidia.com/a100": 1,
        "nvidia.com/h100": 1,
    }
