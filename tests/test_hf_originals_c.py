"""``ckpt convert --to hf`` of the original RoFormer (ZhuiyiTechnology/roformer's TF1 ``bert_model.ckpt``) and CANINE
(google-research/language's ``canine_model.ckpt``) releases: the plan, numpy only (the transformers 5 side is
tests/interop/test_hf_transformers5.py, driven by cases.json).

The checkpoints are ``tests/data/hf/roformer`` (real TensorFlow, the release's names: google-research/bert's without
position embeddings) and ``tests/data/hf/canine``; the keys and shapes expected are the oracle's
(``golden/<case>/model.safetensors``: transformers 4.57.6's ``load_tf_weights_in_roformer`` /
``load_tf_weights_in_canine``), for RoFormer without the tied decoder and the sinusoidal table transformers
computes. Bad inputs are rebuilt from those checkpoints with ckpt's own writer.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

import formats

from .hf_edits import refused, rewritten

HF_DATA = Path(__file__).parent / "data" / "hf"
SRC = HF_DATA / "roformer" / "bert_model.ckpt"
TIED = {"cls.predictions.decoder.weight": "roformer.embeddings.word_embeddings.weight",
        "cls.predictions.decoder.bias": "cls.predictions.bias"}
COMPUTED = "roformer.encoder.embed_positions.weight"
"""RoFormer's sinusoidal table: in the oracle's state dict, made by transformers, in no checkpoint variable."""


def _plan(run_cli, src: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--dry-run", "--json", *extra)
    assert result.exit_code == 0, result.output
    assert not out.exists()
    return json.loads(result.stdout)


def test_plan_has_exactly_the_oracles_parameters_and_shapes(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    golden = load_file(str(HF_DATA / "golden" / "roformer" / "model.safetensors"))
    plan = _plan(run_cli, SRC, tmp_path)
    assert {r["key"]: r["shape"] for r in plan["rows"]} == {
        k: list(v.shape) for k, v in golden.items() if k not in TIED and k != COMPUTED}
    assert COMPUTED in golden
    assert all(r["dtype"] == "float32" for r in plan["rows"])
    assert plan["details"]["class"] == "RoFormerForMaskedLM"
    assert plan["details"]["tied"] == TIED
    assert [p for p in plan["problems"] if p["severity"] == "error"] == []
    rows = {r["source"]: r for r in plan["rows"]}
    assert rows["bert/encoder/layer_1/attention/self/query/kernel"]["key"] == \
        "roformer.encoder.layer.1.attention.self.query.weight"
    assert sorted(r["transform"] or "" for r in plan["rows"]).count("transpose") == 13


def test_values_and_config(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    out = tmp_path / "hf"
    result = run_cli("convert", SRC, "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(SRC) as ckpt:
        kernel = ckpt["bert/encoder/layer_0/intermediate/dense/kernel"].read()
        words = ckpt["bert/embeddings/word_embeddings"].read()
    assert np.array_equal(written["roformer.encoder.layer.0.intermediate.dense.weight"], kernel.T)
    assert np.array_equal(written["roformer.embeddings.word_embeddings.weight"], words)
    assert COMPUTED not in written
    config = json.loads((out / "config.json").read_text())
    golden = json.loads((HF_DATA / "golden" / "roformer" / "config.json").read_text())
    fields = ("model_type", "architectures", "vocab_size", "hidden_size", "embedding_size", "num_hidden_layers",
              "num_attention_heads", "intermediate_size", "max_position_embeddings", "type_vocab_size",
              "rotary_value", "layer_norm_eps", "pad_token_id", "hidden_act")
    assert {k: config[k] for k in fields} == {k: golden[k] for k in fields}


def test_roformer_is_detected_and_bert_stays_bert(run_cli, tmp_path: Path) -> None:
    assert _plan(run_cli, SRC, tmp_path)["details"]["family"] == "roformer"
    bert = _plan(run_cli, HF_DATA / "bert" / "bert_model.ckpt", tmp_path)["details"]
    assert (bert["family"], bert["class"]) == ("bert", "BertForPreTraining")
    pooled = _copy(tmp_path, {"bert/pooler/dense/kernel": np.zeros((16, 16), np.float32),  # BERT's names without
                              "bert/pooler/dense/bias": np.zeros(16, np.float32)})  # a position table: not RoFormer's
    result = run_cli("convert", pooled, "-o", tmp_path / "out", "--to", "hf")
    assert result.exit_code == 1 and not (tmp_path / "out").exists()
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        "error: missing: bert.embeddings.position_embeddings.weight: parameter "
        "'bert.embeddings.position_embeddings.weight' [32, 16] of BertForMaskedLM has no source tensor"]


def _copy(tmp_path: Path, change: dict[str, np.ndarray | None], config: dict | None = None, src: Path = SRC) -> Path:
    """The checkpoint re-written by ckpt with ``change`` (None removes a tensor), its (changed) config beside it."""
    return rewritten(src, tmp_path / src.parent.name, change, [next(src.parent.glob("*.json")).name], config)


def _errors(run_cli, src: Path, tmp_path: Path, *family: str) -> list[str]:
    return refused(run_cli, src, tmp_path, *(family or ("--family", "roformer")))


def test_a_bert_position_table_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    table = np.zeros((32, 16), np.float32)  # a BERT checkpoint given as RoFormer
    assert _errors(run_cli, _copy(tmp_path, {"bert/embeddings/position_embeddings": table}), tmp_path) == [
        "error: unmapped: bert/embeddings/position_embeddings: unmapped tensor 'bert/embeddings/position_embeddings' "
        "[32, 16]: no rule of the roformer map (tf1 layout) maps or drops it"]


def test_a_missing_tensor_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    assert _errors(run_cli, _copy(tmp_path, {"cls/predictions/output_bias": None}), tmp_path) == [
        "error: missing: cls.predictions.bias: parameter 'cls.predictions.bias' [50] of RoFormerForMaskedLM has no "
        "source tensor"]


def test_heads_that_do_not_divide_the_hidden_size_are_one_error(run_cli, tmp_path: Path) -> None:
    assert _errors(run_cli, _copy(tmp_path, {}, {"num_attention_heads": 3}), tmp_path) == [
        "error: config: num_attention_heads: num_attention_heads=3 does not divide hidden_size=16: transformers 5 "
        "needs hidden_size to be a multiple of num_attention_heads"]


def test_a_hidden_size_that_contradicts_the_shapes_names_it_in_every_error(run_cli, tmp_path: Path) -> None:
    errors = _errors(run_cli, _copy(tmp_path, {}, {"hidden_size": 32}), tmp_path)
    assert [e.split(": the configuration")[0] for e in errors] == [
        "error: config: embedding_size=32", "error: config: embedding_size=32, type_vocab_size=2",
        "error: config: embedding_size=32, vocab_size=50", "error: config: hidden_size=32",
        "error: config: hidden_size=32, intermediate_size=24"]


# --- CANINE -------------------------------------------------------------------------------------------------------
CANINE = HF_DATA / "canine" / "canine_model.ckpt"


def test_canine_is_detected_and_planned_as_the_oracle(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    out = tmp_path / "out"
    result = run_cli("convert", CANINE, "-o", out, "--to", "hf", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    golden = load_file(str(HF_DATA / "golden" / "canine" / "model.safetensors"))
    assert {r["key"]: r["shape"] for r in plan["rows"]} == {k: list(v.shape) for k, v in golden.items()}
    assert plan["details"]["class"] == "CanineModel" and plan["details"]["tied"] == {}
    assert [p for p in plan["problems"] if p["severity"] == "error"] == []
    rows = {r["key"]: r for r in plan["rows"]}
    assert rows["encoder.layer.1.output.dense.weight"]["source"] == "bert/layer_1/output/dense/kernel"
    assert rows["chars_to_molecules.conv.weight"]["source"] == \
        "initial_char_encoder/initial_char_encoder/chars_to_molecules/conv/kernel"
    assert rows["char_embeddings.token_type_embeddings.weight"]["source"] == "char_embeddings/segment_embeddings"
    assert rows["projection.conv.weight"]["shape"] == [16, 32, 4]


def test_canine_conv_kernels_have_every_axis_reversed_and_the_config_is_the_oracles(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    out = tmp_path / "hf"
    result = run_cli("convert", CANINE, "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(CANINE) as ckpt:
        up = ckpt["final_char_encoder/conv/kernel"].read()
    assert up.shape == (4, 32, 16)
    assert np.array_equal(written["projection.conv.weight"], np.transpose(up))
    config = json.loads((out / "config.json").read_text())
    golden = json.loads((HF_DATA / "golden" / "canine" / "config.json").read_text())
    fields = ("model_type", "architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
              "intermediate_size", "max_position_embeddings", "type_vocab_size", "downsampling_rate",
              "upsampling_kernel_size", "num_hash_functions", "num_hash_buckets", "local_transformer_stride",
              "layer_norm_eps", "pad_token_id", "bos_token_id", "eos_token_id", "hidden_act")
    assert {k: config[k] for k in fields} == {k: golden[k] for k in fields}


def test_canine_bad_inputs_are_one_error_each(run_cli, tmp_path: Path) -> None:
    extra = _copy(tmp_path, {"bert/layer_0/attention/gate": np.zeros(3, np.float32)}, src=CANINE)
    assert _errors(run_cli, extra, tmp_path, "--family", "canine") == [
        "error: unmapped: bert/layer_0/attention/gate: unmapped tensor 'bert/layer_0/attention/gate' [3]: no rule of "
        "the canine map (tf1 layout) maps or drops it"]
    shutil.rmtree(tmp_path / "canine")
    missing = _copy(tmp_path, {"final_char_encoder/conv/bias": None}, src=CANINE)
    assert _errors(run_cli, missing, tmp_path, "--family", "canine") == [
        "error: missing: projection.conv.bias: parameter 'projection.conv.bias' [16] of CanineModel has no source "
        "tensor"]
    shutil.rmtree(tmp_path / "canine")
    heads = _copy(tmp_path, {}, {"num_attention_heads": 3}, src=CANINE)
    assert _errors(run_cli, heads, tmp_path, "--family", "canine") == [
        "error: config: num_attention_heads: num_attention_heads=3 does not divide hidden_size=16: transformers 5 "
        "needs hidden_size to be a multiple of num_attention_heads"]


def test_canine_position_table_must_have_num_hash_buckets_rows(run_cli, tmp_path: Path) -> None:
    # transformers' CanineEmbeddings makes char_position_embeddings with num_hash_buckets rows (the release's
    # max_positions is the same 16384): a checkpoint whose max_positions differs does not fit it
    src = _copy(tmp_path, {"char_embeddings/char_position_embeddings": np.zeros((64, 16), np.float32)},
                {"max_positions": 64}, src=CANINE)
    assert _errors(run_cli, src, tmp_path, "--family", "canine") == [
        "error: config: hidden_size=16, num_hash_buckets=32: the configuration contradicts the shapes: "
        "'char_embeddings/char_position_embeddings' [64, 16] does not fit "
        "'char_embeddings.char_position_embeddings.weight' [32, 16] (candidates: char_embeddings/char_position_embeddings)"]


def test_roformer_without_the_masked_lm_head_is_a_roformer_model(run_cli, tmp_path: Path) -> None:
    with formats.open_checkpoint(SRC) as ckpt:
        heads = [k for k in ckpt if k.startswith("cls/")]
    plan = _plan(run_cli, _copy(tmp_path, dict.fromkeys(heads)), tmp_path)
    assert plan["details"]["class"] == "RoFormerModel"
    keys = sorted(r["key"] for r in plan["rows"])
    assert len(keys) == 36 and keys[0] == "embeddings.LayerNorm.bias" and not any(k.startswith("roformer.") for k in keys)
