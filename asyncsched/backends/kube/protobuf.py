"""Kubernetes' protobuf encoding, read into the same values its JSON decodes to.

The API server encodes every pod update for the scheduler's watch. In protobuf a pod is
about a third of its JSON's size (no field names, managedFields not spelt out as JSON),
and the encoding costs the server correspondingly less (BENCHMARKS.md). No generated
Python types exist for Kubernetes' messages here, so a message is described by a table
of the fields we read: their number, their JSON name and how to read them. Fields not
in the table are skipped by their length, as the JSON decoders skip undeclared keys.

JSON leaves out a zero value when its Go field is ``omitempty``; protobuf writes every
non-pointer field. So a zero value is dropped unless the field says ``keep`` (a Go
pointer, whose zero is set on purpose, or a field JSON always carries): the JSON and
the protobuf of one object then give equal dicts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from asyncsched.model.kernels import PURE_ENV

__all__ = [
    "COMPILED",
    "ENVELOPE",
    "LABEL_SELECTOR",
    "OBJECT_META",
    "OWNER_REFERENCE",
    "PROTOBUF",
    "PROTOBUF_WATCH",
    "SELECTOR_REQUIREMENT",
    "Field",
    "Message",
    "ProtobufError",
    "fields",
    "list_page",
    "object_meta",
    "read_message",
    "read_message_py",
    "status_of",
    "time_text",
    "unwrap",
    "watch_event",
    "watch_event_py",
]

PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = PROTOBUF + ";stream=watch"

ENVELOPE = b"k8s\x00"
"""The four bytes before every protobuf object the API server sends (its runtime.Unknown)."""


class ProtobufError(ValueError):
    """Bytes that are not the protobuf message they should be."""


# how a field's bytes become a JSON value
STRING = 0
INT = 1
BOOL = 2
MESSAGE = 3
INLINE = 4
"""A Go struct embedded without a JSON name: its fields land in the parent's dict."""
STRING_MAP = 5
QUANTITY_MAP = 6
QUANTITY = 7
TIME = 8


class Field(NamedTuple):
    """One field we read: a tuple, so the compiled reader takes it apart by index."""

    name: str
    kind: int = STRING
    message: Message | None = None
    repeated: bool = False
    keep: bool = False
    """Keep a zero value: the Go field is a pointer, or JSON carries it even when zero."""


Message = dict[int, Field]
"""The fields of one message we read, by number."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("the message ends inside a number")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos  # a tenth byte's high bits are dropped
        shift += 7
        if shift > 63:
            raise ProtobufError("a number longer than ten bytes")


def fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(number, value, start, stop) of each field: ``value`` for a number, the span for bytes."""
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _varint(buf, pos)
        wire = tag & 7
        if wire == 2:
            size, pos = _varint(buf, pos)
            stop = pos + size
            if stop > end:
                raise ProtobufError("a field runs past the end of its message")
            yield tag >> 3, 0, pos, stop
            pos = stop
        elif wire == 0:
            value, pos = _varint(buf, pos)
            yield tag >> 3, value, pos, pos
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"wire type {wire} is not one Kubernetes uses")
    if pos != end:
        raise ProtobufError("a number runs past the end of its message")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(buf: bytes, start: int, stop: int) -> str:
    """Bytes that are not UTF-8 (a Go string may hold any) become U+FFFD, as in the JSON
    the API server would have sent."""
    return buf[start:stop].decode(errors="replace")


_TIMES: dict[int, str] = {}
"""Recent times as text: the pods of a burst share their seconds."""


def _time(buf: bytes, start: int, stop: int) -> str | None:
    """A metav1.Time as its JSON (RFC 3339, whole seconds, UTC); the zero time is null."""
    seconds = 0
    nanos = 0
    for number, value, _, _ in fields(buf, start, stop):
        if number == 1:
            seconds = _signed(value)
        elif number == 2:
            nanos = value
    if seconds == 0 and nanos == 0:
        return None
    return time_text(seconds)


def time_text(seconds: int) -> str:
    """A metav1.Time's JSON: RFC 3339 in UTC, whole seconds."""
    text = _TIMES.get(seconds)
    if text is None:
        if len(_TIMES) >= 4096:
            _TIMES.clear()
        try:
            moment = time.gmtime(seconds)
        except (OverflowError, OSError, ValueError):
            raise ProtobufError(f"a time of {seconds} seconds is out of range") from None
        text = _TIMES[seconds] = time.strftime("%Y-%m-%dT%H:%M:%SZ", moment)
    return text


def _quantity(buf: bytes, start: int, stop: int) -> str:
    for number, _, begin, end in fields(buf, start, stop):
        if number == 1:
            return _text(buf, begin, end)
    return "0"


def _entry(buf: bytes, start: int, stop: int, quantity: bool) -> tuple[str, str]:
    key = value = ""
    for number, _, begin, end in fields(buf, start, stop):
        if number == 1:
            key = _text(buf, begin, end)
        elif number == 2:
            value = _quantity(buf, begin, end) if quantity else _text(buf, begin, end)
    return key, value


