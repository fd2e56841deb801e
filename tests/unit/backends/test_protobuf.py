"""The protobuf pod reader gives the Struct the JSON gives, and its twins agree on any bytes.

The fixtures in tests/fixtures/protobuf were answered by a real kube-apiserver 1.36
(the e2e test test_pod_protobuf.py checks the same on pods Hypothesis makes): a pod
using every field ``Pod`` declares, terminating under a finalizer, in JSON and in
protobuf; a pod KWOK runs (conditions, container statuses, times); a watch stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api import Pod
from asyncsched.backends.kube import protobuf
from asyncsched.backends.kube.client import _refusal
from asyncsched.backends.kube.frames import FrameReader
from asyncsched.backends.kube.pod_protobuf import POD
from asyncsched.backends.kube.protobuf import (
    INLINE,
    MESSAGE,
    ProtobufError,
    list_page,
    read_message_py,
    status_of,
    unwrap,
    watch_event,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "protobuf"


def _pod(name: str) -> tuple[Pod, Pod]:
    """(from the JSON, from the protobuf) of one recorded pod."""
    data = (FIXTURES / f"{name}.pb").read_bytes()
    start, stop = unwrap(data)
    from_protobuf = msgspec.convert(protobuf.read_message(data, start, stop, POD), Pod)
    from_json = msgspec.json.decode((FIXTURES / f"{name}.json").read_bytes(), type=Pod)
    return from_json, from_protobuf


@pytest.mark.parametrize("name", ["pod-rich", "pod-running"])
def test_a_pod_read_from_protobuf_equals_the_same_pod_read_from_json(name: str) -> None:
    from_json, from_protobuf = _pod(name)
    assert from_protobuf == from_json


def test_the_recorded_rich_pod_exercises_the_fields_that_need_care() -> None:
    """Pointers set to zero, fields inlined from embedded structs, times, quantities."""
    _, pod = _pod("pod-rich")
    assert pod.spec.priority == 0  # a pointer the API server set to 0: not None
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.owner_references[0].controller is True
    assert pod.spec.containers[0].ports[0].host_ip == "1.2.3.4"
    assert pod.spec.containers[0].resources.requests["cpu"] == "1500m"
    volumes = {v.name: v for v in pod.spec.volumes}
    assert volumes["v1"].empty_dir == {} and volumes["v1"].host_path is None
    assert volumes["v2"].persistent_volume_claim == {"claimName": "pvc"}
    assert volumes["v3"].host_path == {"path": "/tmp", "type": ""}
    spread = pod.spec.topology_spread_constraints[0]
    assert (spread.min_domains, spread.node_taints_policy) == (2, "Ignore")
    toleration = pod.spec.tolerations[1]
    assert (toleration.key, toleration.operator, toleration.toleration_seconds) == (
        "",
        "Exists",
        30,
    )
    _, running = _pod("pod-running")
    assert running.status.phase == "Running" and running.status.start_time
    assert {c.type for c in running.status.conditions} >= {"Ready", "PodScheduled"}


def _struct_names(kind: Any, seen: frozenset[type] = frozenset()) -> dict[str, Any]:
    """A Struct's JSON names, each with the names under it (None below a plain value)."""
    names: dict[str, Any] = {}
    hints = get_type_hints(kind)
    for field in msgspec.structs.fields(kind):
        if field.encode_name == "kind" and field.name != "kind":
            continue
        names[field.encode_name] = _names_under(hints[field.name], seen | {kind})
    return names


def _names_under(hint: Any, seen: frozenset[type]) -> Any:
    for inner in (hint, *get_args(hint)):
        if isinstance(inner, type) and issubclass(inner, msgspec.Struct) and inner not in seen:
            return _struct_names(inner, seen)
        if get_origin(inner) is list:
            return _names_under(get_args(inner)[0], seen)
    return None


def _table_names(message: dict[int, Any], below_plain: bool) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for field in message.values():
        if field.kind == INLINE:
            names.update(_table_names(field.message, below_plain))
        elif field.kind == MESSAGE and not below_plain:
            names[field.name] = _table_names(field.message, below_plain)
        else:
            names[field.name] = None
    return names


