"""Leader election on a coordination.k8s.io Lease, as client-go does it.

Only the holder of the Lease schedules. A candidate takes the Lease when its
holder has not renewed it for ``lease_duration`` as observed locally (so
clocks need not agree); the holder gives up when it cannot renew within
``renew_deadline``, and hands the Lease back on a clean shutdown so the
standby takes over at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime

import msgspec

from asyncsched.backends.kube.client import KubeClient, KubeError

__all__ = ["LeaderElector"]

log = logging.getLogger(__name__)


class _LeaseSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class _LeaseMeta(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Lease(msgspec.Struct, rename="camel", omit_defaults=True):
    metadata: _LeaseMeta = msgspec.field(default_factory=_LeaseMeta)
    spec: _LeaseSpec = msgspec.field(default_factory=_LeaseSpec)
    api_version: str = "coordination.k8s.io/v1"
    kind: str = "Lease"


def _micro_time() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaigns for a Lease and keeps ``is_leader`` true only while it holds it."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self.client = client
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.is_leader = False
        self.changed = asyncio.Event()
        self._observed: tuple[str | None, str | None] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0

    async def run(self) -> None:
        """Campaign and renew until cancelled."""
        while True:
            try:
                await self._try_acquire_or_renew()
            except KubeError as exc:
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            if self.is_leader and time.monotonic() - self._renewed_at > self.renew_deadline:
                self._set_leader(False)
                log.error("lost the lease: could not renew within %.0fs", self.renew_deadline)
            await asyncio.sleep(self.retry_period)

    def _set_leader(self, leader: bool) -> None:
        if leader != self.is_leader:
            self.is_leader = leader
            log.warning("%s is %s", self.identity, "now the leader" if leader else "a standby")
            self.changed.set()

    async def _try_acquire_or_renew(self) -> None:
        now = time.monotonic()
        try:
            lease = msgspec.json.decode(
                await self.client.get(f"{self.path}/{self.name}"), type=_Lease
            )
        except KubeError as exc:
            if exc.status != 404:
                raise
            await self._create()
            return
        spec = lease.spec
        record = (spec.holder_identity, spec.renew_time)
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        held_by_other = bool(spec.holder_identity) and spec.holder_identity != self.identity
        duration = spec.lease_duration_seconds or self.lease_duration
        if held_by_other and now - self._observed_at < duration:
            self._set_leader(False)
            return
        stamp = _micro_time()
        taking_over = spec.holder_identity != self.identity
        lease.spec = _LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.lease_duration),
            acquire_time=stamp if taking_over else spec.acquire_time,
            renew_time=stamp,
            lease_transitions=(spec.lease_transitions or 0) + (1 if taking_over else 0),
        )
        try:
            await self.client.put(f"{self.path}/{self.name}", msgspec.json.encode(lease))
        except KubeError as exc:
            if exc.status == 409:
                self._set_leader(False)
                return
            raise
        self._renewed_at = time.monotonic()
        self._set_leader(True)

    async def _create(self) -> None:
        stamp = _micro_time()
        lease = _Lease(
            metadata=_LeaseMeta(name=self.name, namespace=self.namespace),
            spec=_LeaseSpec(
                holder_identity=self.identity,
                lease_duration_seconds=int(self.lease_duration),
                acquire_time=stamp,
                renew_time=stamp,
                lease_transitions=0,
            ),
        )
        try:
            await self.client.post(self.path, msgspec.json.encode(lease))
        except KubeError as exc:
            if exc.status == 409:
                return
            raise
        self._renewed_at = time.monotonic()
        self._set_leader(True)

    async def release(self) -> None:
        """Hand the Lease back so a standby need not wait for it to expire."""
        if not self.is_leader:
            return
        self._set_leader(False)
        try:
            lease = msgspec.json.decode(
                await self.client.get(f"{self.path}/{self.name}"), type=_Lease
            )
            if lease.spec.holder_identity != self.identity:
                return
            lease.spec = msgspec.structs.replace(
                lease.spec, holder_identity="", lease_duration_seconds=1, renew_time=_micro_time()
            )
            await self.client.put(f"{self.path}/{self.name}", msgspec.json.encode(lease))
        except KubeError as exc:
            log.warning("could not release the lease: %s", exc)
