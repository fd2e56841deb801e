"""The frames of a protobuf watch, cut out of the chunks the connection delivers.

Kubernetes writes each watch event as a 4-byte big-endian length, then that many bytes
(``k8s.io/apimachinery/pkg/util/framer``). Reading each length and each frame with its own
``readexactly`` cost about 2 µs a frame more than this in aiohttp's stream (two awaits,
a join and a copy of the chunk's rest each; benchmarks/watch_frames.py), and every pod of
a burst comes back through the watch when it is bound and again when it runs; here one
chunk is read with one await and all the frames it completes come out together.
"""

from __future__ import annotations

__all__ = ["FrameReader"]

_LENGTH = 4


class FrameReader:
    """Splits length-prefixed frames out of chunks cut anywhere.

    A frame split across chunks is kept as its parts and joined once, when its last byte
    has come, so a large object arriving in many chunks is copied once, not per chunk."""

    __slots__ = ("_held", "_needed", "_parts")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._held = 0
        self._needed = 0

    @property
    def partial(self) -> bool:
        """Bytes of an unfinished frame (or of its length) are held: the stream ended
        inside a frame if it ends now."""
        return bool(self._parts)

    def feed(self, chunk: bytes) -> list[bytes]:
        """The frames this chunk completes, in order (often none, often several)."""
        if self._parts:
            self._parts.append(chunk)
            self._held += len(chunk)
            if self._held < self._needed:
                return []
            chunk = b"".join(self._parts)
            self._parts = []
        frames: list[bytes] = []
        at = 0
        end = len(chunk)
        while end - at >= _LENGTH:
            stop = at + _LENGTH + int.from_bytes(chunk[at : at + _LENGTH], "big")
            if stop > end:
                break
            frames.append(chunk[at + _LENGTH : stop])
            at = stop
        if at < end:
            rest = chunk[at:] if at else chunk
            self._parts = [rest]
            self._held = len(rest)
            self._needed = (
                _LENGTH + int.from_bytes(rest[:_LENGTH], "big") if len(rest) >= _LENGTH else _LENGTH
            )
        return frames