def _prune(struct: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """The table's names, cut where the Struct holds a plain dict (its inside is JSON's)."""
    return {
        name: (
            _prune(struct[name], under)
            if isinstance(under, dict) and isinstance(struct.get(name), dict)
            else None
        )
        for name, under in table.items()
    }


def test_the_pod_table_reads_exactly_the_fields_the_pod_struct_declares() -> None:
    """A field added to ``Pod`` (or one of its Structs) and not to pod_protobuf.py fails here;
    otherwise the protobuf watch would never see it."""
    declared = _struct_names(Pod)
    declared.pop("apiVersion")  # the envelope's, not the message's
    declared["status"]["conditions"].pop("transitionID")  # Condition's, for PodGroups only
    assert _prune(declared, _table_names(POD, below_plain=False)) == declared


def test_a_watch_stream_gives_each_event_its_type_and_object() -> None:
    data = (FIXTURES / "watch-pods.pb").read_bytes()
    events = []
    pos = 0
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        frame = data[pos + 4 : pos + 4 + size]
        pos += 4 + size
        kind, start, stop = watch_event(frame)
        pod = msgspec.convert(protobuf.read_message(frame, start, stop, POD), Pod)
        events.append((kind, pod.metadata.name))
    assert ("ADDED", "p1") in events and ("ADDED", "b1") in events


def test_a_list_answer_gives_its_version_and_items() -> None:
    pod = (FIXTURES / "pod-running.pb").read_bytes()
    item = pod[unwrap(pod)[0] : unwrap(pod)[1]]
    list_meta = b"\x12\x03276\x1a\x04next"  # resourceVersion, continue
    body = _field(1, list_meta) + _field(2, item) + _field(2, item)
    envelope = protobuf.ENVELOPE + _field(2, body)
    meta, items = list_page(envelope)
    assert meta == {"resourceVersion": "276", "continue": "next"}
    assert [envelope[a:b] for a, b in items] == [item, item]


def test_an_error_status_gives_its_code_and_message() -> None:
    status = _field(3, b"too old resource version") + b"\x30" + _varint(410)
    assert status_of(protobuf.ENVELOPE + _field(2, status)) == (410, "too old resource version")


def test_a_refusal_answered_in_protobuf_is_told_in_words() -> None:
    """A request that asked for protobuf gets its error Status in protobuf too."""
    status = _field(3, b'pods is forbidden: User "x" cannot list resource "pods"')
    body = protobuf.ENVELOPE + _field(2, status + b"\x30" + _varint(403))
    assert _refusal(body, "Forbidden") == (
        'pods is forbidden: User "x" cannot list resource "pods"',
        (),
    )
    assert _refusal(protobuf.ENVELOPE + b"\xff", "Forbidden") == ("Forbidden", ())


# -- the twins --------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


@st.composite
def _messages(draw: st.DrawFn, message: dict[int, Any], depth: int = 0) -> bytes:
    """Encodings of a table's message: known and unknown fields, every wire type, any
    order, numbers of any size (negative ones take ten bytes), now and then a bad byte."""
    out = bytearray()
    for _ in range(draw(st.integers(0, 6))):
        number = draw(st.sampled_from([*message, 99]))
        field = message.get(number)
        wire = draw(st.sampled_from([0, 1, 2, 5])) if field is None else None
        if field is not None and field.message is not None and depth < 4:
            out += _field(number, draw(_messages(field.message, depth + 1)))
        elif (field is not None and field.kind in (protobuf.INT, protobuf.BOOL)) or wire == 0:
            out += _varint(number << 3) + _varint(draw(st.integers(-(2**63), 2**64 - 1)))
        elif wire == 1:
            out += _varint(number << 3 | 1) + draw(st.binary(min_size=8, max_size=8))
        elif wire == 5:
            out += _varint(number << 3 | 5) + draw(st.binary(min_size=4, max_size=4))
        else:
            out += _field(number, draw(st.text(max_size=20)).encode())
    if draw(st.integers(0, 9)) == 0 and out:  # damage: a byte changed or the end cut off
        at = draw(st.integers(0, len(out) - 1))
        out[at] = draw(st.integers(0, 255)) if draw(st.booleans()) else out[at]
        out = out[: draw(st.integers(0, len(out)))]
    return bytes(out)


native = pytest.importorskip("asyncsched._protowire")
native.configure(
    ProtobufError, protobuf.time_text
)  # as protobuf.py does, even when told not to use it


def _outcome(reader: Any, data: bytes) -> Any:
    try:
        return reader(data, 0, len(data), POD)
    except ProtobufError:
        return ProtobufError


def test_a_length_that_lies_past_its_message_is_refused_not_read() -> None:
    """The metadata's one byte is a string's tag; its length byte is the next field's. The
    compiled reader once took the length from there and read past the buffer."""
    data = _field(1, b"\x0a") + b"\x7f"
    for reader in (native.read_message, read_message_py):
        assert _outcome(reader, data) is ProtobufError
    nested = _field(2, _field(2, b"\x0a") + b"\x7f")  # spec, containers: the same inside
    for reader in (native.read_message, read_message_py):
        assert _outcome(reader, nested) is ProtobufError


# No deadline: these compare answers, not times. Hypothesis's default is 200 ms of wall
# clock per example (an example takes under 0.5 ms here, quiet); on a loaded machine this
# test failed twice, once a run, and never on a rerun: a stall past the deadline is the
# likely cause, not confirmed.
@settings(max_examples=2000, deadline=None)  # a crash of the compiled reader once took thousands
@given(_messages(POD))
def test_the_compiled_reader_and_its_twin_agree_on_any_message(data: bytes) -> None:
    assert _outcome(native.read_message, data) == _outcome(read_message_py, data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_the_compiled_reader_and_its_twin_agree_on_any_bytes(data: bytes) -> None:
    """Only ProtobufError escapes either, whatever the bytes."""
    assert _outcome(native.read_message, data) == _outcome(read_message_py, data)


@st.composite
def _watch_frames(draw: st.DrawFn) -> bytes:
    """WatchEvent encodings: a type, an object in its envelope (or not), extra fields,
    now and then damaged as ``_messages`` damages them."""
    pod = draw(_messages(POD))
    unknown = _field(1, b"\x0a\x03Pod") + _field(2, pod) if draw(st.booleans()) else pod
    bad = st.sampled_from([b"k8s", b"", b"k9s\x00"])
    envelope = draw(bad) if draw(st.integers(0, 3)) == 3 else protobuf.ENVELOPE
    raw = _field(1, envelope + unknown)
    parts = [
        _field(1, draw(st.sampled_from([b"ADDED", b"MODIFIED", b"\xff", b""]))),
        _field(2, raw + draw(_messages({}))),
        draw(_messages({})),
    ]
    out = bytearray(b"".join(draw(st.permutations(parts))))
    if draw(st.integers(0, 4)) == 4 and out:
        at = draw(st.integers(0, len(out) - 1))
        out[at] = draw(st.integers(0, 255))
        out = out[: draw(st.integers(0, len(out)))]
    return bytes(out)


def _event_outcome(reader: Any, frame: bytes) -> Any:
    try:
        return reader(frame)
    except ProtobufError:
        return ProtobufError


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_watch_frames(), st.binary(max_size=120)))
def test_the_compiled_watch_event_and_its_twin_agree_on_any_frame(frame: bytes) -> None:
    assert _event_outcome(native.watch_event, frame) == _event_outcome(
        protobuf.watch_event_py, frame
    )


def test_the_recorded_watch_stream_reads_alike_in_both_twins() -> None:
    frames = FrameReader().feed((FIXTURES / "watch-pods.pb").read_bytes())
    read = [native.watch_event(frame) for frame in frames]
    assert read == [protobuf.watch_event_py(frame) for frame in frames]
    assert {kind for kind, _, _ in read} >= {"ADDED"}
    assert all(stop > start for _, start, stop in read)


def test_the_compiled_reader_serves_unless_the_twins_are_asked_for() -> None:
    assert protobuf.COMPILED and protobuf.read_message is native.read_message
    assert protobuf.watch_event is native.watch_event


def test_bytes_that_are_not_utf8_read_as_the_json_would_show_them() -> None:
    """A Go string may hold any bytes; the API server's JSON shows the bad ones as U+FFFD."""
    entry = _field(1, b"note") + _field(2, b"caf\xe9")
    data = _field(1, _field(1, b"p") + _field(12, entry))  # metadata: name, annotations
    for reader in (native.read_message, read_message_py):
        meta = reader(data, 0, len(data), POD)["metadata"]
        assert meta == {"name": "p", "annotations": {"note": "caf\ufffd"}}
