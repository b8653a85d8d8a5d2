"""The ``tokenizer.json`` documents (the ``tokenizers`` library's serialization, which transformers 5 loads
without sentencepiece or tiktoken) of the two tokenizers whose vocabulary files alone do not say how to split:
Llama 3's byte-level BPE and a SentencePiece BPE model (Gemma's).

Each is a plain dict: ``model`` (``BPE`` with ``vocab`` and ``merges``), ``added_tokens`` (the special tokens,
never split, never normalized), ``normalizer``, ``pre_tokenizer``, ``post_processor`` (a leading ``bos``) and
``decoder``, as the released Llama 3 and Gemma ``tokenizer.json`` files hold them.
"""
from __future__ import annotations

from formats.ops.convert.hf.tokenizer.spm import BYTE, CONTROL, UNKNOWN, USER_DEFINED, SentencePieceModel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LLAMA3_SPLIT", "llama3_document", "spm_bpe_document", "spm_merges", "spm_normalizer", "added_token"]

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
"""Llama 3's pre-tokenizer pattern (its released ``tokenizer.json``; keras-hub's ``Llama3Tokenizer`` splits by
the same)."""

SPIECE_SPACE = "\u2581"
"""SentencePiece's visible space, ``▁``."""


def added_token(content: str, index: int, special: bool = True) -> dict[str, Any]:
    """One entry of ``added_tokens``: matched whole before the model runs, never normalized."""
    return {"id": index, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special}


def _bos_template(bos: str | None, bos_id: int | None) -> dict[str, Any] | None:
    """A ``TemplateProcessing`` putting ``bos`` before each sequence (None without a bos)."""
    if bos is None or bos_id is None:
        return None
    token = [{"SpecialToken": {"id": bos, "type_id": 0}}]
    return {"type": "TemplateProcessing", "single": [*token, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [*token, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}


def _bpe(vocab: dict[str, int], merges: list[list[str]], **settings: Any) -> dict[str, Any]:
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False}
    return {**model, **settings, "vocab": vocab, "merges": merges}


def _document(model: dict[str, Any], added: list[dict[str, Any]], normalizer: Any, pre_tokenizer: Any,
              post_processor: Any, decoder: Any) -> dict[str, Any]:
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer, "post_processor": post_processor, "decoder": decoder, "model": model}


def llama3_document(vocab: dict[str, int], merges: list[list[str]], special: list[str],
                    bos: str | None) -> dict[str, Any]:
    """Llama 3's ``tokenizer.json``: GPT-2's byte-level BPE after Llama 3's split pattern (whole words in the
    vocabulary taken as they are: ``ignore_merges``), ``special`` tokens matched whole, ``bos`` before each
    sequence."""
    added = sorted((added_token(t, vocab[t]) for t in special), key=lambda a: a["id"])
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    post = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        *[p for p in [_bos_template(bos, vocab.get(bos) if bos else None)] if p]]}
    decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    return _document(_bpe(vocab, merges, ignore_merges=True), added, None, pre, post, decoder)


def spm_merges(vocab: dict[str, int]) -> list[list[str]]:
    """The merges of a SentencePiece BPE vocabulary, which stores none: every split of a piece into two pieces of
    the vocabulary, ranked by the merged piece's id (SentencePiece's BPE merges in the order it learnt the pieces),
    then the shorter left part, then the shorter right part; within a piece, by the parts' ids. transformers
    derives them the same way."""
    found: list[tuple[int, int, int, int, int, str, str]] = []
    for piece, index in vocab.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                found.append((index, len(left), len(right), vocab[left], vocab[right], left, right))
    found.sort(key=lambda m: (m[0], m[3], m[4]))
    found.sort(key=lambda m: (m[0], m[1], m[2]))  # stable: the parts' ids order the ties
    return [[m[5], m[6]] for m in found]


def spm_normalizer(model: SentencePieceModel) -> dict[str, Any]:
    """SentencePiece's normalization as ``tokenizers`` normalizers: its compiled character map (``nmt_nfkc``), extra
    whitespace removed (leading, trailing and runs, when ``remove_extra_whitespaces``), the dummy prefix, then
    spaces as ``▁``."""
    import base64

    steps: list[dict[str, Any]] = []
    if model.charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(model.charsmap).decode()})
    if model.remove_extra_whitespaces:
        steps += [{"type": "Strip", "strip_left": True, "strip_right": True},
                  {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    if model.add_dummy_prefix:
        steps.append({"type": "Prepend", "prepend": SPIECE_SPACE})
    steps.append({"type": "Replace", "pattern": {"String": " "}, "content": SPIECE_SPACE})
    return steps[0] if len(steps) == 1 else {"type": "Sequence", "normalizers": steps}


def spm_bpe_document(model: SentencePieceModel, add_bos: bool) -> dict[str, Any]:
    """The ``tokenizer.json`` of a SentencePiece BPE model: normalized as SentencePiece normalizes
    (:func:`spm_normalizer`), the BPE over the pieces with their derived merges, unknown characters as ``unk`` (or bytes, with byte fallback), control and user-defined pieces
    matched whole, ``bos`` before each sequence when ``add_bos``."""
    vocab = {piece: index for index, (piece, _, _) in enumerate(model.pieces)}
    added = [added_token(piece, index, kind != USER_DEFINED) for index, (piece, _, kind) in enumerate(model.pieces)
             if kind in (CONTROL, UNKNOWN, USER_DEFINED)]
    normalizer = spm_normalizer(model)
    decoders: list[dict[str, Any]] = [{"type": "Replace", "pattern": {"String": SPIECE_SPACE}, "content": " "}]
    if any(kind == BYTE for _, _, kind in model.pieces):
        decoders.append({"type": "ByteFallback"})
    decoders.append({"type": "Fuse"})
    if model.add_dummy_prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    bos = model.piece(model.bos_id)
    bpe = _bpe(vocab, spm_merges(vocab), unk_token=model.piece(model.unk_id), fuse_unk=True,
               byte_fallback=model.byte_fallback)
    return _document(bpe, added, normalizer, None, _bos_template(bos, model.bos_id) if add_bos else None,
                     {"type": "Sequence", "decoders": decoders})
