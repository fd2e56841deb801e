"""ASYNCSCHED_TRACE_HOOKS=1 logs every hook call, and changes no decision."""

from __future__ import annotations

import logging

import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import Registry, calls, run_session
from asyncsched.framework.results import SessionResult
from tests.builders import node, pod, podgroup, snapshot
from tests.unit.framework.test_session import _session


def _run() -> SessionResult:
    snap = snapshot(
        node("n1", cpu="4"),
        node("n2", cpu="8"),
        podgroup("train", 2),
        pod("train-0", cpu="2", group="train"),
        pod("train-1", cpu="2", group="train"),
        podgroup("big", 1),
        pod("big-0", cpu="64", group="big"),
    )
    result, _ = run_session(snap, ConfigSource(Registry()).current, uid="s1")
    return result


def _traced(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "asyncsched.hooks"]


def test_every_hook_call_is_logged_with_plugin_arguments_and_answer(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(calls.TRACE_ENV, "1")
    with caplog.at_level(logging.DEBUG, logger="asyncsched.hooks"):
        result = _run()
    lines = _traced(caplog)
    assert "job_valid gang(default/train) -> None" in lines
    assert "job_ready gang(default/train) -> True" in lines
    assert "job_ready gang(default/big) -> False" in lines
    assert "on_allocate drf(default/train-0) -> None" in lines
    scored = [line for line in lines if line.startswith("batch_node_order nodeorder(")]
    assert scored and all("array(" in line for line in scored)
    predicates = [line for line in lines if line.startswith("batch_predicate predicates(")]
    assert "batch_predicate predicates(default/big-0) -> []" in predicates
    assert sorted(b.name for b in result.binds) == ["train-0", "train-1"]


def test_tracing_changes_no_decision(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(calls.TRACE_ENV, raising=False)
    with caplog.at_level(logging.DEBUG, logger="asyncsched.hooks"):
        plain = _run()
    assert _traced(caplog) == []
    monkeypatch.setenv(calls.TRACE_ENV, "1")
    assert _run() == plain


def test_a_raising_callback_is_traced_as_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(calls.TRACE_ENV, "1")
    with caplog.at_level(logging.DEBUG, logger="asyncsched.hooks"):
        ssn = _session("true")
        ssn.job_ready(ssn.jobs["default/a"])
    assert _traced(caplog) == ["job_ready broken(default/a) -> FAILED"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "None"),
        ([1, 2], "[1, 2]"),
        (list(range(20)), "[20 items]"),
        (("taint", 3), "('taint', 3)"),
    ],
)
def test_arguments_are_shown_by_identifier(value: object, shown: str) -> None:
    assert calls.identify(value) == shown
