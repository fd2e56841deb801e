"""The caches and fast paths decide exactly what the plain path decides.

Random clusters (mixed node shapes, labels, taints, running pods, gangs in
several queues) are scheduled three ways: as shipped; with the one-pass
placement off (every task scored over an explicit candidate list, as before
the caches); and with the NumPy twins instead of the compiled kernels. The
binds, pending reasons and PodGroup updates must be identical.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from asyncsched.api.core import Taint, Toleration
from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.framework import Registry, Session, run_session
from asyncsched.framework.conf import parse_configuration
from asyncsched.framework.cycle import LoadedConfiguration, load_configuration
from asyncsched.model import _kernels_py, kernels
from tests.builders import node, pod, podgroup, queue

BINPACK = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def _cluster(seed: int) -> ClusterCache:
    rng = random.Random(seed)
    cache = ClusterCache()
    for q in range(3):
        cache.upsert_queue(queue(f"q{q}", weight=q + 1))
    n_nodes = rng.randint(5, 40)
    for i in range(n_nodes):
        taints = []
        if rng.random() < 0.15:
            taints.append(Taint(key="soft", value="x", effect="PreferNoSchedule"))
        if rng.random() < 0.1:
            taints.append(Taint(key="hard", value="y", effect="NoSchedule"))
        cache.upsert_node(
            node(
                f"n{i:03d}",
                cpu=str(rng.choice([4, 8, 16, 32])),
                memory=f"{rng.choice([8, 16, 64])}Gi",
                gpu=rng.choice([0, 0, 4]),
                pods=rng.choice([110, 5]),
                labels={"zone": rng.choice("ab")},
                taints=taints,
            )
        )
    for i in range(rng.randint(0, n_nodes)):
        host = f"n{rng.randrange(n_nodes):03d}"
        cache.upsert_pod(pod(f"run{i}", cpu="1", node_name=host, phase="Running"))
    for j in range(rng.randint(3, 30)):
        q = f"q{j % 3}"
        size = rng.randint(1, 6)
        extra: dict[str, Any] = {}
        if rng.random() < 0.2:
            extra["node_selector"] = {"zone": "a"}
        if rng.random() < 0.2:
            extra["tolerations"] = [Toleration(key="hard", operator="Exists")]
        cpu = rng.choice(["500m", "1", "2", "6"])
        gpu = rng.choice([0, 0, 0, 1])
        cache.upsert_podgroup(podgroup(f"j{j}", rng.randint(1, size), namespace=q, queue=q))
        for t in range(size):
            cache.upsert_pod(
                pod(
                    f"j{j}-{t}", cpu=cpu, memory="1Gi", gpu=gpu, namespace=q, group=f"j{j}", **extra
                )
            )
    return cache


def _decisions(cache: ClusterCache, loaded: LoadedConfiguration) -> list[Any]:
    out: list[Any] = []
    for n in range(3):
        result, _ = run_session(cache.snapshot(), loaded, uid=f"s{n}")
        out.append((result.binds, result.unschedulable, result.podgroups, result.enqueued))
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node)
    return out


def _configurations() -> list[LoadedConfiguration]:
    default = ConfigSource(Registry()).current
    parse_configuration(BINPACK, "test")
    return [default, load_configuration(BINPACK, Registry(), "binpack")]


@pytest.mark.parametrize("seed", range(25))
def test_one_pass_placement_decides_as_the_candidate_path(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for loaded in _configurations():
        fast = _decisions(_cluster(seed), loaded)
        with monkeypatch.context() as patch:
            patch.setattr(Session, "all_node_scores", lambda self, task: None)
            slow = _decisions(_cluster(seed), loaded)
        assert fast == slow


@pytest.mark.parametrize("seed", range(25))
def test_pure_kernels_decide_as_the_native_ones(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    for loaded in _configurations():
        first = _decisions(_cluster(seed), loaded)
        with monkeypatch.context() as patch:
            for name in kernels.KERNELS:
                patch.setattr(kernels, name, getattr(_kernels_py, name))
            second = _decisions(_cluster(seed), loaded)
        assert first == second
