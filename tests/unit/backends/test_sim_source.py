"""Reading simulator input: encodings, nesting depth, and virtual seconds."""

from __future__ import annotations

import codecs

import pytest

from asyncsched.backends.sim.fields import ManifestError, seconds_problem
from asyncsched.backends.sim.source import MAX_DEPTH, check_depth, decode_text

TEXT = "kind: Node  # naïve\n"


@pytest.mark.parametrize(
    "data",
    [
        TEXT.encode(),
        codecs.BOM_UTF8 + TEXT.encode(),
        codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"),
    ],
)
def test_utf8_and_byte_order_marked_text_decode(data: bytes) -> None:
    assert decode_text(data, "f.yaml") == TEXT


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"kind: \xffNode", "f.yaml: not UTF-8 text (byte 0xff at offset 6)"),
        (TEXT.encode("utf-16-le"), "f.yaml: not UTF-8 text (a NUL byte at offset 1)"),
        (TEXT.encode("utf-16-be"), "f.yaml: not UTF-8 text (a NUL byte at offset 0)"),
        (codecs.BOM_UTF16_LE + b"k\x00\x00\xd8", "not UTF-16-LE text (byte 0x00 at offset 4)"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text (byte 0x89 at offset 0)"),
        (b"kind: x\x00\xff", "not UTF-8 text (a NUL byte at offset 7)"),
        (
            codecs.BOM_UTF16_LE + "a\0".encode("utf-16-le"),
            "not UTF-16-LE text (a NUL character at offset 4)",
        ),
    ],
)
def test_other_bytes_are_refused_saying_where(data: bytes, expected: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_text(data, "f.yaml")
    assert str(caught.value).startswith("f.yaml: not ") and expected in str(caught.value)
    assert "UTF-16 with a byte-order mark" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1),
        "- " * MAX_DEPTH + "x",
        "".join(f"{'  ' * i}k{i}:\n" for i in range(MAX_DEPTH)) + "  " * MAX_DEPTH + "v\n",
        "a: " + "[" * 60 + "]" * 60 + "\n---\nb: " + "[" * 60 + "]" * 60,
        "a: '" + "[" * 500 + "'\n",
    ],
)
def test_nesting_up_to_the_limit_is_accepted(text: str) -> None:
    check_depth(text, "f.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "- " * (MAX_DEPTH + 1) + "x",
        "a: " + "{b: " * (MAX_DEPTH + 1) + "}" * (MAX_DEPTH + 1),
        "".join(f"{' ' * i}k{i}:\n" for i in range(MAX_DEPTH + 1)) + " " * (MAX_DEPTH + 1) + "v",
        # '----' is a scalar, not a document marker: the flow collection goes on past it.
        "a: " + "[" * 50 + "\n----,\n" + "[" * 50 + "]" * 100,
    ],
)
def test_deeper_nesting_is_refused(text: str) -> None:
    with pytest.raises(ManifestError, match=f"f.yaml: .*nested deeper than {MAX_DEPTH} levels"):
        check_depth(text, "f.yaml")


@pytest.mark.parametrize(
    ("raw", "positive", "value", "why"),
    [
        ("0", False, 0.0, ""),
        ("2.5", False, 2.5, ""),
        ("1e9", True, 1e9, ""),
        ("0", True, 0.0, "more than 0 and at most 1000000000"),
        ("-1", False, 0.0, "from 0 to 1000000000 (about 32 years), got '-1'"),
        ("1e10", False, 0.0, "from 0 to 1000000000"),
        ("inf", False, 0.0, "from 0 to 1000000000"),
        ("nan", True, 0.0, "more than 0 and at most"),
        ("soon", False, 0.0, "must be a number of seconds, got 'soon'"),
    ],
)
def test_virtual_seconds(raw: str, positive: bool, value: float, why: str) -> None:
    found, problem = seconds_problem(raw, positive=positive)
    assert found == value and (problem == "") == (why == "") and why in problem
