"""``ckpt convert PRESET --to hf`` carries a keras-hub preset's tokenizer (issue 37, item 4), numpy only.

The presets of ``tests/data/keras_hub`` hold tokenizers keras-hub's own transformers converter made from tiny
transformers 5 tokenizers (``generators/make_tokenizers.py``); ``tests/interop/test_hf_keras_hub_tokenizer.py``
loads ckpt's output with ``AutoTokenizer`` and compares its ids with the golden ones. Here: exactly the files
transformers' own repositories hold, the vocabulary files byte for byte the preset's assets, the special ids
in ``config.json`` those of the transformers model the preset came from (its golden ``config.json``), and bad
input: a preset without a tokenizer is one warning (exit 0, the model written without one), damaged assets one
error naming the file (exit 1, nothing written; ``--skip-unreadable`` makes it that warning).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

KERAS_HUB = Path(__file__).resolve().parent / "data" / "keras_hub"
ASSETS = Path("assets") / "tokenizer"

FILES = {
    "bert": ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"],
    "gpt2": ["config.json", "merges.txt", "model.safetensors", "tokenizer_config.json", "vocab.json"],
    "gemma": ["config.json", "model.safetensors", "tokenizer.json", "tokenizer.model", "tokenizer_config.json"],
    "llama": ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"],
    "llama_tied": ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"],
}
COPIED = {"bert": {"vocab.txt": "vocabulary.txt"}, "gpt2": {"vocab.json": "vocabulary.json", "merges.txt": "merges.txt"},
          "gemma": {"tokenizer.model": "vocabulary.spm"}, "llama": {}, "llama_tied": {}}
TOKENIZER_CONFIGS = {
    "bert": {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "strip_accents": False,
             "tokenize_chinese_chars": True, "model_max_length": 64, "unk_token": "[UNK]", "cls_token": "[CLS]",
             "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"},
    "gpt2": {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
             "unk_token": "<|endoftext|>", "add_prefix_space": False, "add_bos_token": False, "model_max_length": 64},
    "gemma": {"tokenizer_class": "GemmaTokenizer", "add_bos_token": True, "add_eos_token": False,
              "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
              "unk_token": "<unk>"},
    "llama": {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
              "eos_token": "<|end_of_text|>", "clean_up_tokenization_spaces": False,
              "model_input_names": ["input_ids", "attention_mask"]},
}
TOKENIZER_CONFIGS["llama_tied"] = TOKENIZER_CONFIGS["llama"]


def _convert(run_cli, preset: Path, out: Path, *options: str):
    return run_cli("convert", preset, "-o", out, "--to", "hf", *options)


@pytest.mark.parametrize("case", sorted(FILES))
def test_the_tokenizer_is_written_as_transformers_files(run_cli, tmp_path: Path, case: str) -> None:
    preset, out = KERAS_HUB / case / "preset", tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 0, result.output
    assert "0 errors, 0 warnings" in result.output, result.output
    assert sorted(p.name for p in out.iterdir()) == FILES[case]
    for written, asset in COPIED[case].items():
        assert (out / written).read_bytes() == (preset / ASSETS / asset).read_bytes(), written
    assert json.loads((out / "tokenizer_config.json").read_text()) == TOKENIZER_CONFIGS[case]
    config = json.loads((out / "config.json").read_text())
    golden = json.loads((KERAS_HUB / case / "golden" / "config.json").read_text())
    for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if golden.get(name) is not None:
            assert config[name] == golden[name], name


def test_llama3s_tokenizer_json_holds_the_presets_vocabulary_and_merges(run_cli, tmp_path: Path) -> None:
    preset, out = KERAS_HUB / "llama" / "preset", tmp_path / "hf"
    assert _convert(run_cli, preset, out).exit_code == 0
    doc = json.loads((out / "tokenizer.json").read_text())
    vocab = json.loads((preset / ASSETS / "vocabulary.json").read_text())
    merges = [line.split(" ") for line in (preset / ASSETS / "merges.txt").read_text().splitlines()
              if line and not line.startswith("#version")]
    assert doc["model"]["type"] == "BPE" and doc["model"]["vocab"] == vocab and doc["model"]["merges"] == merges
    assert [(t["id"], t["content"], t["special"]) for t in doc["added_tokens"]] == [
        (0, "<|eot_id|>", True), (1, "<|begin_of_text|>", True), (2, "<|end_of_text|>", True)]
    assert doc["post_processor"]["processors"][1]["special_tokens"] == {
        "<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [1], "tokens": ["<|begin_of_text|>"]}}


def test_gemmas_sentencepiece_model_is_read_without_sentencepiece(run_cli, tmp_path: Path) -> None:
    from formats.ops.convert.hf.tokenizer.spm import BPE, CONTROL, UNKNOWN, read_spm

    model = read_spm((KERAS_HUB / "gemma" / "preset" / ASSETS / "vocabulary.spm").read_bytes())
    golden = json.loads((KERAS_HUB / "gemma" / "golden" / "config.json").read_text())
    assert len(model.pieces) == golden["vocab_size"] and model.model_type == BPE
    assert (model.pad_id, model.eos_id, model.bos_id, model.unk_id) == (golden["pad_token_id"],
                                                                        golden["eos_token_id"],
                                                                        golden["bos_token_id"], 3)
    assert [(p, kind) for p, _, kind in model.pieces[:4]] == [("<pad>", CONTROL), ("<eos>", CONTROL),
                                                              ("<bos>", CONTROL), ("<unk>", UNKNOWN)]
    assert (model.add_dummy_prefix, model.remove_extra_whitespaces, model.normalizer) == (False, False, "identity")
    out = tmp_path / "hf"
    assert _convert(run_cli, KERAS_HUB / "gemma" / "preset", out).exit_code == 0
    doc = json.loads((out / "tokenizer.json").read_text())
    assert doc["model"]["vocab"] == {p: i for i, (p, _, _) in enumerate(model.pieces)}
    assert doc["model"]["unk_token"] == "<unk>" and doc["normalizer"]["content"] == "\u2581"


def test_spm_merges_rank_by_the_merged_piece_then_the_parts_lengths() -> None:
    from formats.ops.convert.hf.tokenizer.documents import spm_merges

    vocab = {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "bc": 5, "abc": 6, "ca": 7}
    assert spm_merges(vocab) == [["a", "b"], ["b", "c"], ["a", "bc"], ["ab", "c"], ["c", "a"]]


def _preset(case: str, tmp_path: Path) -> Path:
    copy = tmp_path / case
    shutil.copytree(KERAS_HUB / case / "preset", copy)
    return copy


def test_a_preset_without_a_tokenizer_is_one_warning_and_the_model_alone(run_cli, tmp_path: Path) -> None:
    preset = _preset("gemma", tmp_path)
    (preset / "tokenizer.json").unlink()
    shutil.rmtree(preset / "assets")
    out = tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("warning")] == [
        f"warning: tokenizer: {preset}: the preset has no tokenizer.json (saved without its tokenizer): "
        "no tokenizer written"]
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]


def test_a_tokenizer_class_ckpt_does_not_carry_is_a_warning(run_cli, tmp_path: Path) -> None:
    preset = _preset("llama", tmp_path)
    doc = json.loads((preset / "tokenizer.json").read_text())
    doc["class_name"] = "MistralTokenizer"
    (preset / "tokenizer.json").write_text(json.dumps(doc))
    result = _convert(run_cli, preset, tmp_path / "hf")
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("warning")] == [
        f"warning: tokenizer: {preset / 'tokenizer.json'}: ckpt writes no transformers tokenizer for keras-hub's "
        "MistralTokenizer (it does for BertTokenizer, GPT2Tokenizer, GemmaTokenizer, Llama3Tokenizer, "
        "LlamaTokenizer): no tokenizer written"]
    assert not (tmp_path / "hf" / "tokenizer.json").exists()


def _tokenizer_of(case: str, preset: Path) -> Path:
    """``preset`` (a copy) with the tokenizer of the tokenizer-only test case ``case`` in place of its own."""
    shutil.rmtree(preset / "assets")
    shutil.copytree(KERAS_HUB / case / "preset" / "assets", preset / "assets")
    shutil.copy(KERAS_HUB / case / "preset" / "tokenizer.json", preset / "tokenizer.json")
    return preset


def llama2_preset(tmp_path: Path) -> Path:
    """The ``llama`` preset with keras-hub's ``LlamaTokenizer`` (Llama 2's SentencePiece model) in place of its
    Llama 3 one (keras-hub makes no Llama 2 backbone from transformers; ``tests/data/keras_hub/llama2_tokenizer``)."""
    return _tokenizer_of("llama2_tokenizer", _preset("llama", tmp_path))


def test_llama2s_sentencepiece_tokenizer_is_written_with_its_normalizers(run_cli, tmp_path: Path) -> None:
    from formats.ops.convert.hf.tokenizer.spm import read_spm

    preset, out = llama2_preset(tmp_path), tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == FILES["gemma"]
    spm = (preset / ASSETS / "vocabulary.spm").read_bytes()
    assert (out / "tokenizer.model").read_bytes() == spm
    assert json.loads((out / "tokenizer_config.json").read_text()) == {
        "tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": True, "add_eos_token": False,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    config = json.loads((out / "config.json").read_text())
    assert (config["bos_token_id"], config["eos_token_id"]) == (1, 2) and "pad_token_id" not in config
    doc = json.loads((out / "tokenizer.json").read_text())
    assert doc["normalizer"]["normalizers"][0] == {"type": "Prepend", "prepend": "\u2581"}  # the dummy prefix
    assert len(doc["model"]["vocab"]) == len(read_spm(spm).pieces) == 99


def nfkc_preset(tmp_path: Path) -> Path:
    """The ``gemma`` preset with a ``GemmaTokenizer`` of a SentencePiece model normalized by ``nmt_nfkc``, extra
    whitespace removed and a dummy prefix (``tests/data/keras_hub/nfkc_tokenizer``)."""
    return _tokenizer_of("nfkc_tokenizer", _preset("gemma", tmp_path))


def test_a_sentencepiece_model_normalized_otherwise_than_gemmas_keeps_its_normalizers(run_cli, tmp_path: Path) -> None:
    import base64

    from formats.ops.convert.hf.tokenizer.spm import read_spm

    preset, out = nfkc_preset(tmp_path), tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    model = read_spm((preset / ASSETS / "vocabulary.spm").read_bytes())
    assert (model.normalizer, model.add_dummy_prefix, model.remove_extra_whitespaces) == ("nmt_nfkc", True, True)
    steps = json.loads((out / "tokenizer.json").read_text())["normalizer"]["normalizers"]
    assert [step["type"] for step in steps] == ["Precompiled", "Strip", "Replace", "Prepend", "Replace"]
    assert base64.b64decode(steps[0]["precompiled_charsmap"]) == model.charsmap and len(model.charsmap) > 100_000


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:300])


def _unknown_merge(path: Path) -> None:
    path.write_text(path.read_text() + "zz qq\n")


def _no_pad(path: Path) -> None:
    path.write_text(path.read_text().replace("[PAD]\n", "[PAX]\n"))


@pytest.mark.parametrize(("case", "asset", "damage", "why"), [
    ("gemma", "vocabulary.spm", _truncate,
     "not a SentencePiece model: length-delimited field runs past the message"),
    ("bert", "vocabulary.txt", Path.unlink, "cannot read the tokenizer asset: No such file or directory"),
    ("bert", "vocabulary.txt", _no_pad, "the vocabulary has no [PAD]"),
    ("gpt2", "merges.txt", _unknown_merge,  # after its 59 lines
     "line 60 is not a merge of two tokens of vocabulary.json: 'zz qq'"),
    ("llama", "vocabulary.json", _truncate, None),
])
def test_damaged_tokenizer_assets_are_an_error_naming_the_file(run_cli, tmp_path: Path, case: str, asset: str,
                                                               damage, why: str | None) -> None:
    preset = _preset(case, tmp_path)
    path = preset / ASSETS / asset
    damage(path)
    out = tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 1, result.output
    assert not out.exists()
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"error: tokenizer: {path}: "), errors
    assert errors[0].endswith(": no tokenizer written; the output would lack it (--skip-unreadable writes the rest "
                              "without it)"), errors
    if why is not None:
        assert errors[0] == f"error: tokenizer: {path}: {why}: no tokenizer written; the output would lack it " \
                            "(--skip-unreadable writes the rest without it)"
    else:
        assert "not JSON" in errors[0] or "JSON" in errors[0], errors
    skipped = _convert(run_cli, preset, out, "--skip-unreadable")
    assert skipped.exit_code == 0, skipped.output
    warnings = [line for line in skipped.output.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: tokenizer: {path}: ") and \
        warnings[0].endswith(": no tokenizer written; left out"), warnings
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]


def test_the_json_report_names_the_tokenizer(run_cli, tmp_path: Path) -> None:
    result = _convert(run_cli, KERAS_HUB / "gpt2" / "preset", tmp_path / "hf", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["details"]["tokenizer"] == {"keras_hub_class": "GPT2Tokenizer",
                                              "files": ["merges.txt", "tokenizer_config.json", "vocab.json"]}
    assert report["details"]["config"]["eos_token_id"] == 98


def test_a_map_default_the_tokenizer_contradicts_is_replaced_with_a_warning(run_cli, tmp_path: Path) -> None:
    preset = _preset("bert", tmp_path)
    vocab = (preset / ASSETS / "vocabulary.txt").read_text().splitlines()
    vocab[0], vocab[5] = vocab[5], vocab[0]  # [PAD] is id 5 now
    (preset / ASSETS / "vocabulary.txt").write_text("".join(f"{t}\n" for t in vocab))
    out = tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("warning")] == [
        "warning: tokenizer: pad_token_id: config: pad_token_id = 0 replaced by 5, the id of the tokenizer's token"]
    assert json.loads((out / "config.json").read_text())["pad_token_id"] == 5


def test_a_tokenizer_beyond_the_models_vocabulary_is_written_with_a_warning(run_cli, tmp_path: Path) -> None:
    preset = _preset("gpt2", tmp_path)
    vocab = json.loads((preset / ASSETS / "vocabulary.json").read_text())
    vocab["<|extra|>"] = 120
    (preset / ASSETS / "vocabulary.json").write_text(json.dumps(vocab))
    out = tmp_path / "hf"
    result = _convert(run_cli, preset, out)
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("warning")] == [
        "warning: tokenizer: vocab_size: the tokenizer gives ids up to 120, beyond the model's vocab_size = 99: it is "
        "not this model's tokenizer, or the model's embedding was cut"]
    assert json.loads((out / "vocab.json").read_text()) == vocab


def test_an_empty_sentencepiece_model_is_damaged(run_cli, tmp_path: Path) -> None:
    preset = _preset("gemma", tmp_path)
    path = preset / ASSETS / "vocabulary.spm"
    path.write_bytes(b"")
    result = _convert(run_cli, preset, tmp_path / "hf")
    assert result.exit_code == 1 and not (tmp_path / "hf").exists()
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        f"error: tokenizer: {path}: not a SentencePiece model: it has no pieces: no tokenizer written; the output "
        "would lack it (--skip-unreadable writes the rest without it)"]


def test_a_unigram_sentencepiece_model_is_not_carried(run_cli, tmp_path: Path) -> None:
    from formats.io.protowire import bytes_field, fixed32_field, varint_field

    pieces = b"".join(bytes_field(1, bytes_field(1, p.encode()) + fixed32_field(2, 0) + varint_field(3, kind))
                      for p, kind in [("<unk>", 2), ("<s>", 3), ("</s>", 3), ("\u2581a", 1)])
    preset = _preset("gemma", tmp_path)
    path = preset / ASSETS / "vocabulary.spm"
    path.write_bytes(pieces + bytes_field(2, varint_field(3, 1)))  # trainer_spec.model_type = UNIGRAM
    result = _convert(run_cli, preset, tmp_path / "hf")
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("warning")] == [
        f"warning: tokenizer: {path}: a SentencePiece model that is not BPE has no transformers GemmaTokenizer: "
        "no tokenizer written"]
    assert sorted(p.name for p in (tmp_path / "hf").iterdir()) == ["config.json", "model.safetensors"]
