"""Reference protobuf classes for the messages of formats/concepts/proto/tfckpt_bundle.proto.

ckpt encodes and decodes these messages by hand (formats/concepts/proto/messages.py). The tests
check it against the protobuf runtime, with classes built at run time from the descriptor set in
tests/data/proto (scripts/gen_protos.sh writes it): no generated code, so the same test runs with
every protobuf from 3.20 on. :func:`oracle` skips the calling test when protobuf is not installed.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

DESCRIPTORS = Path(__file__).parent / "data" / "proto" / "tfckpt_bundle.desc"


@cache
def _classes() -> dict[str, Any]:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    files = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTORS.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.AddSerializedFile(f.SerializeToString())
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.21
    if get_class is None:
        get_class = message_factory.MessageFactory(pool).GetPrototype
    names = ["TensorShapeProto", "TensorSliceProto", "VersionDef", "BundleHeaderProto", "BundleEntryProto",
             "TensorProto", "VariantTensorDataProto", "TrackableObjectGraph", "RegisteredSaver"]
    return {n: get_class(pool.FindMessageTypeByName(f"tfckpt.{n}")) for n in names}


def oracle(name: str) -> Any:
    """The protobuf class of message ``name`` (``BundleEntryProto``, ``TrackableObjectGraph``, ...)."""
    pytest.importorskip("google.protobuf")
    return _classes()[name]


def decode_error() -> tuple[type[Exception], ...]:
    """What protobuf raises on bytes it cannot parse: ``DecodeError`` (the pure-Python runtime of
    protobuf 3.x raises ``UnicodeDecodeError`` for a string that is not UTF-8)."""
    pytest.importorskip("google.protobuf")
    from google.protobuf.message import DecodeError

    return DecodeError, UnicodeDecodeError


def legacy_runtime() -> bool:
    """Whether protobuf is a 3.x release (its pure-Python parser is laxer than upb about groups)."""
    import google.protobuf

    return int(google.protobuf.__version__.split(".")[0]) < 4


def overlong_tag(data: bytes, depth: int = 0) -> bool:
    """Whether ``data``, read as protobuf fields (and each length-delimited payload as fields again, while it reads
    so), has a tag written in more bytes than it needs (a last varint byte of 0). protobuf 3.x's pure-Python parser
    looks a field up by its tag's bytes, so takes such a field for an unknown one and skips it; upb and C++ protobuf
    (TensorFlow's) decode the tag's number, as ckpt does. (A payload that is a string may be taken for fields: this
    only ever excuses a difference under the 3.x runtime.)"""
    pos, end = 0, len(data)

    def varint() -> int | None:
        nonlocal pos
        value = shift = 0
        while pos < end and shift < 70:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value
        return None

    while pos < end:
        start = pos
        tag = varint()
        if tag is None:
            return False
        if pos - start > 1 and data[pos - 1] == 0:
            return True
        wire = tag & 7
        if wire == 0:
            if varint() is None:
                return False
        elif wire == 1 or wire == 5:
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size = varint()
            if size is None or pos + size > end:
                return False
            if depth < 8 and overlong_tag(data[pos:pos + size], depth + 1):
                return True
            pos += size
        elif wire not in (3, 4):
            return False
    return False
