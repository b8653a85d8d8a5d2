"""A keras-hub preset's tokenizer as transformers 5 tokenizer files, read from the preset alone.

A preset saved with its tokenizer holds ``tokenizer.json`` (the Keras tokenizer's class and config: keras-hub's
``Tokenizer.save_to_preset``) and its assets under ``assets/tokenizer/``. Each keras-hub class is written as the
files transformers' own repositories hold for that model, the inverse of keras-hub's transformers converters
(``keras_hub/src/utils/transformers/convert_*.py``):

- ``BertTokenizer`` (``vocabulary.txt``): ``vocab.txt`` and a ``tokenizer_config.json`` for ``BertTokenizer``
  (``do_lower_case`` and ``strip_accents`` from the Keras config: keras-hub strips accents only when told to).
- ``GPT2Tokenizer`` (``vocabulary.json``, ``merges.txt``): ``vocab.json``, ``merges.txt`` and
  ``GPT2Tokenizer``'s config, ``<|endoftext|>`` its bos, eos and unk.
- ``Llama3Tokenizer`` (``vocabulary.json``, ``merges.txt``): Llama 3's ``tokenizer.json`` (its split pattern,
  the special tokens, ``<|begin_of_text|>`` first) for ``PreTrainedTokenizerFast``.
- ``GemmaTokenizer`` and ``LlamaTokenizer`` (Llama 2's; ``vocabulary.spm``, a SentencePiece BPE model):
  ``tokenizer.model`` and its ``tokenizer.json`` (so no sentencepiece is needed to load it), bos first, for
  transformers' ``GemmaTokenizer`` (Gemma's normalization) or else ``PreTrainedTokenizerFast``, which keeps the
  file's normalizers: transformers' ``LlamaTokenizer`` splits runs of spaces after the dummy prefix otherwise
  than sentencepiece.

The special tokens' ids go into ``config.json`` too (``bos_token_id``, ``eos_token_id``, ``pad_token_id``), so
generation stops where the tokenizer says. A preset without ``tokenizer.json`` (a backbone alone) or with a
tokenizer class ckpt has no transformers files for is a warning that no tokenizer is written; a tokenizer whose
assets are missing or damaged is an error naming the file, or with ``--skip-unreadable`` that warning.
"""
from __future__ import annotations

import json
import os

from formats.core.errors import CorruptCheckpointError
from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from formats.ops.convert.plan import ConversionPlan

__all__ = ["CarriedTokenizer", "TokenizerLeftOut", "carry_tokenizer", "plan_tokenizer", "TOKENIZER_CONFIG", "ASSETS"]

TOKENIZER_CONFIG = "tokenizer.json"
"""The Keras tokenizer's config in a preset (not transformers' ``tokenizer.json``)."""
ASSETS = os.path.join("assets", "tokenizer")
MAX_ASSET_BYTES = 256 << 20
"""Largest tokenizer asset read (Gemma 3's SentencePiece model is 4.5 MB, Llama 3's vocabulary 2.2 MB)."""
MAX_CONFIG_BYTES = 16 << 20


@record
class CarriedTokenizer:
    """The transformers files of a preset's tokenizer (name -> bytes) and the ids ``config.json`` takes."""

    keras_class: str
    files: dict[str, bytes]
    ids: dict[str, int] = field(default_factory=dict)
    size: int = 0
    """One more than the largest id the tokenizer gives."""


class TokenizerLeftOut(Exception):
    """No tokenizer can be written: ``reason`` says why; ``damaged`` when the preset's tokenizer files are missing
    or unreadable (an error unless unreadable input is skipped), else the preset simply has none ckpt carries."""

    def __init__(self, path: str, reason: str, damaged: bool = False) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.damaged = path, reason, damaged


def _read(preset: str, name: str, limit: int = MAX_ASSET_BYTES) -> bytes:
    path = os.path.join(preset, ASSETS, name)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise TokenizerLeftOut(path, f"cannot read the tokenizer asset: {exc.strerror or exc}", damaged=True) from None
    if len(data) > limit:
        raise TokenizerLeftOut(path, f"the tokenizer asset is larger than {limit:,} bytes", damaged=True)
    return data


