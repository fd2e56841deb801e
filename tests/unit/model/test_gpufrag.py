"""FGD's fragmentation measure and its gradient, checked by hand on small nodes.

A node's idle GPU is a fragment for a pod shape when that pod could not use it: all of
it when the pod cannot run there (CPU-only, wrong model, too little CPU, too few cards
with room), else the cards with less room than the pod asks of one card.
"""

from __future__ import annotations

import numpy as np
import pytest

from asyncsched.model.gpufrag import (
    Classes,
    PodShape,
    Workload,
    class_fragmentation,
    node_fragmentation,
    placement_deltas,
    shape_fragmentation,
    stranded_gpu,
)

CARDS = [1000, 1000, 300, 500]  # two free cards, two shared ones: 2800 milli idle


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        (PodShape(4000), 2800),  # CPU-only: no card is of use to it
        (PodShape(4000, 400, 1), 300),  # a 40% share fits all cards but the 300 one
        (PodShape(4000, 1000, 1), 800),  # a whole card: only the two free cards serve
        (PodShape(4000, 1000, 2), 800),
        (PodShape(4000, 1000, 3), 2800),  # three whole cards: it cannot run here at all
        (PodShape(20000, 400, 1), 2800),  # more CPU than the node has left
        (PodShape(4000, 400, 1, ("B",)), 2800),  # a model the node does not have
        (PodShape(4000, 400, 1, ("A",)), 300),
    ],
)
def test_fragmentation_of_one_shape_follows_the_definition(shape: PodShape, expected: int) -> None:
    assert shape_fragmentation(16000, CARDS, "A", shape) == expected


def test_a_model_the_pod_names_matches_the_card_models_that_contain_it() -> None:
    """Pods name models as users write them (``V100M32``), cards carry the device
    plugin's names (``NVIDIA-V100M32``): Volcano matches by substring, case ignored."""
    share = PodShape(4000, 400, 1, ("v100m32",))
    assert shape_fragmentation(16000, CARDS, "NVIDIA-V100M32", share) == 300
    assert shape_fragmentation(16000, CARDS, "NVIDIA-V100M16", share) == 2800
    classes = Classes(Workload((share,), (1.0,)), ["", "NVIDIA-V100M16", "NVIDIA-V100M32"])
    cards = np.array([CARDS, CARDS], dtype=np.int64)
    found = node_fragmentation(np.array([16000, 16000]), cards, np.array([1, 2]), classes)
    assert found.tolist() == [2800.0, 300.0]


def test_a_node_without_cards_has_no_fragment() -> None:
    assert shape_fragmentation(16000, [], "", PodShape(1000, 500, 1)) == 0


def test_the_arrays_agree_with_the_definition_on_random_nodes() -> None:
    rng = np.random.default_rng(7)
    shapes = [
        PodShape(int(rng.integers(0, 20)) * 1000, milli, gpus, models)
        for milli, gpus in ((0, 0), (250, 1), (600, 1), (1000, 1), (1000, 2), (1000, 4))
        for models in ((), ("A",), ("B", "C"))
    ]
    workload = Workload(tuple(shapes), tuple([1 / len(shapes)] * len(shapes)))
    classes = Classes(workload, ["", "A", "B"])
    rows = 60
    count = rng.integers(0, 5, rows)
    cards = np.where(
        np.arange(4)[None, :] < count[:, None],
        rng.choice([0, 100, 300, 500, 750, 1000], (rows, 4)),
        0,
    ).astype(np.int64)
    model = np.where(count > 0, rng.integers(1, 3, rows), 0).astype(np.int64)
    cpu = rng.integers(0, 40, rows).astype(np.int64) * 1000
    found = class_fragmentation(cpu, cards, model, classes)
    for r in range(rows):
        name = classes.models[model[r]]
        own = [int(c) for c in cards[r, : count[r]]]
        for c, shape in enumerate(shapes):
            assert found[c, r] == shape_fragmentation(int(cpu[r]), own, name, shape)
    expected = found.mean(axis=0)
    assert np.allclose(node_fragmentation(cpu, cards, model, classes), expected)


