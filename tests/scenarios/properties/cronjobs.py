"""What a CronJob promises, judged from the events of generated runs: nothing runs once the
CronJob is suspended, and under Forbid or Replace no Job of it still runs when the next
is made. (That a scheduled time runs once is held by the core's own generated histories,
which see the times: here two times of one minute may share a Job's name, as in Volcano,
once the first Job is gone.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncsched.api.cronjob import CronJob
from asyncsched.backends.sim import Manifest
from tests.scenarios.properties.invariants import Invariant
from tests.scenarios.properties.ledger import Ledger

__all__ = ["CronJobRuns", "cronjob_invariants"]

FINISHED = ("Completed", "Failed", "Terminated")
"""The phases Volcano's CronJob controller counts a Job of its own finished by."""


class CronJobRuns(Invariant):
    name = "cronjob runs"

    def __init__(self, manifests: Sequence[Manifest]) -> None:
        self.policies: dict[tuple[str, str], str] = {}
        self.suspended_at: dict[tuple[str, str], float] = {}
        for m in sorted(manifests, key=lambda m: m.submit_at):
            if isinstance(m.obj, CronJob):
                key = (m.obj.metadata.namespace, m.obj.metadata.name)
                self.policies.setdefault(key, m.obj.spec.concurrency_policy)
                if m.obj.spec.suspend:
                    self.suspended_at.setdefault(key, m.submit_at)
                else:
                    self.suspended_at.pop(key, None)

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Job" or event["event"] != "created":
            return
        ns, name = event["namespace"], event["name"]
        cron = (ns, name.rsplit("-", 1)[0])
        policy = self.policies.get(cron)
        if policy is None:
            return
        job = f"Job {ns}/{name}"
        if ledger.time >= self.suspended_at.get(cron, float("inf")):
            self.fail(ledger, job, f"made after CronJob {cron[1]} was suspended")
        if policy == "Allow":
            return
        running = sorted(
            other
            for kind, other_ns, other in ledger.live
            if kind == "Job" and other_ns == ns and other.rsplit("-", 1)[0] == cron[1]
            and ledger.job_phases.get((ns, other), "") not in FINISHED
        )  # fmt: skip
        if running:
            self.fail(ledger, job, f"{policy}: made while {', '.join(running)} still runs")


def cronjob_invariants(manifests: Sequence[Manifest]) -> list[Invariant]:
    return [CronJobRuns(manifests)] if any(isinstance(m.obj, CronJob) for m in manifests) else []