def _json(preset: str, name: str) -> Any:
    from formats.core.bounded_json import load_json

    path = os.path.join(preset, ASSETS, name)
    try:
        return load_json(_read(preset, name), path, "the tokenizer asset", max_bytes=MAX_ASSET_BYTES)
    except CorruptCheckpointError as exc:
        raise TokenizerLeftOut(path, exc.message, damaged=True) from None


def _config_file(files: dict[str, bytes], config: dict[str, Any]) -> None:
    """``tokenizer_config.json``: ``config`` without the settings that are None (transformers' defaults apply)."""
    config = {k: v for k, v in config.items() if v is not None}
    files["tokenizer_config.json"] = (json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _bert(preset: str, keras: dict[str, Any], model: dict[str, Any]) -> CarriedTokenizer:
    data = _read(preset, "vocabulary.txt")
    try:
        vocab = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise TokenizerLeftOut(os.path.join(preset, ASSETS, "vocabulary.txt"), f"not UTF-8 text ({exc.reason})",
                               damaged=True) from None
    if keras.get("split", True) is not True or keras.get("suffix_indicator", "##") != "##":
        raise TokenizerLeftOut(os.path.join(preset, TOKENIZER_CONFIG), "a WordPiece tokenizer that does not split "
                               "on whitespace and punctuation or marks pieces other than '##' has no transformers "
                               "BertTokenizer")
    special = {"unk_token": keras.get("oov_token") or "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
               "pad_token": "[PAD]", "mask_token": "[MASK]"}
    _require(preset, "vocabulary.txt", vocab, special.values())
    files = {"vocab.txt": data}
    _config_file(files, {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(keras.get("lowercase")),
                         "strip_accents": bool(keras.get("strip_accents")), "tokenize_chinese_chars": True,
                         "model_max_length": _max_length(model), **special})
    return CarriedTokenizer("BertTokenizer", files, {"pad_token_id": vocab.index("[PAD]")}, len(vocab))


def _require(preset: str, asset: str, vocab: Any, tokens: Any) -> None:
    missing = [t for t in tokens if t not in vocab]
    if missing:
        raise TokenizerLeftOut(os.path.join(preset, ASSETS, asset), f"the vocabulary has no {', '.join(missing)}",
                               damaged=True)


def _max_length(model: dict[str, Any]) -> int | None:
    value = model.get("max_position_embeddings", model.get("n_positions"))
    return value if isinstance(value, int) else None


def _bpe_assets(preset: str) -> tuple[dict[str, int], bytes, list[list[str]]]:
    """``vocabulary.json`` (token -> id) and ``merges.txt`` (its bytes and its pairs, a ``#version`` line left out)."""
    vocab = _json(preset, "vocabulary.json")
    path = os.path.join(preset, ASSETS, "vocabulary.json")
    if not isinstance(vocab, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in vocab.values()):
        raise TokenizerLeftOut(path, "not a BPE vocabulary (an object of token -> id)", damaged=True)
    raw = _read(preset, "merges.txt")
    merges: list[list[str]] = []
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise TokenizerLeftOut(os.path.join(preset, ASSETS, "merges.txt"), f"not UTF-8 text ({exc.reason})",
                               damaged=True) from None
    for number, line in enumerate(lines, 1):
        if not line or line.lstrip().startswith("#version"):
            continue
        pair = line.split(" ")
        if len(pair) != 2 or pair[0] not in vocab or pair[1] not in vocab:
            raise TokenizerLeftOut(os.path.join(preset, ASSETS, "merges.txt"), f"line {number} is not a merge of "
                                   f"two tokens of vocabulary.json: {line[:60]!r}", damaged=True)
        merges.append(pair)
    return vocab, raw, merges


def _gpt2(preset: str, keras: dict[str, Any], model: dict[str, Any]) -> CarriedTokenizer:
    vocab, raw, _ = _bpe_assets(preset)
    end = "<|endoftext|>"
    _require(preset, "vocabulary.json", vocab, [end])
    files = {"vocab.json": _read(preset, "vocabulary.json"), "merges.txt": raw}
    _config_file(files, {"tokenizer_class": "GPT2Tokenizer", "bos_token": end, "eos_token": end, "unk_token": end,
                         "add_prefix_space": bool(keras.get("add_prefix_space")), "add_bos_token": False,
                         "model_max_length": _max_length(model)})
    return CarriedTokenizer("GPT2Tokenizer", files, {"bos_token_id": vocab[end], "eos_token_id": vocab[end]},
                            max(vocab.values()) + 1)


LLAMA3_BOS, LLAMA3_EOS = "<|begin_of_text|>", "<|end_of_text|>"
"""keras-hub's ``Llama3Tokenizer`` defaults, which its saved config does not override (it stores neither)."""


def _llama3(preset: str, keras: dict[str, Any], model: dict[str, Any]) -> CarriedTokenizer:
    from formats.ops.convert.hf.tokenizer.documents import llama3_document

    vocab, _, merges = _bpe_assets(preset)
    special = [t for t in keras.get("unsplittable_tokens") or [] if isinstance(t, str)]
    _require(preset, "vocabulary.json", vocab, [LLAMA3_BOS, LLAMA3_EOS, *special])
    document = llama3_document(vocab, merges, sorted(set(special) | {LLAMA3_BOS, LLAMA3_EOS}), LLAMA3_BOS)
    files = {"tokenizer.json": json.dumps(document, ensure_ascii=False).encode()}
    _config_file(files, {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": LLAMA3_BOS,
                         "eos_token": LLAMA3_EOS, "clean_up_tokenization_spaces": False,
                         "model_input_names": ["input_ids", "attention_mask"],
                         "model_max_length": _max_length(model)})
    return CarriedTokenizer("Llama3Tokenizer", files, {"bos_token_id": vocab[LLAMA3_BOS],
                                                        "eos_token_id": vocab[LLAMA3_EOS]}, max(vocab.values()) + 1)


GENERIC = "PreTrainedTokenizerFast"
"""The class that loads a ``tokenizer.json`` as it is (transformers 5's ``TokenizersBackend``)."""


def _spm(preset: str, hf_class: str, keras_class: str) -> CarriedTokenizer:
    """A SentencePiece BPE tokenizer (``vocabulary.spm``) as ``tokenizer.model``, its ``tokenizer.json`` and the
    config of ``hf_class`` (the generic one when the model normalizes other than that class does), bos first (as
    Gemma's and Llama 2's own add it)."""
    from formats.io.protowire import WireError
    from formats.ops.convert.hf.tokenizer.documents import spm_bpe_document
    from formats.ops.convert.hf.tokenizer.spm import BPE, read_spm

    data = _read(preset, "vocabulary.spm")
    path = os.path.join(preset, ASSETS, "vocabulary.spm")
    try:
        spm = read_spm(data)
    except WireError as exc:
        raise TokenizerLeftOut(path, f"not a SentencePiece model: {exc}", damaged=True) from None
    if spm.model_type != BPE:
        raise TokenizerLeftOut(path, f"a SentencePiece model that is not BPE has no transformers {hf_class}")
    if hf_class == "GemmaTokenizer" and (spm.add_dummy_prefix or spm.remove_extra_whitespaces or spm.charsmap):
        hf_class = GENERIC  # transformers' GemmaTokenizer normalizes as Gemma's model does, whatever the file says
    tokens = {name: spm.piece(getattr(spm, f"{name}_id")) for name in ("bos", "eos", "pad", "unk")}
    files = {"tokenizer.model": data,
             "tokenizer.json": json.dumps(spm_bpe_document(spm, add_bos=True), ensure_ascii=False).encode()}
    _config_file(files, {"tokenizer_class": hf_class, "add_bos_token": True, "add_eos_token": False,
                         **{f"{name}_token": t for name, t in tokens.items() if t is not None}})
    ids = {f"{name}_token_id": getattr(spm, f"{name}_id") for name in ("bos", "eos", "pad") if tokens[name]}
    return CarriedTokenizer(keras_class, files, ids, len(spm.pieces))


def _gemma(preset: str, keras: dict[str, Any], model: dict[str, Any]) -> CarriedTokenizer:
    return _spm(preset, "GemmaTokenizer", "GemmaTokenizer")


def _llama(preset: str, keras: dict[str, Any], model: dict[str, Any]) -> CarriedTokenizer:
    # Not transformers' LlamaTokenizer: its own pre-tokenizer splits runs of spaces after the dummy prefix other
    # than sentencepiece (and keras-hub) does; the file's normalizers give sentencepiece's ids.
    return _spm(preset, GENERIC, "LlamaTokenizer")


WRITERS = {"BertTokenizer": _bert, "GPT2Tokenizer": _gpt2, "Llama3Tokenizer": _llama3, "GemmaTokenizer": _gemma,
           "LlamaTokenizer": _llama}
"""keras-hub tokenizer class -> the function writing its transformers files."""


def carry_tokenizer(preset: str, model_config: dict[str, Any]) -> CarriedTokenizer:
    """The transformers 5 tokenizer files of the keras-hub preset directory ``preset`` (``model_config``: the
    ``config.json`` being written); :class:`TokenizerLeftOut` saying why when there are none."""
    from formats.core.bounded_json import load_json

    path = os.path.join(preset, TOKENIZER_CONFIG)
    if not os.path.isfile(path):
        raise TokenizerLeftOut(preset, f"the preset has no {TOKENIZER_CONFIG} (saved without its tokenizer)")
    try:
        with open(path, "rb") as f:
            doc = load_json(f.read(MAX_CONFIG_BYTES + 1), path, "the tokenizer config", max_bytes=MAX_CONFIG_BYTES)
    except CorruptCheckpointError as exc:
        raise TokenizerLeftOut(path, exc.message, damaged=True) from None
    except OSError as exc:
        raise TokenizerLeftOut(path, f"cannot read it: {exc.strerror or exc}", damaged=True) from None
    keras = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(keras, dict):
        raise TokenizerLeftOut(path, "not a keras-hub tokenizer config: no \"config\" object", damaged=True)
    name = doc.get("class_name")
    writer = WRITERS.get(name) if isinstance(name, str) else None
    if writer is None:
        raise TokenizerLeftOut(path, f"ckpt writes no transformers tokenizer for keras-hub's {name} (it does for "
                               f"{', '.join(sorted(WRITERS))})")
    return writer(preset, keras, model_config)


def plan_tokenizer(plan: ConversionPlan, preset: str) -> None:
    """Add the preset's tokenizer to ``plan`` (an ``--to hf`` plan of it): its files (``write_options["files"]``),
    its special ids in the config (a different id the map set is replaced, with a warning), ``details["tokenizer"]``;
    or the warning (the error, for damaged files) that no tokenizer is written."""
    from formats.ops.convert.plan import UNREADABLE_HINT, WARNING

    config = plan.write_options.get("config")
    if not isinstance(config, dict):
        return
    try:
        carried = carry_tokenizer(preset, config)
    except TokenizerLeftOut as exc:
        what = f"{exc.reason}: no tokenizer written"
        if exc.damaged:  # as an unreadable tensor is: an error, or with --skip-unreadable a warning
            plan.unreadable.append((plan.add("tokenizer", exc.path, f"{what}; {UNREADABLE_HINT}"), what))
        else:
            plan.add("tokenizer", exc.path, what, WARNING)
        plan.details["tokenizer"] = None
        return
    vocab_size = config.get("vocab_size")
    if isinstance(vocab_size, int) and carried.size > vocab_size:
        plan.add("tokenizer", "vocab_size", f"the tokenizer gives ids up to {carried.size - 1}, beyond the model's "
                 f"vocab_size = {vocab_size}: it is not this model's tokenizer, or the model's embedding was cut",
                 WARNING)
    for name, value in carried.ids.items():
        if name in config and config[name] != value:
            plan.add("tokenizer", name, f"config: {name} = {config[name]} replaced by {value}, the id of the "
                     f"tokenizer's token", WARNING)
        config[name] = value
    plan.write_options["config"] = dict(sorted(config.items()))
    plan.write_options["files"] = carried.files
    plan.details["config"] = plan.write_options["config"]
    plan.details["tokenizer"] = {"keras_hub_class": carried.keras_class, "files": sorted(carried.files)}
