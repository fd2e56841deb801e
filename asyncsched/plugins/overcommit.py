"""overcommit: admit jobs (Pending -> Inqueue) while their minimum resources fit in
the cluster's idle room inflated by ``overcommit-factor``.

The factor lets a few more jobs wait in Inqueue than fit right now, so their
pods exist and are ready when resources free up, without flooding the cluster
with pods that cannot run. Jobs without minResources are always admitted.
"""

from __future__ import annotations

import math
from typing import ClassVar

from asyncsched.framework import ArgumentError, Arguments, Session
from asyncsched.framework.hooks import JOB_ENQUEUEABLE, JOB_ENQUEUED
from asyncsched.model import JobInfo, Resource
from asyncsched.model.resource import PODS
from asyncsched.plugins._resources import (
    cluster_total,
    cluster_used,
    deduct_gated,
    job_min_resources,
    reserved_for_job,
)

__all__ = ["DEFAULT_FACTOR", "FACTOR_ARGUMENT", "OvercommitPlugin"]

FACTOR_ARGUMENT = "overcommit-factor"
DEFAULT_FACTOR = 1.2


class OvercommitPlugin:
    name: ClassVar[str] = "overcommit"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.factor = arguments.get_float(FACTOR_ARGUMENT, DEFAULT_FACTOR)
        if not math.isfinite(self.factor):
            raise ArgumentError(
                f"plugin overcommit: argument {FACTOR_ARGUMENT!r} must be a finite number, "
                f"got {arguments.raw(FACTOR_ARGUMENT)!r}"
            )
        if self.factor < 1.0:  # as Volcano: said, and its default used
            arguments.warn(
                FACTOR_ARGUMENT,
                f"is {arguments.raw(FACTOR_ARGUMENT)!r}, below 1.0 (1.0 admits only what fits "
                f"now): the default {DEFAULT_FACTOR} is used, as Volcano does",
            )
            self.factor = DEFAULT_FACTOR
        self.idle = Resource()
        self.inqueue = Resource()

    def on_session_open(self, ssn: Session) -> None:
        self.idle = cluster_total(ssn).scale(self.factor) - cluster_used(ssn)
        # Summed as plain integers (the same total as adding Resources job by job);
        # a job without minResources reserves nothing.
        # Settled jobs come summed per queue (asyncsched.model.snapshot).
        inqueue: dict[str, int] = {}
        for job in ssn.active_jobs.values():
            if job.min_resources is None:
                continue
            for name, value in reserved_for_job(job, whole_minimum_when_inqueue=True).items():
                inqueue[name] = inqueue.get(name, 0) + value
        for totals in ssn.settled_totals.values():
            for name, value in totals.reserved_whole.items():
                inqueue[name] = inqueue.get(name, 0) + value
        self.inqueue = Resource(inqueue)
        ssn.add(JOB_ENQUEUEABLE, self.name, self._enqueueable)
        ssn.add(JOB_ENQUEUED, self.name, self._enqueued)

    def _enqueueable(self, job: JobInfo) -> int:
        minimum = job_min_resources(job)
        if minimum is None:
            return 1
        # fits_where_requested(inqueue + minimum, idle, minimum) == [], without building
        # the sum: this runs for every pending job.
        inqueue, idle = self.inqueue, self.idle
        for name, amount in minimum.items():
            if amount > 0 and name != PODS and inqueue.get(name) + amount > idle.get(name):
                return -1
        return 1

    def _enqueued(self, job: JobInfo) -> None:
        minimum = job_min_resources(job)
        if minimum is not None:
            self.inqueue = self.inqueue + deduct_gated(job, minimum)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report; the books stay readable for other plugins' close."""
