"""Every hook, through the Session: its named method is the dispatcher's call, its flag
switches it off per plugin, and a plugin that raises has no opinion and is reported.

SAMPLES holds one call per hook (arguments, an allowed answer, and what the
Session's method returns with that answer); a hook added to ALL_HOOKS without
a sample fails here, so every hook gets these checks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncsched.framework import Session, calls, dispatch, parse_configuration
from asyncsched.framework import hooks as h
from asyncsched.framework.hooks import ALL_HOOKS, Hook, ValidateResult
from tests.builders import node, pod, podgroup, snapshot


@dataclass(frozen=True)
class Sample:
    hook: Hook[Any]
    method: str
    args: Callable[[Session], tuple[Any, ...]]
    answer: Callable[[Session], Any]
    returns: Callable[[Session], Any]
    """What ``method`` gives when the one plugin answers ``answer``."""


def _job(ssn: Session, name: str = "a") -> Any:
    return ssn.jobs[f"default/{name}"]


def _task(ssn: Session, name: str = "a") -> Any:
    return _job(ssn, name).tasks[f"default/{name}-0"]


def _queue(ssn: Session) -> Any:
    return ssn.queues["default"]


def _mask(ssn: Session) -> list[tuple[str, Any]]:
    return [("nope", np.ones(len(ssn.node_list), dtype=np.bool_))]


SAMPLES = [
    Sample(
        h.JOB_ORDER, "job_order", lambda s: (_job(s, "b"), _job(s)), lambda s: -1, lambda s: True
    ),
    Sample(
        h.QUEUE_ORDER, "queue_order", lambda s: (_queue(s), _queue(s)), lambda s: -1, lambda s: True
    ),
    Sample(
        h.TASK_ORDER,
        "task_order",
        lambda s: (_task(s, "b"), _task(s)),
        lambda s: -1,
        lambda s: True,
    ),
    Sample(
        h.VICTIM_QUEUE_ORDER,
        "victim_queue_order",
        lambda s: (_queue(s), _queue(s), _queue(s)),
        lambda s: -1,
        lambda s: True,
    ),
    Sample(
        h.PREDICATE,
        "predicate",
        lambda s: (_task(s), s.nodes["n1"]),
        lambda s: "nope",
        lambda s: "nope",
    ),
    Sample(h.BATCH_PREDICATE, "batch_predicate", lambda s: (_task(s),), _mask, _mask),
    Sample(
        h.NODE_ORDER,
        "node_scores",
        lambda s: (_task(s), np.array([0, 1])),
        lambda s: 3.0,
        lambda s: [3.0, 3.0],
    ),
    Sample(
        h.HYPERNODE_ORDER,
        "hypernode_score",
        lambda s: (_job(s), s.hypernodes.top),
        lambda s: 4.0,
        lambda s: 4.0,
    ),
    Sample(
        h.BATCH_NODE_ORDER,
        "node_scores",
        lambda s: (_task(s), np.array([1])),
        lambda s: np.array([2.5]),
        lambda s: [2.5],
    ),
    Sample(
        h.JOB_VALID,
        "job_valid",
        lambda s: (_job(s),),
        lambda s: ValidateResult(False, "NotEnoughTasks"),
        lambda s: ValidateResult(False, "NotEnoughTasks"),
    ),
    Sample(h.JOB_READY, "job_ready", lambda s: (_job(s),), lambda s: False, lambda s: False),
    Sample(h.JOB_PIPELINED, "job_pipelined", lambda s: (_job(s),), lambda s: -1, lambda s: False),
    Sample(
        h.JOB_ENQUEUEABLE, "job_enqueueable", lambda s: (_job(s),), lambda s: -1, lambda s: False
    ),
    Sample(h.JOB_ENQUEUED, "job_enqueued", lambda s: (_job(s),), lambda s: None, lambda s: None),
    Sample(h.JOB_STARVING, "job_starving", lambda s: (_job(s),), lambda s: True, lambda s: True),
    Sample(h.JOB_RESERVED, "job_reserved", lambda s: (_job(s),), lambda s: True, lambda s: True),
    Sample(h.OVERUSED, "overused", lambda s: (_queue(s),), lambda s: True, lambda s: True),
    Sample(
        h.ALLOCATABLE,
        "allocatable",
        lambda s: (_queue(s), _task(s)),
        lambda s: False,
        lambda s: False,
    ),
    Sample(
        h.PREEMPTIVE,
        "preemptive",
        lambda s: (_queue(s), [_task(s)]),
        lambda s: False,
        lambda s: False,
    ),
    Sample(
        h.PREEMPTABLE,
        "preemptable",
        lambda s: (_task(s), [_task(s, "b")]),
        lambda s: [_task(s, "b")],
        lambda s: [_task(s, "b")],
    ),
    Sample(
        h.RECLAIMABLE,
        "reclaimable",
        lambda s: (_task(s), [_task(s, "b")]),
        lambda s: [],
        lambda s: [],
    ),
    Sample(
        h.SHARE_RECLAIMABLE,
        "share_reclaimable",
        lambda s: (_task(s), [_task(s, "b")]),
        lambda s: [],
        lambda s: [],
    ),
    Sample(h.ON_ALLOCATE, "fire_allocate", lambda s: (_task(s),), lambda s: None, lambda s: None),
    Sample(
        h.ON_DEALLOCATE, "fire_deallocate", lambda s: (_task(s),), lambda s: None, lambda s: None
    ),
]
IDS = [s.hook.name for s in SAMPLES]


class Spy:
    """A plugin that answers one hook with a fixed answer (or raises) and records calls."""

    name: ClassVar[str] = "spy"

    def __init__(self, sample: Sample, raises: bool = False) -> None:
        self.sample, self.raises = sample, raises
        self.calls: list[tuple[Any, ...]] = []

    def on_session_open(self, ssn: Session) -> None:
        answer = self.sample.answer(ssn)

        def fn(*args: Any) -> Any:
            self.calls.append(args)
            if self.raises:
                raise RuntimeError("spy")
            return answer

        ssn.add(self.sample.hook, self.name, fn)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _session(spy: Spy, flags: str = "") -> Session:
    conf = f'actions: "allocate"\ntiers:\n- plugins:\n  - name: spy\n{flags}'
    snap = snapshot(
        node("n1"),
        node("n2"),
        podgroup("a"),
        pod("a-0", group="a"),
        podgroup("b"),
        pod("b-0", group="b", created="2030-01-01T00:00:00Z"),
    )
    ssn = Session(snap, parse_configuration(conf), {"spy": spy})  # type: ignore[dict-item]
    spy.on_session_open(ssn)
    return ssn


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _nobody(sample: Sample, ssn: Session) -> Any:
    """What the hook's rule gives when no plugin answers."""
    return sample.hook.rule([], lambda p, fn, a: fn(*a), *sample.args(ssn))


