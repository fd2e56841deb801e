"""List-then-watch of one resource, kept going through every failure.

An informer lists a resource (in pages), hands every object to its handler,
then watches from the list's resourceVersion with bookmarks. A 410 Gone means
the version is too old: it lists again and reports what vanished meanwhile.
Any other error backs off exponentially and resumes. Objects that do not
decode are skipped and reported, never fatal.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.protobuf import (
    PROTOBUF,
    Message,
    ProtobufError,
    list_page,
    object_meta,
    read_message,
    status_of,
    watch_event,
)

__all__ = ["Backoff", "Informer", "ListPage", "ResourceKind"]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class ResourceKind(Generic[T]):
    """Where a resource lives and which Struct it decodes into."""

    kind: str
    path: str
    type: type[T]
    optional: bool = False
    """A CRD that may not be installed: a 404 counts as synced and empty."""
    field_selector: str = ""
    protobuf: Message | None = None
    """The object's protobuf fields: listed and watched in protobuf, about a third of the
    JSON's bytes and an encoding the API server already makes for the controller-manager's
    watch (protobuf.py, BENCHMARKS.md). None: JSON."""

    @property
    def api_version(self) -> str:
        """The kind's apiVersion, as its path names it (``/api/v1/...``: v1;
        ``/apis/GROUP/VERSION/...``: GROUP/VERSION), for Events written about its objects."""
        parts = self.path.split("/")
        return "/".join(parts[2:4]) if parts[1] == "apis" else parts[2]


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    resourceVersion: str = ""


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    # continue is a keyword in Python
    cont: str = msgspec.field(default="", name="continue")


class ListPage(msgspec.Struct):
    """One page of a list answer: its items undecoded, and where the next page starts."""

    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] = []


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Named(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Status(msgspec.Struct):
    code: int = 0
    message: str = ""


class Backoff:
    """Exponential backoff with jitter, reset after a success."""

    def __init__(self, initial: float = 0.5, maximum: float = 30.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self.delay = initial

    def next(self) -> float:
        delay = self.delay
        self.delay = min(self.delay * 2, self.maximum)
        return delay * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self.delay = self.initial


_EVENT = msgspec.json.Decoder(_Event)
_NAMED = msgspec.json.Decoder(_Named)

Handler = Callable[[Any], None]
DeleteHandler = Callable[[str, str], None]
BadHandler = Callable[[str, str, str, str], None]
"""(kind, namespace, name, problem) of an object that could not be decoded."""


class Informer(Generic[T]):
    """Keeps a handler told of every object of one resource."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceKind[T],
        on_upsert: Handler,
        on_delete: DeleteHandler,
        on_bad: BadHandler,
        *,
        page_size: int = 500,
        watch_seconds: int = 300,
    ) -> None:
        self.client = client
        self.resource = resource
        self.on_upsert = on_upsert
        self.on_delete = on_delete
        self.on_bad = on_bad
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.synced = asyncio.Event()
        self.known: dict[tuple[str, str], str] = {}
        """(namespace, name) -> resourceVersion of everything handed to on_upsert."""
        self.relists = 0
        self.errors = 0
        self._decoder = msgspec.json.Decoder(resource.type)

    async def run(self, rounds: int | None = None) -> None:
        """List and watch until cancelled (or for ``rounds`` list+watch cycles, for tests)."""
        backoff = Backoff()
        done = 0
        version = ""
        while rounds is None or done < rounds:
            done += 1
            try:
                if not version:
                    version = await self._list()
                    self.synced.set()
                version = await self._watch(version)
                backoff.reset()
            except KubeError as exc:
                if exc.status == 404 and self.resource.optional:
                    self.synced.set()
                    await asyncio.sleep(backoff.next() * 10)
                    continue
                if exc.status == 410:
                    version = ""
                    continue
                self.errors += 1
                delay = backoff.next()
                log.warning("%s: %s; retrying in %.1fs", self.resource.kind, exc, delay)
                await asyncio.sleep(delay)

    async def _list(self) -> str:
        """List everything (in pages); forget what vanished since the last list."""
        self.relists += 1
        seen: dict[tuple[str, str], str] = {}
        params = self._params({"limit": str(self.page_size)})
        version = ""
        while True:
            if self.resource.protobuf is not None:
                cont, page_version = self._list_protobuf(
                    await self.client.get(self.resource.path, params, accept=PROTOBUF), seen
                )
            else:
                cont, page_version = self._list_json(
                    await self.client.get(self.resource.path, params), seen
                )
            version = page_version or version
            if not cont:
                break
            params = self._params({"limit": str(self.page_size), "continue": cont})
        for namespace, name in set(self.known) - set(seen):
            self.on_delete(namespace, name)
        self.known = seen
        return version

    def _list_json(self, body: bytes, seen: dict[tuple[str, str], str]) -> tuple[str, str]:
        """Apply a page's items; its continue token and resourceVersion."""
        page = msgspec.json.decode(body, type=ListPage)
        for raw in page.items:
            key = self._apply(raw)
            if key is not None:
                seen[key[0]] = key[1]
        return page.metadata.cont, page.metadata.resourceVersion

    def _list_protobuf(self, body: bytes, seen: dict[tuple[str, str], str]) -> tuple[str, str]:
        try:
            meta, items = list_page(body)
        except ProtobufError as exc:
            raise KubeError(0, f"{self.resource.kind}: unreadable list answer: {exc}") from None
        for start, stop in items:
            key = self._apply_protobuf(body, start, stop)
            if key is not None:
                seen[key[0]] = key[1]
        return str(meta.get("continue", "")), str(meta.get("resourceVersion", ""))

    async def _watch(self, version: str) -> str:
        params = self._params(
            {
                "watch": "true",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(self.watch_seconds),
            }
        )
        if self.resource.protobuf is not None:
            return await self._watch_protobuf(params, version)
        async for line in self.client.stream(
            self.resource.path, params, timeout=self.watch_seconds + 30
        ):
            try:
                event = _EVENT.decode(line)
            except msgspec.DecodeError:
                log.warning("%s: unreadable watch line skipped", self.resource.kind)
                continue
            if event.type == "ERROR":
                status = msgspec.json.decode(event.object, type=_Status)
                raise KubeError(status.code, status.message)
            version = self._event(
                event.type,
                version,
                functools.partial(_lenient_name, event.object),
                functools.partial(self._apply, event.object),
            )
        return version

    async def _watch_protobuf(self, params: dict[str, str], version: str) -> str:
        async for frames in self.client.stream_protobuf(
            self.resource.path, params, timeout=self.watch_seconds + 30
        ):
            for frame in frames:
                try:
                    kind, start, stop = watch_event(frame)
                    if kind == "ERROR":
                        raise KubeError(*status_of(frame, start, stop))
                except ProtobufError:
                    log.warning("%s: unreadable watch frame skipped", self.resource.kind)
                    continue
                version = self._event(
                    kind,
                    version,
                    functools.partial(_lenient_meta, frame, start, stop),
                    functools.partial(self._apply_protobuf, frame, start, stop),
                )
        return version

    def _event(
        self,
        kind: str,
        version: str,
        named: Callable[[], _Meta],
        apply: Callable[[], tuple[tuple[str, str], str] | None],
    ) -> str:
        """One watch event, however encoded: a bookmark moves the version on, a deletion
        forgets the object, anything else is applied (one decode: its metadata has the
        version). Returns the version to resume from."""
        if kind == "BOOKMARK" or kind == "DELETED":
            meta = named()
            if kind == "DELETED":
                self.known.pop((meta.namespace, meta.name), None)
                self.on_delete(meta.namespace, meta.name)
            return meta.resourceVersion or version
        applied = apply()
        return (applied[1] if applied is not None else named().resourceVersion) or version

    def _params(self, params: dict[str, str]) -> dict[str, str]:
        if self.resource.field_selector:
            params["fieldSelector"] = self.resource.field_selector
        return params

    def _apply(self, raw: msgspec.Raw) -> tuple[tuple[str, str], str] | None:
        try:
            obj = self._decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            named = _lenient_name(raw)
            self.on_bad(self.resource.kind, named.namespace, named.name, str(exc))
            return None
        return self._upsert(obj)

    def _apply_protobuf(
        self, buf: bytes, start: int, stop: int
    ) -> tuple[tuple[str, str], str] | None:
        assert self.resource.protobuf is not None
        try:
            fields = read_message(buf, start, stop, self.resource.protobuf)
            obj = msgspec.convert(fields, self.resource.type)
        except (msgspec.ValidationError, ProtobufError) as exc:
            named = _lenient_meta(buf, start, stop)
            self.on_bad(self.resource.kind, named.namespace, named.name, str(exc))
            return None
        return self._upsert(obj)

    def _upsert(self, obj: Any) -> tuple[tuple[str, str], str] | None:
        meta = obj.metadata
        key = (meta.namespace, meta.name)
        try:
            self.on_upsert(obj)
        except ValueError as exc:
            self.on_bad(self.resource.kind, meta.namespace, meta.name, str(exc))
            return None
        self.known[key] = meta.resource_version
        return key, meta.resource_version


def _lenient_name(raw: msgspec.Raw) -> _Meta:
    try:
        return _NAMED.decode(raw).metadata
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _Meta(name="?")


def _lenient_meta(buf: bytes, start: int, stop: int) -> _Meta:
    """``_lenient_name`` for an object in protobuf."""
    try:
        meta = object_meta(buf, start, stop)
    except ProtobufError:
        return _Meta(name="?")
    return _Meta(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        resourceVersion=str(meta.get("resourceVersion", "")),
    )
