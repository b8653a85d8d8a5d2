"""``ckpt convert --to hf`` of a bert2bert module (Google's bertseq2seq TF Hub modules holding an encoder stack and a
decoder stack over one embedding table) as one transformers ``EncoderDecoderModel`` directory, numpy only (the
transformers 5 side is tests/interop/test_hf_bert2bert_transformers5.py).

Expected tensors and config fields are the oracle's (``tests/data/hf/golden/bert_generation_bert2bert``, written by
``generators/make_originals_f.py``: transformers 4.57.6's bert2bert recipe, the encoder a ``BertGenerationEncoder``
loaded by ``load_tf_weights_in_bert_generation(..., is_encoder=True)``, the decoder a ``BertGenerationDecoder`` by
``is_encoder_named_decoder=True``, then ``EncoderDecoderModel(encoder=, decoder=)``). Bad inputs are copies of the
module, changed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import formats

from .hf_edits import refused, saved, variables, written_equal

HF_DATA = Path(__file__).parent / "data" / "hf"
CASE = "bert_generation_bert2bert"
MODULE = HF_DATA / CASE / "model.ckpt-5"
GOLDEN = HF_DATA / "golden" / CASE
HEADS = ("--hparam", "num_attention_heads=4")  # hidden 32: BERT's 64 per head would make none
TIED = ("decoder.lm_head.decoder.weight", "decoder.lm_head.decoder.bias")  # tied by transformers, not stored
FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
          "max_position_embeddings", "hidden_act", "layer_norm_eps", "model_type")


def _golden() -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return {k: v for k, v in load_file(str(GOLDEN / "model.safetensors")).items() if k not in TIED}


def test_the_module_converts_to_the_oracles_tensors_and_config(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    result = run_cli("convert", MODULE, "-o", out, "--to", "hf", *HEADS)
    assert result.exit_code == 0, result.output
    config = written_equal(out, _golden())
    oracle = json.loads((GOLDEN / "config.json").read_text())
    assert config["architectures"] == oracle["architectures"] == ["EncoderDecoderModel"]
    assert config["model_type"] == oracle["model_type"] == "encoder-decoder"
    assert config["is_encoder_decoder"] is oracle["is_encoder_decoder"] is True
    # the stacks are not shared: nothing ties the encoder to the decoder (transformers 4.x's default, absent)
    assert config.get("tie_encoder_decoder", False) is oracle.get("tie_encoder_decoder", False) is False
    for half in ("encoder", "decoder"):
        for name in FIELDS:
            mine, theirs = config[half][name], oracle[half][name]
            assert mine == theirs and type(mine) is type(theirs), (half, name)
        decoder = half == "decoder"
        assert config[half]["is_decoder"] is decoder and config[half].get("add_cross_attention", False) is decoder
        assert oracle[half].get("is_decoder", False) is decoder
        assert oracle[half].get("add_cross_attention", False) is decoder
        assert config[half].get("tie_word_embeddings", True) is oracle[half].get("tie_word_embeddings", True)


def test_each_half_reads_the_one_embedding_table_and_its_own_stack(run_cli, tmp_path: Path) -> None:
    """The loader's rule by numpy alone: both halves' embeddings are the module's one table (as stored), the encoder's
    layers its encoder stack (``encoder.encoder.layer.N``), the decoder's its decoder stack (``decoder.bert.encoder
    .layer.N``, encdec -> crossattention), kernels transposed."""
    from safetensors.numpy import load_file

    out = tmp_path / "hf"
    assert run_cli("convert", MODULE, "-o", out, "--to", "hf", *HEADS).exit_code == 0
    written = load_file(str(out / "model.safetensors"))
    v = variables(MODULE)
    table = v["module/bert/embeddings/word_embeddings"]
    assert written["encoder.embeddings.word_embeddings.weight"].tobytes() == table.tobytes()
    assert written["decoder.bert.embeddings.word_embeddings.weight"].tobytes() == table.tobytes()
    kernel = v["module/bert/encoder/layer_1/attention/self/query/kernel"]
    assert written["encoder.encoder.layer.1.attention.self.query.weight"].tobytes() == kernel.T.copy().tobytes()
    kernel = v["module/bert/decoder/layer_1/attention/self/query/kernel"]
    assert written["decoder.bert.encoder.layer.1.attention.self.query.weight"].tobytes() == kernel.T.copy().tobytes()
    kernel = v["module/bert/decoder/layer_0/attention/encdec/value/kernel"]
    assert written["decoder.bert.encoder.layer.0.crossattention.self.value.weight"].tobytes() == \
        kernel.T.copy().tobytes()
    assert not written["decoder.lm_head.bias"].any()  # the loader's initial zeros


def test_plan_details_and_notes(run_cli, tmp_path: Path) -> None:
    result = run_cli("convert", MODULE, "-o", tmp_path / "hf", "--to", "hf", *HEADS, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    details = plan["details"]
    assert (details["family"], details["variant"], details["class"]) == ("bert_generation", "bert2bert",
                                                                         "EncoderDecoderModel")
    assert {h: d["class"] for h, d in details["halves"].items()} == {
        "encoder": "BertGenerationEncoder", "decoder": "BertGenerationDecoder"}
    assert details["tied"] == {"decoder.lm_head.decoder.weight": "decoder.bert.embeddings.word_embeddings.weight",
                               "decoder.lm_head.decoder.bias": "decoder.lm_head.bias"}
    rows = {r["key"]: r for r in plan["rows"]}
    assert rows["decoder.lm_head.bias"]["source"] is None and rows["decoder.lm_head.bias"]["transform"] == "zeros"
    messages = [p["message"] for p in plan["problems"] if p["kind"] in ("dropped", "zeros")]
    assert messages == [  # global_step once, though each half leaves it out
        '1 tensor left out: a name holding "global" (global_step), which load_tf_weights_in_bert_generation skips',
        "decoder: 1 parameter written as zeros: the lm head is not in a bertseq2seq module "
        "(load_tf_weights_in_bert_generation leaves lm_head.bias at its initial zeros)"]
    assert all(p["severity"] == "warning" for p in plan["problems"])
    assert not (tmp_path / "hf").exists()


def test_a_missing_tensor_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    tensors = variables(MODULE)
    tensors.pop("module/bert/decoder/layer_1/attention/encdec/key/bias")
    assert refused(run_cli, saved(tensors, tmp_path / "src"), tmp_path, *HEADS) == [
        "error: missing: decoder.bert.encoder.layer.1.crossattention.self.key.bias: decoder: parameter "
        "'bert.encoder.layer.1.crossattention.self.key.bias' [32] of BertGenerationDecoder has no source tensor"]


def test_a_tensor_neither_half_maps_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    tensors = variables(MODULE)
    tensors["module/bert/pooler/dense/kernel"] = np.zeros((32, 32), np.float32)  # the loader fails on it too
    assert refused(run_cli, saved(tensors, tmp_path / "src"), tmp_path, *HEADS) == [
        "error: unmapped: module/bert/pooler/dense/kernel: unmapped tensor 'module/bert/pooler/dense/kernel' [32, 32]: "
        "no rule of the bert_generation map (tf-hub-module layout) maps or drops it"]


def test_a_decoder_stack_without_its_encoder_decoder_attention_is_refused(run_cli, tmp_path: Path) -> None:
    """Its decoder half would be a BertGenerationEncoder: no EncoderDecoderModel the recipe made."""
    tensors = {k: v for k, v in variables(MODULE).items() if "/encdec" not in k}
    source = saved(tensors, tmp_path / "src")
    assert refused(run_cli, source, tmp_path, *HEADS) == [
        f"error: family: {source}: the decoder half of this module plans as BertGenerationEncoder, not as "
        "BertGenerationDecoder (EncoderDecoderModel's decoder; the bert_generation map's bert2bert variant)"]


def test_without_a_head_count_one_error_names_the_field(run_cli, tmp_path: Path) -> None:
    assert refused(run_cli, MODULE, tmp_path) == [
        "error: config: num_attention_heads: num_attention_heads=0: a model needs at least one attention head "
        "(transformers 5 cannot build this configuration; --hparam num_attention_heads=N sets it)"]


def test_a_variant_the_map_refuses_is_still_one_error(run_cli, tmp_path: Path) -> None:
    """A map whose variant says ``refuse`` (a user's --rules copy of the bert_generation map that does not convert
    bert2bert modules) refuses such a module with one error naming the variant."""
    family = Path(formats.__file__).parent / "ops" / "convert" / "hf" / "families" / "bert_generation.toml"
    text = family.read_text()
    start = text.index('composite = {')
    end = text.index("[[variants]]", start)
    rules = tmp_path / "bert_generation.toml"
    rules.write_text(text[:start] + 'refuse = "no bert2bert here"\n\n' + text[end:])
    (tmp_path / "o").mkdir()
    assert refused(run_cli, MODULE, tmp_path / "o", *HEADS, "--rules", str(rules)) == [
        f"error: family: {MODULE}: no bert2bert here (the bert_generation map's bert2bert variant)"]


def test_the_family_named_or_detected_gives_the_same_directory(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    for name, options in (("detected", ()), ("named", ("--family", "bert_generation"))):
        result = run_cli("convert", MODULE, "-o", tmp_path / name, "--to", "hf", *HEADS, *options)
        assert result.exit_code == 0, result.output
    a, b = (load_file(str(tmp_path / n / "model.safetensors")) for n in ("detected", "named"))
    assert sorted(a) == sorted(b) and all(a[k].tobytes() == b[k].tobytes() for k in a)
    assert (tmp_path / "detected" / "config.json").read_text() == (tmp_path / "named" / "config.json").read_text()


def test_a_composite_class_transformers5_lacks_is_one_error(run_cli, tmp_path: Path) -> None:
    family = Path(formats.__file__).parent / "ops" / "convert" / "hf" / "families" / "bert_generation.toml"
    rules = tmp_path / "bert_generation.toml"
    rules.write_text(family.read_text().replace('class = "EncoderDecoderModel"', 'class = "EncoderDecoderModelX"'))
    (tmp_path / "o").mkdir()
    assert refused(run_cli, MODULE, tmp_path / "o", *HEADS, "--rules", str(rules)) == [
        "error: config: architectures: architectures=['EncoderDecoderModelX']: transformers 5 has no class "
        "'EncoderDecoderModelX' for model_type 'encoder-decoder'"]