def read_message_py(
    buf: bytes, start: int, stop: int, message: Message, into: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON-shaped dict of the message in ``buf[start:stop]``: the twin of the
    compiled reader (ext/_protowire.pyx), and what serves without it."""
    if start < 0 or stop > len(buf) or start > stop:
        raise ProtobufError("a span outside the bytes")
    try:
        return _read(buf, start, stop, message, {} if into is None else into)
    except IndexError:
        raise ProtobufError("the message ends inside a field") from None


def _read(
    buf: bytes, start: int, stop: int, message: Message, out: dict[str, Any]
) -> dict[str, Any]:
    """``read_message_py`` without its checks, for each nested message."""
    for number, value, begin, end in fields(buf, start, stop):
        spec = message.get(number)
        if spec is None:
            continue
        kind = spec.kind
        item: Any
        if kind == STRING:
            item = _text(buf, begin, end)
        elif kind == MESSAGE:
            assert spec.message is not None
            item = _read(buf, begin, end, spec.message, {})
        elif kind == INT:
            item = _signed(value)
        elif kind == BOOL:
            item = bool(value)
        elif kind in (STRING_MAP, QUANTITY_MAP):
            key, text = _entry(buf, begin, end, kind == QUANTITY_MAP)
            out.setdefault(spec.name, {})[key] = text
            continue
        elif kind == INLINE:
            assert spec.message is not None
            _read(buf, begin, end, spec.message, out)
            continue
        elif kind == QUANTITY:
            item = _quantity(buf, begin, end)
        else:
            item = _time(buf, begin, end)
            if item is None:
                continue
        if spec.repeated:
            out.setdefault(spec.name, []).append(item)
        elif item or spec.keep or kind == MESSAGE:
            out[spec.name] = item
    return out


# meta/v1's messages, which every kind shares
OWNER_REFERENCE: Message = {
    5: Field("apiVersion"),
    1: Field("kind"),
    3: Field("name"),
    4: Field("uid"),
    6: Field("controller", BOOL, keep=True),
    7: Field("blockOwnerDeletion", BOOL, keep=True),
}

OBJECT_META: Message = {
    1: Field("name"),
    2: Field("generateName"),
    3: Field("namespace"),
    5: Field("uid"),
    6: Field("resourceVersion"),
    7: Field("generation", INT),
    8: Field("creationTimestamp", TIME),
    9: Field("deletionTimestamp", TIME),
    11: Field("labels", STRING_MAP),
    12: Field("annotations", STRING_MAP),
    13: Field("ownerReferences", MESSAGE, OWNER_REFERENCE, repeated=True),
}

SELECTOR_REQUIREMENT: Message = {
    1: Field("key", keep=True),
    2: Field("operator", keep=True),
    3: Field("values", repeated=True),
}

LABEL_SELECTOR: Message = {
    1: Field("matchLabels", STRING_MAP),
    2: Field("matchExpressions", MESSAGE, SELECTOR_REQUIREMENT, repeated=True),
}

read_message: Callable[..., dict[str, Any]] = read_message_py
"""The compiled reader when it is built (and ASYNCSCHED_PURE does not ask for the
twins), else the twin."""
COMPILED = False

if os.environ.get(PURE_ENV, "") in ("", "0"):
    try:
        from asyncsched import _protowire  # type: ignore[attr-defined]
    except ImportError:
        pass
    else:
        _protowire.configure(ProtobufError, time_text)
        read_message = _protowire.read_message
        COMPILED = True

_UNKNOWN_RAW = 2


def unwrap(buf: bytes, start: int = 0, stop: int | None = None) -> tuple[int, int]:
    """The span of the object inside the API server's envelope (magic bytes + runtime.Unknown)."""
    stop = len(buf) if stop is None else stop
    if buf[start : start + 4] != ENVELOPE:
        raise ProtobufError("not a Kubernetes protobuf object (no k8s envelope)")
    for number, _, begin, end in fields(buf, start + 4, stop):
        if number == _UNKNOWN_RAW:
            return begin, end
    return stop, stop


def watch_event_py(frame: bytes) -> tuple[str, int, int]:
    """The type of a watch frame's event and the span of its object (unwrapped).

    ``watch_event`` is this, or its compiled twin: read for every pod update."""
    kind = ""
    start = stop = 0
    for number, _, begin, end in fields(frame, 0, len(frame)):
        if number == 1:
            kind = _text(frame, begin, end)
        elif number == 2:
            for inner, _, raw_begin, raw_end in fields(frame, begin, end):
                if inner == 1:
                    start, stop = unwrap(frame, raw_begin, raw_end)
    return kind, start, stop


watch_event: Callable[[bytes], tuple[str, int, int]] = (
    _protowire.watch_event if COMPILED else watch_event_py
)


_STATUS: Message = {6: Field("code", INT), 3: Field("message")}


def status_of(buf: bytes, start: int = 0, stop: int | None = None) -> tuple[int, str]:
    """The code and message of a metav1.Status (an error answer or a watch's ERROR event)."""
    stop = len(buf) if stop is None else stop
    if buf[start : start + 4] == ENVELOPE:
        start, stop = unwrap(buf, start, stop)
    status = read_message(buf, start, stop, _STATUS)
    return int(status.get("code", 0)), str(status.get("message", ""))


_LIST_META: Message = {2: Field("resourceVersion"), 3: Field("continue")}
_META_ONLY: Message = {1: Field("metadata", MESSAGE, OBJECT_META)}


def list_page(buf: bytes) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """A list answer: its metadata (resourceVersion, continue) and the span of each item."""
    start, stop = unwrap(buf)
    meta: dict[str, Any] = {}
    items: list[tuple[int, int]] = []
    for number, _, begin, end in fields(buf, start, stop):
        if number == 1:
            meta = read_message(buf, begin, end, _LIST_META)
        elif number == 2:
            items.append((begin, end))
    return meta, items


def object_meta(buf: bytes, start: int, stop: int) -> dict[str, Any]:
    """Only an object's metadata: what a bookmark or a deletion is read for."""
    meta: dict[str, Any] = read_message(buf, start, stop, _META_ONLY).get("metadata", {})
    return meta