def test_every_hook_has_a_sample() -> None:
    assert sorted(s.hook.name for s in SAMPLES) == sorted(h.name for h in ALL_HOOKS)


@pytest.fixture(params=["plain", "checked"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the fast paths and with checking mode (plain rules)."""
    if request.param == "checked":
        monkeypatch.setenv(calls.CHECK_ENV, "1")
    else:
        monkeypatch.delenv(calls.CHECK_ENV, raising=False)
    return str(request.param)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_the_named_method_is_the_hooks_call(sample: Sample, mode: str) -> None:
    spy = Spy(sample)
    ssn = _session(spy)
    args = sample.args(ssn)
    got = getattr(ssn, sample.method)(*args)
    assert _plain(got) == _plain(sample.returns(ssn))
    if sample.hook is h.NODE_ORDER:  # asked node by node
        assert [c[1] for c in spy.calls] == [ssn.node_list[i] for i in args[1]]
    else:
        assert [_plain(c) for c in spy.calls] == [_plain(args)]
    assert ssn.result.failures == []


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.hook.flag], ids=lambda s: s.hook.name)
def test_the_hooks_flag_switches_the_plugin_off(sample: Sample, mode: str) -> None:
    spy = Spy(sample)
    ssn = _session(spy, f"    {sample.hook.flag}: false\n")
    args = sample.args(ssn)
    assert _plain(ssn.call(sample.hook, *args)) == _plain(_nobody(sample, ssn))
    assert spy.calls == [] and not ssn.has(sample.hook)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_a_raising_plugin_has_no_opinion_and_is_reported_once(sample: Sample, mode: str) -> None:
    spy = Spy(sample, raises=True)
    ssn = _session(spy)
    args = sample.args(ssn)
    assert _plain(ssn.call(sample.hook, *args)) == _plain(_nobody(sample, ssn))
    assert _plain(ssn.call(sample.hook, *args)) == _plain(_nobody(sample, ssn))
    assert len(spy.calls) == 1  # dropped for the rest of the session
    assert [(f.plugin, f.hook) for f in ssn.result.failures] == [("spy", sample.hook.name)]


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_the_sample_answer_keeps_the_contract(sample: Sample) -> None:
    ssn = _session(Spy(sample))
    assert sample.hook.answers is not None
    assert sample.hook.answers.check(sample.answer(ssn), sample.args(ssn))


def test_the_rules_fast_path_is_used_only_without_a_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    sample = next(s for s in SAMPLES if s.hook is h.JOB_READY)
    monkeypatch.delenv(calls.CHECK_ENV, raising=False)
    monkeypatch.delenv(calls.TRACE_ENV, raising=False)
    ssn = _session(Spy(sample))
    assert not isinstance(ssn._runner(h.JOB_READY), functools.partial)
    monkeypatch.setenv(calls.CHECK_ENV, "1")
    ssn = _session(Spy(sample))
    assert ssn._runner(h.JOB_READY).func is dispatch.all_true  # type: ignore[attr-defined]
