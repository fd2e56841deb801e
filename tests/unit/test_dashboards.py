"""The Grafana dashboards in deploy/dashboards: well-formed, and every metric of ours they
query is one the scheduler or the descheduler exports. (tests/e2e/test_dashboards.py and
test_descheduler_prometheus.py ask a real Prometheus.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

DASHBOARDS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "dashboards").glob("*.json"))
METRIC = re.compile(r"\b((?:volcano|asyncsched)_[A-Za-z0-9_]+)")


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    found = []
    for panel in board["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every query, and of every templating variable."""
    out = [(p["title"], t["expr"]) for p in panels(board) for t in p.get("targets", [])]
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            out.append((f"variable {var['name']}", var["query"]["query"]))
    return out


def exported_names() -> set[str]:
    """The series names the scheduler's /metrics carries after sessions that bind, leave
    pods pending and report queues with a capability and GPUs, and the descheduler's."""
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.backends.kube.descheduler import DeschedulerMetrics
    from asyncsched.backends.kube.metrics import Metrics
    from asyncsched.framework import Registry, run_session
    from asyncsched.framework.results import SessionTimings
    from tests.builders import node, pod, podgroup, queue, snapshot

    snap = snapshot(
        node("n1", cpu="4", gpu=2),
        queue("ml", capability={"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}),
        podgroup("train", 2, queue="ml"),
        pod("train-0", cpu="1", gpu=1, group="train"),
        pod("train-1", cpu="1", group="train"),
        podgroup("huge", 1, queue="ml"),
        pod("huge-0", cpu="64", group="huge"),
    )
    result, _ = run_session(snap, ConfigSource(Registry()).current, "s1")
    result.timings = SessionTimings(1.0, 2.0, {"allocate": 1.0}, {("gang", "OnSessionOpen"): 0.1})
    metrics = Metrics()
    metrics.observe_session(result)
    text = metrics.exposition() + DeschedulerMetrics().exposition()
    names: set[str] = set()
    for line in text.decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.add(name)
            if kind == "histogram":
                names.update(f"{name}_{part}" for part in ("bucket", "sum", "count"))
    return names


def test_there_are_dashboards_for_the_scheduler_the_queues_and_the_descheduler() -> None:
    assert {p.stem for p in DASHBOARDS} >= {"scheduler", "queues", "descheduler"}


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_a_dashboard_is_well_formed_for_grafana(path: Path) -> None:
    board = json.loads(path.read_text())
    assert board["uid"].startswith("asyncsched-") and board["title"] and board["schemaVersion"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in panels(board):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"] and panel["description"], panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    for title, expr in queries(board):
        used = set(re.findall(r"\$(\w+)", expr)) - {"__rate_interval", "__interval", "__range"}
        assert used <= set(variables), f"{title}: unknown variables {used - set(variables)}"


def test_every_metric_a_dashboard_queries_is_one_the_scheduler_exports() -> None:
    exported = exported_names()
    unknown = {
        (path.stem, title, name)
        for path in DASHBOARDS
        for title, expr in queries(json.loads(path.read_text()))
        for name in METRIC.findall(expr)
        if name not in exported
    }
    assert not unknown, sorted(unknown)
