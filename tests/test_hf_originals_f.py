"""``ckpt convert --to hf`` of BERT-generation: Google's bertseq2seq TF Hub modules' variables, as transformers'
``BertGenerationEncoder`` (an encoder module) and ``BertGenerationDecoder`` (a decoder module, its stack named
``decoder``) (a module holding both: tests/test_hf_bert2bert.py), numpy only (the transformers 5 side is tests/interop/test_hf_transformers5.py, driven by cases.json).

Expected keys, shapes, values and config fields are the oracle's (``tests/data/hf/golden/bert_generation_*``, written
by ``generators/make_originals_f.py``: transformers 4.57.6's ``load_tf_weights_in_bert_generation`` with
``is_encoder`` / ``is_encoder_named_decoder``, run on a ``hub.Module`` stand-in over the same checkpoint). Bad inputs
are copies of those files, changed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import formats

from .hf_edits import refused, saved, variables, written_equal

HF_DATA = Path(__file__).parent / "data" / "hf"
CASES = {"bert_generation_encoder": "BertGenerationEncoder", "bert_generation_decoder": "BertGenerationDecoder"}
HEADS = ("--hparam", "num_attention_heads=4")  # hidden 32: BERT's 64 per head would make none
TIED = ("lm_head.decoder.weight", "lm_head.decoder.bias")  # tied by transformers, not stored
FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
          "max_position_embeddings", "hidden_act", "layer_norm_eps", "model_type", "architectures")


def _module(case: str) -> Path:
    return HF_DATA / case / "model.ckpt-5"


def _golden(case: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return {k: v for k, v in load_file(str(HF_DATA / "golden" / case / "model.safetensors")).items()
            if k not in TIED}


def _convert(run_cli, src: Path, out: Path, *options: str) -> None:
    result = run_cli("convert", src, "-o", out, "--to", "hf", *HEADS, *options)
    assert result.exit_code == 0, result.output


def _written_equal_golden(out: Path, case: str) -> dict:
    return written_equal(out, _golden(case))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_module_converts_to_the_oracles_tensors_and_config(run_cli, tmp_path: Path, case: str) -> None:
    out = tmp_path / "hf"
    _convert(run_cli, _module(case), out)
    config = _written_equal_golden(out, case)
    oracle = json.loads((HF_DATA / "golden" / case / "config.json").read_text())
    for name in FIELDS:
        assert config[name] == oracle[name] and type(config[name]) is type(oracle[name]), name
    assert config["architectures"] == [CASES[case]]
    decoder = case.endswith("decoder")
    assert config["is_decoder"] is decoder and config.get("add_cross_attention", False) is decoder
    assert oracle.get("is_decoder", False) is decoder and oracle.get("add_cross_attention", False) is decoder


def test_the_loaders_rule_by_numpy_alone(run_cli, tmp_path: Path) -> None:
    """load_tf_weights_in_bert_generation's reading, independently of the golden files: the first two name parts
    dropped, embeddings as stored, every other array transposed, encdec -> crossattention.self, encdec_output ->
    crossattention.output, kernel/gamma -> weight, beta -> bias, the decoder stack into the model's bert.encoder."""
    from safetensors.numpy import load_file

    out = tmp_path / "hf"
    _convert(run_cli, _module("bert_generation_decoder"), out)
    written = load_file(str(out / "model.safetensors"))
    expected: dict[str, np.ndarray] = {}
    for name, array in variables(_module("bert_generation_decoder")).items():
        if "global" in name:
            continue
        parts = name.split("/")[2:]
        if parts[0] == "embeddings" and parts[1] != "LayerNorm":
            expected[f"bert.embeddings.{parts[1]}.weight"] = array
            continue
        words = {"kernel": "weight", "gamma": "weight", "beta": "bias", "decoder": "encoder"}
        mapped = [words.get(p, p) for p in parts]
        text = ".".join(mapped).replace("attention.encdec_output", "crossattention.output")
        text = text.replace("attention.encdec", "crossattention.self").replace("layer_", "layer.")
        expected[f"bert.{text}"] = array.T
    expected["lm_head.bias"] = np.zeros(40, np.float32)  # the loader leaves it at its initial zeros
    assert sorted(written) == sorted(expected)
    for key, value in expected.items():
        assert written[key].tobytes() == np.ascontiguousarray(value).tobytes(), key


def test_any_two_leading_name_parts_are_dropped(run_cli, tmp_path: Path) -> None:
    tensors = {k.replace("module/bert/", "bertseq2seq/roberta24_cnndm/", 1): v
               for k, v in variables(_module("bert_generation_decoder")).items()}
    out = tmp_path / "hf"
    _convert(run_cli, saved(tensors, tmp_path / "renamed"), out)
    _written_equal_golden(out, "bert_generation_decoder")


