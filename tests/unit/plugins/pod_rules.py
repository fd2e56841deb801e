"""A session with the real predicates and nodeorder plugins, for the rules about other pods."""

from __future__ import annotations

from typing import Any

import numpy as np

from asyncsched.api.core import Node, Pod, Taint
from asyncsched.framework import Arguments, Session, parse_configuration
from asyncsched.framework.plugin import Plugin
from asyncsched.model import TaskInfo
from asyncsched.plugins.nodeorder import NodeOrderPlugin
from asyncsched.plugins.predicates import PredicatesPlugin
from tests.builders import HOSTNAME, ZONE, node, pod, snapshot

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
"""
ONLY_POD_RULES = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
    "imagelocality.weight": 0,
    "podaffinity.weight": 1,
    "podtopologyspread.weight": 1,
}
"""nodeorder weights that leave only the scores from other pods, each weighted 1."""


def host(
    name: str, zone: str | None = None, *, taints: list[Taint] | None = None, **labels: str
) -> Node:
    """A node labelled with its hostname and, if given, its zone."""
    found = {HOSTNAME: name, **labels}
    if zone is not None:
        found[ZONE] = zone
    return node(name, labels=found, taints=taints)


def running(name: str, on: str, **kwargs: Any) -> Pod:
    return pod(name, node_name=on, phase="Running", **kwargs)


def open_session(
    objects: list[Node | Pod],
    predicates: dict[str, object] | None = None,
    nodeorder: dict[str, object] | None = None,
) -> Session:
    plugins: dict[str, Plugin] = {
        "predicates": PredicatesPlugin(Arguments(predicates or {})),
        "nodeorder": NodeOrderPlugin(Arguments({**ONLY_POD_RULES, **(nodeorder or {})})),
    }
    ssn = Session(snapshot(*objects), parse_configuration(CONF), dict(plugins))
    for plugin in plugins.values():
        plugin.on_session_open(ssn)
    return ssn


def task(ssn: Session, name: str) -> TaskInfo:
    found = [t for n in ssn.node_list for t in n.tasks.values() if t.name == name]
    found += [t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name]
    return found[0]


def filtered(ssn: Session, name: str) -> dict[str, list[str]]:
    """reason -> names of the nodes kept off for it (first reason per node, as reported)."""
    out: dict[str, list[str]] = {}
    seen: set[int] = set()
    for reason, failed in ssn.batch_predicate(task(ssn, name)):
        rows = [int(i) for i in np.flatnonzero(failed) if int(i) not in seen]
        seen.update(rows)
        if rows:
            out.setdefault(reason, []).extend(ssn.node_list[i].name for i in rows)
    return {reason: sorted(names) for reason, names in out.items()}


def scores(ssn: Session, name: str, among: list[str] | None = None) -> dict[str, float]:
    rows = [i for i, n in enumerate(ssn.node_list) if among is None or n.name in among]
    found = ssn.node_scores(task(ssn, name), np.array(rows, dtype=np.intp))
    return {ssn.node_list[i].name: float(s) for i, s in zip(rows, found, strict=True)}
