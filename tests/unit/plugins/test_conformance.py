"""conformance: critical system pods are never preemption or reclaim victims."""

from __future__ import annotations

from asyncsched.framework import Arguments, Session, parse_configuration
from asyncsched.plugins.conformance import ConformancePlugin
from tests.builders import node, pod, snapshot

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: conformance
"""


def test_critical_pods_are_filtered_from_victims() -> None:
    snap = snapshot(
        node("n1"),
        pod("preemptor"),
        pod("dns", namespace="kube-system", node_name="n1", phase="Running"),
        pod("agent", priority_class="system-node-critical", node_name="n1", phase="Running"),
        pod("ctl", priority_class="system-cluster-critical", node_name="n1", phase="Running"),
        pod("batch", priority_class="low", node_name="n1", phase="Running"),
    )
    plugin = ConformancePlugin(Arguments())
    ssn = Session(snap, parse_configuration(CONF), {"conformance": plugin})
    plugin.on_session_open(ssn)
    tasks = {t.name: t for job in ssn.jobs.values() for t in job.tasks.values()}
    running = [tasks[n] for n in ("dns", "agent", "ctl", "batch")]
    assert [t.name for t in ssn.preemptable(tasks["preemptor"], running)] == ["batch"]
    assert [t.name for t in ssn.reclaimable(tasks["preemptor"], running)] == ["batch"]
