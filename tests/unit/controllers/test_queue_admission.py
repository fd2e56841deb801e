"""Queue admission keeps the tree sound: whatever it lets through, the scheduler accepts."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api import Queue
from asyncsched.api.queue_rules import queue_problems, queue_tree_problems
from asyncsched.controllers.queue_admission import change_problems, deletion_problems
from tests.builders import queue

NAMES = ["a", "b", "c", "d", "e", "f", "g"]


def _cpu(rng: random.Random, *amounts: int) -> dict[str, str | int | float] | None:
    amount = rng.choice([None, None, *amounts])
    return {"cpu": amount} if amount is not None else None


def _queue(rng: random.Random) -> Queue:
    return queue(
        rng.choice([*NAMES, "root"]),
        rng.randint(1, 3),
        parent=rng.choice(["", "root", "gone", *NAMES, *NAMES]),
        capability=_cpu(rng, 2, 4, 8),
        deserved=_cpu(rng, 0, 1, 2, 4),
        guarantee=_cpu(rng, 1, 2),
    )


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_tree_built_only_of_admitted_changes_has_nothing_to_refuse(seed: int) -> None:
    # A walk of creates, updates (moves, resizes) and deletes; each is applied only when
    # admitted, and the tree must then pass the checks the simulator applies at load.
    # (A seeded walk: Hypothesis's own random draws favour the first choices too much
    # to grow trees worth checking.)
    rng = random.Random(seed)
    stored: dict[str, Queue] = {}
    for _ in range(80):
        if rng.random() < 0.15:
            name = rng.choice(NAMES)
            if not deletion_problems(name, stored):
                stored.pop(name, None)
        else:
            new = _queue(rng)
            if not change_problems(new, stored.get(new.metadata.name), stored, lambda q: 0):
                stored[new.metadata.name] = new
        assert queue_tree_problems(list(stored.values())) == {}
        assert all(not queue_problems(q) for q in stored.values())
