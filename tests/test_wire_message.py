"""The shared wire decoder (formats.io.protowire): typed fields, proto3 rules, bounds."""
from __future__ import annotations

import pytest

from formats.io.protowire import Message, WireError, encode_varint, iter_fields, read_varint, signed


def varint(n: int) -> bytes:
    """A varint as protobuf writes it (negative numbers as their 64-bit two's complement)."""
    return encode_varint(n & ((1 << 64) - 1))


def field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def test_scalars_strings_and_last_value_wins():
    data = field(1, 5) + field(1, 7) + field(2, b"caf\xc3\xa9") + field(3, -1) + field(4, 1)
    msg = Message(data)
    assert msg.uint(1) == 7
    assert msg.text(2) == "café"
    assert msg.int64(3) == -1 and msg.uint(3) == (1 << 64) - 1
    assert msg.flag(4) is True and msg.flag(9) is False
    assert msg.uint(9, default=42) == 42 and msg.text(9) == "" and not msg.has(9)


def test_fixed_width_fields():
    data = bytes([0x0D]) + (123).to_bytes(4, "little") + bytes([0x11]) + (2 ** 40).to_bytes(8, "little")
    assert [(n, w, v) for n, w, v in iter_fields(data)] == [(1, 5, 123), (2, 1, 2 ** 40)]


def test_nested_repeated_packed_and_maps():
    inner = field(1, 3) + field(2, b"x")
    entry = field(1, b"k") + field(2, inner)
    data = field(1, inner) + field(1, inner) + field(5, varint(1) + varint(300)) + field(5, 7) + field(6, entry)
    msg = Message(data)
    assert [m.uint(1) for m in msg.messages(1)] == [3, 3]
    assert msg.packed_ints(5) == [1, 300, 7]
    [(key, value)] = list(msg.map_entries(6))
    assert key == "k" and Message(value).text(2) == "x"


def test_singular_message_fields_merge():
    data = field(1, field(1, 5)) + field(1, field(2, b"y"))
    merged = Message(data).message(1)
    assert merged is not None and merged.uint(1) == 5 and merged.text(2) == "y"
    assert Message(data).message(7) is None


def test_values_are_zero_copy_views():
    payload = b"z" * 1000
    msg = Message(field(1, payload))
    [view] = msg.views(1)
    assert isinstance(view, memoryview) and view.obj is not None and bytes(view) == payload


@pytest.mark.parametrize("data, message", [
    (b"\x0a\x05ab", "runs past the message"),
    (b"\x08" + b"\xff" * 11, "overlong varint"),
    (b"\x08", "truncated or overlong varint"),
    (b"\x00\x01", "field number 0"),
    (b"\x0b", "unterminated group"),
    (b"\x0e", "unexpected wire type 6"),
    (b"\x0d\x01\x02", "truncated fixed32"),
    (b"\x09\x01", "truncated fixed64"),
])
def test_malformed_bytes_raise_wire_errors(data, message):
    with pytest.raises(WireError, match=message):
        Message(data)


def test_groups_are_skipped_as_unknown_fields():
    group = b"\x1b" + field(1, 5) + b"\x1c"  # field 3 as a group holding field 1, then its end
    msg = Message(field(1, 7) + group + field(2, b"x"))
    assert msg.uint(1) == 7 and msg.text(2) == "x" and not msg.has(3)


def test_wrong_wire_type_for_the_field():
    with pytest.raises(WireError, match="length-delimited where a number"):
        Message(field(1, b"a")).uint(1)
    with pytest.raises(WireError, match="number where a length-delimited"):
        Message(field(1, 3)).text(1)


def test_field_count_is_bounded():
    with pytest.raises(WireError, match="more than 100 fields"):
        Message(field(1, 0) * 101, max_fields=100)


def test_varint_helpers():
    assert read_varint(varint(2 ** 63), 0, 10) == (2 ** 63, 10)
    assert signed(2 ** 64 - 5) == -5 and signed(5) == 5
