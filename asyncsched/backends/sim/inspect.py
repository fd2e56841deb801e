"""What the simulated API server holds, as documents: for tests, tools and curious users."""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from asyncsched.backends.sim.store import KINDS, ObjectStore

__all__ = ["list_objects"]

_BY_NAME = {kind.__name__: kind for kind in KINDS}


def list_objects(store: ObjectStore, kind: str) -> dict[str, dict[str, Any]]:
    """Every live object of ``kind`` as the API would show it, by ``namespace/name``
    (cluster-scoped kinds by name). A pod made from a fuller document (env, volumes,
    hostname...) shows that document with the live metadata, nodeName and status."""
    found = _BY_NAME.get(kind)
    if found is None:
        raise KeyError(f"the simulator keeps no {kind} objects")
    out = {}
    for key, obj in sorted(store.list(found).items()):
        live: dict[str, Any] = {"apiVersion": obj.api_version, **msgspec.to_builtins(obj)}
        raw = store.raw(found, key)
        if raw is not None:
            doc = copy.deepcopy(raw)
            doc["metadata"] = {**doc.get("metadata", {}), **live["metadata"]}
            doc.pop("status", None)
            spec = doc.setdefault("spec", {})
            if live.get("spec", {}).get("nodeName"):
                spec["nodeName"] = live["spec"]["nodeName"]
            doc["status"] = live.get("status", {})
            live = doc
        out[key] = live
    return out
