"""A protobuf watch's frames come out whole and in order however the connection cuts them."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from asyncsched.backends.kube.frames import FrameReader


def _framed(frames: list[bytes]) -> bytes:
    return b"".join(len(frame).to_bytes(4, "big") + frame for frame in frames)


@st.composite
def _cut(draw: st.DrawFn) -> tuple[list[bytes], list[bytes]]:
    frames = draw(st.lists(st.binary(max_size=300), max_size=12))
    stream = _framed(frames)
    cuts = sorted(draw(st.sets(st.integers(0, len(stream)), max_size=20)))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    return frames, chunks


@given(_cut())
def test_frames_come_out_whole_and_in_order(case: tuple[list[bytes], list[bytes]]) -> None:
    frames, chunks = case
    reader = FrameReader()
    seen: list[bytes] = []
    for chunk in chunks:
        seen.extend(reader.feed(chunk))
    assert seen == frames
    assert not reader.partial


@given(_cut(), st.data())
def test_a_stream_ending_inside_a_frame_is_told(
    case: tuple[list[bytes], list[bytes]], data: st.DataObject
) -> None:
    frames, chunks = case
    stream = b"".join(chunks)
    if not stream:
        return
    end = data.draw(st.integers(1, len(stream)), label="end")
    reader = FrameReader()
    seen = reader.feed(stream[:end])
    whole = _framed(seen)
    assert seen == frames[: len(seen)]
    assert reader.partial == (len(whole) < end)


def test_a_byte_at_a_time() -> None:
    frames = [b"", b"a", b"pod" * 1000, b"x"]
    reader = FrameReader()
    seen: list[bytes] = []
    for byte in _framed(frames):
        seen.extend(reader.feed(bytes([byte])))
    assert seen == frames