def test_the_gradient_is_the_change_of_the_definition_for_the_best_card() -> None:
    rng = np.random.default_rng(11)
    shapes = (PodShape(2000, 250, 1), PodShape(6000, 600, 1), PodShape(4000, 1000, 2))
    workload = Workload(shapes, (0.5, 0.3, 0.2))
    classes = Classes(workload, ["", "A"])
    cards = rng.choice([0, 200, 400, 650, 1000], (40, 4)).astype(np.int64)
    cpu = rng.integers(0, 12, 40).astype(np.int64) * 1000
    model = np.ones(40, dtype=np.int64)

    def expected(cpu_left: int, own: list[int]) -> float:
        return sum(
            w * shape_fragmentation(cpu_left, own, "A", s)
            for s, w in zip(shapes, workload.weights, strict=True)
        )

    for pod in (PodShape(1000, 400, 1), PodShape(3000, 1000, 1), PodShape(5000)):
        delta, card = placement_deltas(cpu, cards, model, classes, pod)
        for r in range(40):
            own = [int(c) for c in cards[r]]
            now = expected(int(cpu[r]), own)
            if pod.shares:
                options = [
                    expected(int(cpu[r]) - pod.cpu, [*own[:g], own[g] - 400, *own[g + 1 :]])
                    for g in range(4)
                    if own[g] >= 400
                ]
                if not options:
                    assert delta[r] == np.inf
                    continue
                assert delta[r] == pytest.approx(min(options) - now)
                taken = [*own]
                taken[card[r]] -= 400
                assert expected(int(cpu[r]) - pod.cpu, taken) == pytest.approx(min(options))
            elif pod.gpus:
                free = [g for g in range(4) if own[g] == 1000]
                if not free:
                    assert delta[r] == np.inf
                    continue
                taken = [*own]
                taken[free[0]] = 0
                assert delta[r] == pytest.approx(expected(int(cpu[r]) - pod.cpu, taken) - now)
            else:
                assert delta[r] == pytest.approx(expected(int(cpu[r]) - pod.cpu, own) - now)


def test_popularity_weighs_the_shapes_and_rare_ones_are_left_out() -> None:
    shapes = [PodShape(1000, 500, 1)] * 6 + [PodShape(1000, 1000, 1)] * 3 + [PodShape(1000)]
    workload = Workload.of(shapes, coverage=0.9)
    assert workload.shapes == (PodShape(1000, 500, 1), PodShape(1000, 1000, 1))
    assert workload.weights == pytest.approx((6 / 9, 3 / 9))
    classes = Classes(workload, ["", "A"])
    # Cards [1000, 300]: the share wastes the 300 card, the whole card pod wastes it too.
    frag = node_fragmentation(np.array([8000]), np.array([[1000, 300]]), np.array([1]), classes)
    assert frag[0] == pytest.approx(300)


def test_the_gradient_sends_a_share_to_the_card_it_spoils_least() -> None:
    # Whole-card pods only: a 470 share on the free card spoils it (530 + 530 unusable,
    # up from 530); on the 530 card it uses a fragment (60 left, down from 530).
    classes = Classes(Workload((PodShape(1000, 1000, 1),), (1.0,)), ["", "A"])
    delta, card = placement_deltas(
        np.array([8000]), np.array([[1000, 530]]), np.array([1]), classes, PodShape(1000, 470, 1)
    )
    assert card[0] == 1
    assert delta[0] == pytest.approx(60 - 530)


def test_the_gradient_keeps_room_for_the_pods_the_workload_brings() -> None:
    # Two-card pods are the workload. One card taken from a 2-card node leaves nothing
    # they can use (+1000 of fragment); taken from a 3-card node, two free cards remain.
    classes = Classes(Workload((PodShape(1000, 1000, 2),), (1.0,)), ["", "A"])
    cards = np.array([[1000, 1000, 0], [1000, 1000, 1000]])
    delta, _ = placement_deltas(
        np.array([8000, 8000]), cards, np.array([1, 1]), classes, PodShape(1000, 1000, 1)
    )
    assert delta.tolist() == [1000, 0]
    # A card that does not fit the pod (no free card) is no choice at all.
    delta, _ = placement_deltas(
        np.array([8000]), np.array([[500, 500]]), np.array([1]), classes, PodShape(1000, 1000, 1)
    )
    assert delta[0] == np.inf


def test_a_cpu_only_pod_is_charged_for_the_cpu_the_gpus_needed() -> None:
    # 10 cores left beside two free cards; whole-card pods want 8 cores each.
    classes = Classes(Workload((PodShape(8000, 1000, 1),), (1.0,)), ["", "A"])
    cpu, cards, model = np.array([10000]), np.array([[1000, 1000]]), np.array([1])
    # Taking 1 core leaves 9: such a pod still runs, no card becomes a fragment.
    assert placement_deltas(cpu, cards, model, classes, PodShape(1000))[0][0] == 0
    # Taking 4 leaves 6: it no longer runs, both idle cards are fragments for it.
    assert placement_deltas(cpu, cards, model, classes, PodShape(4000))[0][0] == 2000
    # The smoother measure: 6 cores feed 750 milli of such pods, 1250 of the 2000 starve.
    assert classes.cpu_per_milli == pytest.approx(8.0)
    assert stranded_gpu(np.array([6000]), cards, 8.0)[0] == 1250
    assert stranded_gpu(np.array([16000]), cards, 8.0)[0] == 0
