"""What reading the pod watch's frames costs, before decoding the pods in them.

    python benchmarks/watch_frames.py [--frames 30000] [--chunk 65536] [--installed]

A stream of ``--frames`` MODIFIED events, each the recorded Running pod of
tests/fixtures/protobuf (as the API server encodes it), goes through aiohttp's
``StreamReader`` in ``--chunk``-byte chunks, the way the client's watch receives it (a
transport that never pauses). Each way of reading it is timed on the CPU clock, in µs a
frame, the feeding included (the same in every way):

- ``readexactly``: the length, then the frame, each with its own await (the watch until
  this stop);
- ``frame_reader``: one ``readany`` a chunk, cut by ``FrameReader`` (the watch now);
- ``watch_event_py`` / ``watch_event``: each frame's type and object span on top of
  ``frame_reader``, read by the Python twin and by the compiled reader.

Best of ``--repeat`` for each. The last line is one JSON object: {"frames", "chunk",
"frame_bytes", "us_per_frame": {way: µs}, plus target.py's identity}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import target

target.put_on_path(sys.argv)

from aiohttp.base_protocol import BaseProtocol  # noqa: E402
from aiohttp.streams import StreamReader  # noqa: E402

from asyncsched.backends.kube import protobuf  # noqa: E402
from asyncsched.backends.kube.frames import FrameReader  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests/fixtures/protobuf/pod-running.pb"


class _Transport:
    """Never pauses: the reader, not the socket, is what is timed."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def is_closing(self) -> bool:
        return False


def _field(number: int, payload: bytes) -> bytes:
    def varint(value: int) -> bytes:
        out = bytearray()
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
        return bytes(out)

    return varint(number << 3 | 2) + varint(len(payload)) + payload


async def _read_exactly(reader: StreamReader) -> int:
    count = 0
    while True:
        try:
            size = int.from_bytes(await reader.readexactly(4), "big")
            await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return count
        count += 1


def _cut(read: Callable[[bytes], object] | None) -> Callable[[StreamReader], Awaitable[int]]:
    async def run(reader: StreamReader) -> int:
        frames, count = FrameReader(), 0
        while chunk := await reader.readany():
            for frame in frames.feed(chunk):
                if read is not None:
                    read(frame)
                count += 1
        return count

    return run


async def _timed(chunks: list[bytes], way: Callable[[StreamReader], Awaitable[int]]) -> float:
    loop = asyncio.get_running_loop()
    protocol = BaseProtocol(loop)
    protocol.transport = _Transport()  # type: ignore[assignment]
    reader = StreamReader(protocol, 2**16, loop=loop)

    async def feed() -> None:
        for chunk in chunks:
            reader.feed_data(chunk)
            await asyncio.sleep(0)
        reader.feed_eof()

    began = time.process_time()
    count, _ = await asyncio.gather(way(reader), feed())
    return (time.process_time() - began) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=30000)
    parser.add_argument("--chunk", type=int, default=65536, help="bytes a read delivers")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    args = parser.parse_args()
    measured = target.checked_identity(args.installed)
    frame = _field(1, b"MODIFIED") + _field(2, _field(1, FIXTURE.read_bytes()))
    stream = (len(frame).to_bytes(4, "big") + frame) * args.frames
    chunks = [stream[at : at + args.chunk] for at in range(0, len(stream), args.chunk)]
    ways: dict[str, Callable[[StreamReader], Awaitable[int]]] = {
        "readexactly": _read_exactly,
        "frame_reader": _cut(None),
        "watch_event_py": _cut(protobuf.watch_event_py),
    }
    if protobuf.COMPILED:
        ways["watch_event"] = _cut(protobuf.watch_event)
    times = {
        name: round(min(asyncio.run(_timed(chunks, way)) for _ in range(args.repeat)), 2)
        for name, way in ways.items()
    }
    print(json.dumps({"frames": args.frames, "chunk": args.chunk, "frame_bytes": len(frame),
                      "us_per_frame": times, **measured}))  # fmt: skip


if __name__ == "__main__":
    main()