def test_plan_rows_and_notes(run_cli, tmp_path: Path) -> None:
    result = run_cli("convert", _module("bert_generation_decoder"), "-o", tmp_path / "hf", "--to", "hf", *HEADS,
                     "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    rows = {r["key"]: r for r in plan["rows"]}
    assert {k: r["shape"] for k, r in rows.items()} == {
        k: list(v.shape) for k, v in _golden("bert_generation_decoder").items()}
    assert rows["lm_head.bias"]["source"] is None and rows["lm_head.bias"]["transform"] == "zeros"
    assert rows["bert.embeddings.word_embeddings.weight"]["transform"] is None  # embeddings: as stored
    assert plan["details"]["class"] == "BertGenerationDecoder" and plan["details"]["tied"] == {
        "lm_head.decoder.weight": "bert.embeddings.word_embeddings.weight", "lm_head.decoder.bias": "lm_head.bias"}
    messages = [p["message"] for p in plan["problems"]]
    assert messages[-2:] == [
        "1 parameter written as zeros: the lm head is not in a bertseq2seq module (load_tf_weights_in_bert_generation "
        "leaves lm_head.bias at its initial zeros)",
        '1 tensor left out: a name holding "global" (global_step), which load_tf_weights_in_bert_generation skips']
    assert not (tmp_path / "hf").exists()


def test_a_missing_tensor_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    tensors = variables(_module("bert_generation_encoder"))
    tensors.pop("module/bert/encoder/layer_1/output/dense/bias")
    assert refused(run_cli, saved(tensors, tmp_path / "src"), tmp_path, *HEADS) == [
        "error: missing: bert.encoder.layer.1.output.dense.bias: parameter 'bert.encoder.layer.1.output.dense.bias' "
        "[32] of BertGenerationEncoder has no source tensor"]


def test_a_tensor_the_loader_has_no_place_for_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    tensors = variables(_module("bert_generation_encoder"))
    tensors["module/bert/pooler/dense/kernel"] = np.zeros((32, 32), np.float32)  # the loader fails on it too
    assert refused(run_cli, saved(tensors, tmp_path / "src"), tmp_path, *HEADS) == [
        "error: unmapped: module/bert/pooler/dense/kernel: unmapped tensor 'module/bert/pooler/dense/kernel' [32, 32]: "
        "no rule of the bert_generation map (tf-hub-module layout) maps or drops it"]


def test_a_module_holding_both_stacks_converts_as_one_encoder_decoder_model(run_cli, tmp_path: Path) -> None:
    """A bert2bert module (encoder and decoder stacks): transformers 4.x's script converted one half per run
    (--is_encoder, --is_encoder_named_decoder) and the recipe joined them in an EncoderDecoderModel; ckpt writes that
    directory (tests/test_hf_bert2bert.py checks it against the oracle)."""
    tensors = {**variables(_module("bert_generation_encoder")), **variables(_module("bert_generation_decoder"))}
    result = run_cli("convert", saved(tensors, tmp_path / "src"), "-o", tmp_path / "hf", "--to", "hf", *HEADS,
                     "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    details = json.loads(result.stdout)["details"]
    assert (details["variant"], details["class"]) == ("bert2bert", "EncoderDecoderModel")


def test_without_a_head_count_the_default_is_berts_head_size(run_cli, tmp_path: Path) -> None:
    """No configuration ships with a module: num_attention_heads defaults to hidden_size/64 (BERT's head size), which
    a hidden size of 32 makes 0: one error naming the field (--hparam num_attention_heads=N gives it)."""
    assert refused(run_cli, _module("bert_generation_encoder"), tmp_path) == [
        "error: config: num_attention_heads: num_attention_heads=0: a model needs at least one attention head "
        "(transformers 5 cannot build this configuration; --hparam num_attention_heads=N sets it)"]


def test_the_wrong_family_is_one_error(run_cli, tmp_path: Path) -> None:
    assert refused(run_cli, _module("bert_generation_encoder"), tmp_path, "--family", "bert") == [
        f"error: family: {_module('bert_generation_encoder')}: no source layout of the bert map (tf1, "
        "tf2-model-garden, tfhub-saved-model, tfhub-saved-model-v2, keras-hub) recognises these variable names"]
    bert = HF_DATA / "bert" / "bert_model.ckpt"
    (tmp_path / "b").mkdir()
    assert refused(run_cli, bert, tmp_path / "b", "--family", "bert_generation") == [
        f"error: family: {bert}: no source layout of the bert_generation map (tf-hub-module) recognises these "
        "variable names"]


def test_the_family_is_detected(run_cli, tmp_path: Path) -> None:
    for case, cls in CASES.items():
        result = run_cli("convert", _module(case), "-o", tmp_path / case, "--to", "hf", *HEADS, "--dry-run", "--json")
        assert result.exit_code == 0, result.output
        details = json.loads(result.stdout)["details"]
        assert (details["family"], details["layout"], details["class"]) == ("bert_generation", "tf-hub-module", cls)


def test_naming_the_tensors_back_is_refused(run_cli, tmp_path: Path) -> None:
    """The map drops two name parts whatever they are: --to tf-name has none to give back (nor which stack), so it
    refuses rather than write '//encoder/...' names."""
    hf = tmp_path / "hf"
    _convert(run_cli, _module("bert_generation_decoder"), hf)
    back = tmp_path / "back"
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", "bert_generation")
    assert result.exit_code == 1 and not back.exists()
    family = Path(formats.__file__).parent / "ops" / "convert" / "hf" / "families" / "bert_generation.toml"
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        f"error: family: {family}: the bert_generation map cannot name the tensors back: its source names' {{a}}, "
        "{b} parts (any name) are not in the parameter names"]
