"""GPU model pools: one resource name per card model, as 360's AI platform counts quotas.

Seed 003: the device plugin reports each node's cards under a resource named for their
model (``nvidia.com/a100: 8``), pods ask for that name, and a project's quota becomes
"n cards of model xx" instead of nodes. ``deviceshare.ModelResources`` names those
resources, either as a list (the card model is the part after the ``/``, upper-cased:
``nvidia.com/a100`` is model ``A100``) or as a map from resource name to model
(``{nvidia.com/a100: A100}``).

Named pools do two things:

- A node reporting a pool resource has that many whole cards of its model (the device
  model, ``asyncsched.model.devices``), so per-card books, reports and gpufrag see them.
- A card asked for generically (``nvidia.com/gpu``, a vGPU share, a gpushare card) on a
  node whose cards are of a pool's model counts against a queue's capability in the
  pool's resource (deviceshare's predicate). A card's model matches a pool when the pool's
  model is part of it, ignoring case (``A100`` matches ``NVIDIA-A100-SXM4-80GB``), as
  Volcano matches ``nvidia.com/use-gputype``; the longest such model wins (``A100`` over
  ``A10``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asyncsched.api.validation import dns1123_subdomain, qualified_name

if TYPE_CHECKING:
    from asyncsched.model.devices import NodeGpus
    from asyncsched.model.gpu_claims import GpuClaim

__all__ = [
    "MODEL_RESOURCES",
    "NO_POOLS",
    "GpuPools",
    "parse_pools",
    "pool_cards",
    "resource_name_problem",
]

MODEL_RESOURCES = "deviceshare.ModelResources"
"""The deviceshare argument naming the pools."""
_GENERIC = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class GpuPools:
    """The pools in force: (resource name, card model) pairs, in the order configured."""

    pools: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pools)

    @property
    def resources(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.pools)

    def model(self, resource: str) -> str:
        """The card model of a pool resource ("" for none)."""
        for name, model in self.pools:
            if name == resource:
                return model
        return ""

    def pool_of(self, card_model: str) -> str:
        """The pool resource whose model the card's model contains ("" for none)."""
        upper = card_model.upper()
        best, length = "", 0
        for name, model in self.pools:
            if model.upper() in upper and len(model) > length:
                best, length = name, len(model)
        return best


NO_POOLS = GpuPools()


def resource_name_problem(name: str) -> str:
    """Why ``name`` is not a valid Kubernetes extended resource name ("" when it is): a
    domain-prefixed name (``vendor.com/thing``), outside ``kubernetes.io``."""
    prefix, slash, rest = name.partition("/")
    if not slash:
        return "has no domain prefix (an extended resource looks like vendor.com/name)"
    if not prefix or dns1123_subdomain(prefix):
        return f"prefix {prefix!r} is not a DNS subdomain (lower case, digits, '-', '.')"
    if qualified_name(rest):
        return (
            f"name {rest!r} must be 1-63 letters, digits, '-', '_' or '.', starting and "
            "ending with a letter or digit"
        )
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return "the kubernetes.io domain is reserved for Kubernetes' own resources"
    if name == _GENERIC:
        return f"{_GENERIC} is the generic card, not a model's pool"
    return ""


def parse_pools(raw: Any, owner: str = "plugin deviceshare") -> GpuPools:
    """The pools of the ``deviceshare.ModelResources`` argument (None: no pools); a
    ValueError naming the owner, the key and the entry when it cannot be used."""
    if raw is None:
        return NO_POOLS
    where = f"{owner}: argument {MODEL_RESOURCES!r}"
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(raw, list):
        entries = [(str(name), str(name).partition("/")[2].upper()) for name in raw]
    elif isinstance(raw, Mapping):
        entries = [(str(name), "" if m is None else str(m).strip()) for name, m in raw.items()]
    else:
        raise ValueError(f"{where} must be a list of resource names or a map of name to model")
    seen: set[str] = set()
    for name, model in entries:
        problem = resource_name_problem(name)
        if problem:
            raise ValueError(f"{where}: {name!r} is not a valid resource name: {problem}")
        if not model:
            raise ValueError(f"{where}: {name!r} names no card model")
        if name in seen:
            raise ValueError(f"{where}: {name!r} is listed twice")
        seen.add(name)
    return GpuPools(tuple(entries))


def pool_cards(claim: GpuClaim, gpus: NodeGpus, pools: GpuPools) -> dict[str, int]:
    """Cards of each pool that ``claim`` holds (or would hold) on a node with ``gpus``:
    one per card it takes any part of (a vGPU share counts its card, as
    ``volcano.sh/vgpu-number`` counts cards). Cards of no pool are left out."""
    found: dict[str, int] = {}
    cards = gpus.cards
    if claim.source == "plain":
        # Every card a node reports under one resource has the node's model.
        card = next((c for c in cards if c.resource == claim.resource), None)
        if card is not None and claim.plain:
            pool = claim.resource if claim.resource in pools.resources else ""
            pool = pool or pools.pool_of(card.model)
            if pool:
                found[pool] = claim.plain
        return found
    for share in claim.shares:
        position = gpus.position(share.uuid) if share.uuid else -1
        if position < 0 and not share.uuid:
            position = next((i for i, c in enumerate(cards) if c.index == share.index), -1)
        if position >= 0:
            pool = pools.pool_of(cards[position].model)
            if pool:
                found[pool] = found.get(pool, 0) + 1
    return found
