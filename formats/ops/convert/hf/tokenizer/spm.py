"""A SentencePiece model (``*.model``, keras-hub's ``vocabulary.spm``) read without the sentencepiece or protobuf
packages: its pieces (string, score, type), the trainer settings a transformers tokenizer needs (model type, the
special ids, byte fallback) and the normalizer's whitespace settings.

The message is sentencepiece's ``ModelProto`` (``sentencepiece_model.proto``, proto2): ``pieces = 1`` (each
``piece = 1``, ``score = 2`` float, ``type = 3``), ``trainer_spec = 2`` (``model_type = 3``, ``byte_fallback =
35``, ``unk_id = 40``, ``bos_id = 41``, ``eos_id = 42``, ``pad_id = 43``), ``normalizer_spec = 3`` (``name = 1``,
``precompiled_charsmap = 2``, ``add_dummy_prefix = 3``, ``remove_extra_whitespaces = 4``); absent fields take the proto2 defaults.
"""
from __future__ import annotations

import struct

from formats.core.records import record
from formats.io.protowire import Buffer, WireError, last_int, messages, parse_fields, signed

__all__ = ["SentencePieceModel", "read_spm", "NORMAL", "UNKNOWN", "CONTROL", "USER_DEFINED", "BYTE", "BPE",
           "UNIGRAM"]

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
"""``SentencePiece.Type``."""
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
"""``TrainerSpec.ModelType``."""


@record
class SentencePieceModel:
    """What a transformers tokenizer needs of a SentencePiece model."""

    pieces: list[tuple[str, float, int]]
    model_type: int
    byte_fallback: bool
    unk_id: int
    bos_id: int
    eos_id: int
    pad_id: int
    normalizer: str
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool
    charsmap: bytes = b""
    """The normalizer's compiled character map (``nmt_nfkc``'s; empty for ``identity``)."""

    def piece(self, index: int) -> str | None:
        """The piece of id ``index``, None for a negative or out-of-range id (a disabled special token)."""
        return self.pieces[index][0] if 0 <= index < len(self.pieces) else None


def _text(value: object) -> str:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise WireError("a string field has the wrong wire type")
    return bytes(value).decode("utf-8")


def _piece(data: Buffer) -> tuple[str, float, int]:
    fields = parse_fields(data)
    piece = _text(fields[1][-1]) if 1 in fields else ""
    score = fields.get(2, [0])[-1]
    if not isinstance(score, int):
        raise WireError("a piece's score has the wrong wire type")
    return piece, struct.unpack("<f", struct.pack("<I", score & 0xFFFFFFFF))[0], last_int(fields, 3, NORMAL)


def read_spm(data: bytes) -> SentencePieceModel:
    """The SentencePiece model serialized in ``data``; :class:`~formats.io.protowire.WireError` (a ValueError)
    when it is not one (no pieces, a field of the wrong type, bytes that are not UTF-8)."""
    try:
        fields = parse_fields(data)
        pieces = [_piece(m) for m in messages(fields, 1)]
        trainer = parse_fields(messages(fields, 2)[-1]) if fields.get(2) else {}
        normalizer = parse_fields(messages(fields, 3)[-1]) if fields.get(3) else {}
        name = _text(normalizer[1][-1]) if 1 in normalizer else ""
        charsmap = bytes(messages(normalizer, 2)[-1]) if normalizer.get(2) else b""
    except UnicodeDecodeError as exc:
        raise WireError(f"a string is not UTF-8 ({exc.reason})") from None
    if not pieces:
        raise WireError("it has no pieces")
    return SentencePieceModel(
        pieces, last_int(trainer, 3, UNIGRAM), bool(last_int(trainer, 35, 0)),
        signed(last_int(trainer, 40, 0)), signed(last_int(trainer, 41, 1)), signed(last_int(trainer, 42, 2)),
        signed(last_int(trainer, 43, (1 << 64) - 1)), name, bool(last_int(normalizer, 3, 1)),
        bool(last_int(normalizer, 4, 1)), charsmap)
