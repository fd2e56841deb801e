"""Reading one input of ``asyncsched simulate`` (a file, or stdin for ``-``) as text.

YAML is UTF-8. A byte-order mark says otherwise, and is honoured as kubectl
honours it: UTF-16 with a BOM (what Windows tools write) is decoded, so is
UTF-8 with one. Anything else that is not UTF-8 (a binary file, UTF-16
without a BOM) is refused, naming the file and where the first bad byte is.

Text nested deeper than :data:`MAX_DEPTH` is refused too: libyaml's composer
recurses in C and crashes the process on tens of thousands of levels
(``- - - - ...``), and Python code walking such a tree would hit its
recursion limit. No Kubernetes object comes near that depth.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import BinaryIO

import yaml

from asyncsched.backends.sim.fields import ManifestError

__all__ = ["MAX_DEPTH", "STDIN", "STDIN_NAME", "check_depth", "decode_text", "read_input"]

MAX_DEPTH = 100
"""Deepest nesting of collections accepted (a Job's pod template env entry is about 12)."""
_DEEP_LINE = re.compile(rf"^[ \t?:-]{{{MAX_DEPTH // 4}}}", re.MULTILINE)
"""A line starting with this many spaces or block indicators might nest deeply."""
_DOCUMENT = re.compile(r"^---(?=[ \t\r\n]|\Z)", re.MULTILINE)
"""A document marker, which no flow collection can cross."""

STDIN = "-"
"""The file name that means standard input, as in kubectl and ``asyncsched job run``."""
STDIN_NAME = "<stdin>"
"""How messages name standard input."""

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_EXPECTED = "YAML must be UTF-8, or UTF-16 with a byte-order mark"


def read_input(path: str | Path, stdin: BinaryIO) -> tuple[str, str]:
    """(text, name for messages) of ``path``, or of ``stdin`` when ``path`` is ``-``."""
    if str(path) == STDIN:
        return decode_text(stdin.read(), STDIN_NAME), STDIN_NAME
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return decode_text(data, str(path)), str(path)


def decode_text(data: bytes, name: str) -> str:
    """UTF-8, or what a byte-order mark names; ManifestError for anything else."""
    encoding, skip = "utf-8", 0
    for bom, named in _BOMS:
        if data.startswith(bom):
            encoding, skip = named, len(bom)
            break
    nul = data.find(b"\0", skip) if encoding == "utf-8" else -1
    try:
        text = data[skip:].decode(encoding)
    except UnicodeDecodeError as exc:
        at = skip + exc.start
        if not 0 <= nul < at:
            raise ManifestError(
                f"{name}: not {encoding.upper()} text (byte 0x{data[at : at + 1].hex()} at "
                f"offset {at}); {_EXPECTED}"
            ) from None
    if nul >= 0:  # UTF-16 without a BOM, or a binary file
        raise ManifestError(f"{name}: not UTF-8 text (a NUL byte at offset {nul}); {_EXPECTED}")
    if "\0" in text:
        offset = len(text[: text.index("\0")].encode(encoding)) + skip
        raise ManifestError(
            f"{name}: not {encoding.upper()} text (a NUL character at offset {offset}); {_EXPECTED}"
        )
    return text


def check_depth(text: str, name: str) -> None:
    """ManifestError when the YAML nests deeper than :data:`MAX_DEPTH`.

    A cheap bound first: a flow collection cannot cross a ``---`` line, so no
    document nests deeper in flow style than it has ``[`` and ``{``, and block
    nesting needs a character of indentation or indicator per level. Only text
    that might be too deep is walked event by event, which never recurses.
    """
    brackets = max(chunk.count("[") + chunk.count("{") for chunk in _DOCUMENT.split(text))
    if brackets <= MAX_DEPTH // 2 and not _DEEP_LINE.search(text):
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    raise ManifestError(
                        f"{name}: malformed YAML at line {line}: nested deeper than "
                        f"{MAX_DEPTH} levels"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return  # reported with its position when the text is loaded
