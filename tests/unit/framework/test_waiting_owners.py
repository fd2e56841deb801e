"""The session's typed owners: each part of why pods wait has one writer, and each
module's per-session state lives in its own slot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from asyncsched.framework import Slot, waiting
from asyncsched.framework.session import Session
from tests.unit.framework.test_session import _session

SOURCE = Path(waiting.__file__).parents[1]

WRITERS = {
    "fit_failures": "actions/placement.py",
    "undone_gangs": "actions/allocate.py",
    "podgroup_conditions": "plugins/gang.py",
    "last_placements": "framework/statement.py",
}


@pytest.mark.parametrize(("part", "writer"), sorted(WRITERS.items()))
def test_each_part_is_written_by_the_one_module_its_docstring_names(part: str, writer: str) -> None:
    writes = re.compile(rf"\.{part}\.(record\(|by_\w+\[[^]]*\]\s*=|by_\w+\.(update|setdefault))")
    found = sorted(
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if writes.search(path.read_text(encoding="utf-8"))
    )
    assert found == [writer]
    owner = {
        "fit_failures": waiting.FitFailures,
        "undone_gangs": waiting.UndoneGangs,
        "podgroup_conditions": waiting.PodGroupConditions,
        "last_placements": waiting.LastPlacements,
    }[part]
    module = "asyncsched." + writer.removesuffix(".py").replace("/", ".")
    assert f"Written only by ``{module}``" in " ".join((owner.__doc__ or "").split())


def test_the_session_has_no_untyped_scratch_space() -> None:
    ssn = _session("true")
    assert not hasattr(ssn, "scratch")
    for old in ("fit_errors", "gang_attempts", "job_conditions"):
        assert not hasattr(ssn, old)


def test_a_slot_holds_one_value_per_session() -> None:
    made: list[list[int]] = []

    def make() -> list[int]:
        made.append([])
        return made[-1]

    slot: Slot[list[int]] = Slot(__name__, make, "a test's list")
    first, second = _session("true"), _session("true")
    first.state(slot).append(1)
    assert first.state(slot) == [1] and second.state(slot) == []
    assert len(made) == 2
    assert isinstance(first, Session)
