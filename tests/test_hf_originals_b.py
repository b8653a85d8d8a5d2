"""``ckpt convert --to hf`` of the original XLNet (zihangdai/xlnet) and GPT-Neo (EleutherAI mesh-tf) releases: the
plan, numpy only (the transformers 5 side is tests/interop/test_hf_transformers5.py, driven by cases.json).

The checkpoints are ``tests/data/hf/{xlnet,gpt_neo}{,_slots}`` (real TensorFlow, the original names); the keys and
shapes expected are the oracle's (``golden/<case>/model.safetensors``: transformers 4.57.6's
``load_tf_weights_in_xlnet`` / ``load_tf_weights_in_gpt_neo``) without the tied LM head. Bad inputs are rebuilt
from those checkpoints with ckpt's own writer.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import formats

from .hf_edits import refused, rewritten

HF_DATA = Path(__file__).parent / "data" / "hf"
XLNET_TIED = {"lm_loss.weight": "transformer.word_embedding.weight"}
NEO_TIED = {"lm_head.weight": "transformer.wte.weight"}
SEQ2SEQ_TIED = {f"{n}": "model.shared.weight" for n in ("model.encoder.embed_tokens.weight",
                                                         "model.decoder.embed_tokens.weight", "lm_head.weight")}
CASES = {"xlnet": ("xlnet/xlnet_model.ckpt", "XLNetLMHeadModel", XLNET_TIED),
         "xlnet_slots": ("xlnet_slots/model.ckpt-3", "XLNetLMHeadModel", XLNET_TIED),
         "xlnet_stsb": ("xlnet_stsb/model.ckpt-100", "XLNetForSequenceClassification", {}),
         "gpt_neo": ("gpt_neo/model.ckpt-1000", "GPTNeoForCausalLM", NEO_TIED),
         "gpt_neo_slots": ("gpt_neo_slots/model.ckpt-1003", "GPTNeoForCausalLM", NEO_TIED),
         "pegasus": ("pegasus/model.ckpt-1000", "PegasusForConditionalGeneration", SEQ2SEQ_TIED),
         "bigbird_pegasus": ("bigbird_pegasus/model.ckpt-1000", "BigBirdPegasusForConditionalGeneration", SEQ2SEQ_TIED),
         "imagegpt": ("imagegpt/model.ckpt-1000", "ImageGPTForCausalImageModeling", {})}
COMPUTED = ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight")
"""Pegasus's sinusoidal tables: in the oracle's state dict, made by transformers, not stored."""


def _plan(run_cli, src: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--dry-run", "--json", *extra)
    assert result.exit_code == 0, result.output
    assert not out.exists()
    return json.loads(result.stdout)


def _golden_shapes(case: str) -> dict[str, list[int]]:
    from safetensors.numpy import load_file

    skip = set(CASES[case][2]) | (set(COMPUTED) if case == "pegasus" else set())
    return {k: list(v.shape) for k, v in load_file(str(HF_DATA / "golden" / case / "model.safetensors")).items()
            if k not in skip}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_has_exactly_the_oracles_parameters_and_shapes(run_cli, tmp_path: Path, case: str) -> None:
    plan = _plan(run_cli, HF_DATA / CASES[case][0], tmp_path)
    assert {r["key"]: r["shape"] for r in plan["rows"]} == _golden_shapes(case)
    assert all(r["dtype"] == "float32" for r in plan["rows"])
    assert plan["details"]["class"] == CASES[case][1]
    assert plan["details"]["tied"] == CASES[case][2]
    assert [p for p in plan["problems"] if p["severity"] == "error"] == []


def test_xlnet_plan_splits_the_stacked_biases_per_layer_and_transposes_only_the_feed_forward(run_cli, tmp_path: Path) -> None:
    rows = {r["source"]: r for r in _plan(run_cli, HF_DATA / "xlnet/xlnet_model.ckpt", tmp_path)["rows"]}
    for name, shape in (("r_w_bias", [2, 8]), ("r_r_bias", [2, 8]), ("r_s_bias", [2, 8]), ("seg_embed", [2, 2, 8])):
        for layer in (0, 1):
            assert rows[f"model/transformer/{name}[{layer}]"] == {
                "source": f"model/transformer/{name}[{layer}]", "key": f"transformer.layer.{layer}.rel_attn.{name}",
                "shape": shape, "dtype": "float32", "note": "", "transform": f"part {layer} of axis 0"}
    assert rows["model/transformer/layer_1/rel_attn/r/kernel"]["key"] == "transformer.layer.1.rel_attn.r"
    assert rows["model/transformer/layer_1/rel_attn/r/kernel"]["transform"] is None
    assert rows["model/transformer/layer_0/ff/layer_1/kernel"]["transform"] == "transpose"
    assert rows["model/transformer/mask_emb/mask_emb"]["shape"] == [1, 1, 16]
    assert sorted(r["transform"] or "" for r in rows.values()).count("transpose") == 4


def test_slots_are_dropped_by_name(run_cli, tmp_path: Path) -> None:
    src = HF_DATA / "xlnet_slots/model.ckpt-3"
    plan = _plan(run_cli, src, tmp_path)
    dropped = {p["key"]: sorted(p["candidates"]) for p in plan["problems"] if p["kind"] == "dropped"}
    with formats.open_checkpoint(src) as ckpt:
        keys = sorted(ckpt)
    assert dropped == {"{*}/{s:Adam|Adam_1|adam_m|adam_v}": [k for k in keys if k.endswith(("/Adam", "/Adam_1"))],
                       "{s:global_step|beta1_power|beta2_power}": ["beta1_power", "beta2_power", "global_step"]}
    neo = _plan(run_cli, HF_DATA / "gpt_neo_slots/model.ckpt-1003", tmp_path)
    dropped = {p["key"]: len(p["candidates"]) for p in neo["problems"] if p["kind"] == "dropped"}
    assert dropped == {"{*}/{s:adam_m|adam_v}": 60, "global_step": 1}


def test_split_values_are_the_parts_of_the_stored_tensor(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    src, out = HF_DATA / "xlnet/xlnet_model.ckpt", tmp_path / "hf"
    assert run_cli("convert", src, "-o", out, "--to", "hf").exit_code == 0
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(src) as ckpt:
        seg = ckpt["model/transformer/seg_embed"].read()
        kernel = ckpt["model/transformer/layer_1/ff/layer_2/kernel"].read()
    assert np.array_equal(written["transformer.layer.1.rel_attn.seg_embed"], seg[1])
    assert np.array_equal(written["transformer.layer.1.ff.layer_2.weight"], kernel.T)
    config = json.loads((out / "config.json").read_text())
    assert {k: config[k] for k in ("vocab_size", "d_model", "n_layer", "n_head", "d_inner", "untie_r")} == {
        "vocab_size": 40, "d_model": 16, "n_layer": 2, "n_head": 2, "d_inner": 24, "untie_r": True}


def _copy(case: str, tmp_path: Path, change: dict[str, np.ndarray | None]) -> Path:
    """The case's checkpoint re-written by ckpt with ``change`` (None removes a tensor), its config beside it."""
    src = HF_DATA / CASES[case][0]
    return rewritten(src, tmp_path / case, change, [c.name for c in src.parent.glob("*.json")])


@pytest.mark.parametrize("shape", [(2, 8), (3, 2, 8)])
def test_relative_biases_of_another_shape_are_one_error_naming_the_tensor(run_cli, tmp_path: Path, shape) -> None:
    # (2, 8): untie_r = False, one [n_head, d_head] for every layer (transformers' loader fails on it: the PyTorch
    # model has no model-wide r_w_bias); (3, 2, 8): three layers' biases in a two-layer model
    value = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    errors = refused(run_cli, _copy("xlnet", tmp_path, {"model/transformer/r_w_bias": value}), tmp_path)
    if len(shape) == 2:  # its first axis happens to be n_layer long: the parts do not fit
        assert errors == [
            "error: config: d_model=16, n_head=2: the configuration contradicts the shapes: "
            "'model/transformer/r_w_bias[0]' [8] does not fit 'transformer.layer.0.rel_attn.r_w_bias' [2, 8] "
            "(and 1 more tensor) (candidates: model/transformer/r_w_bias[0]; model/transformer/r_w_bias[1])"]
    else:
        assert errors == [
            "error: config: n_layer: 'model/transformer/r_w_bias' [3, 2, 8] does not hold one part per {i} along its "
            "first axis (n_layer=2): the configuration contradicts the shapes"]


def test_an_extra_or_missing_tensor_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    extra = _copy("gpt_neo", tmp_path, {"gpt2/h0/attn/gate": np.zeros(3, np.float32)})
    assert refused(run_cli, extra, tmp_path) == [
        "error: unmapped: gpt2/h0/attn/gate: unmapped tensor 'gpt2/h0/attn/gate' [3]: no rule of the gpt_neo map "
        "(mesh-tf layout) maps or drops it"]
    (tmp_path / "out").mkdir()
    shutil.rmtree(tmp_path / "out")
    missing = _copy("xlnet_slots", tmp_path, {"model/lm_loss/bias": None})
    assert refused(run_cli, missing, tmp_path) == [
        "error: missing: lm_loss.bias: parameter 'lm_loss.bias' [40] of XLNetLMHeadModel has no source tensor"]


def test_a_config_that_contradicts_the_shapes_names_the_field(run_cli, tmp_path: Path) -> None:
    src = _copy("gpt_neo", tmp_path, {})
    config = json.loads((src.parent / "config.json").read_text())
    (src.parent / "config.json").write_text(json.dumps({**config, "n_embd": 32}))
    errors = refused(run_cli, src, tmp_path)
    assert len(errors) == 1 and errors[0].startswith("error: config: hidden_size=32: the configuration contradicts "
                                                     "the shapes: "), errors


def test_pegasus_zeroes_the_padding_row_and_writes_the_missing_biases_as_zeros(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    src, out = HF_DATA / "pegasus/model.ckpt-1000", tmp_path / "hf"
    plan = _plan(run_cli, src, tmp_path)
    rows = {r["key"]: r for r in plan["rows"]}
    assert rows["model.shared.weight"]["transform"] == "row 0 zeroed"
    zeros = sorted(k for k, r in rows.items() if r["transform"] == "zeros")
    assert all(r["source"] is None for k, r in rows.items() if k in zeros)
    assert zeros == sorted(["final_logits_bias"] + [
        f"model.{stack}.layers.{i}.{attn}.{p}_proj.bias" for stack, attns in (("encoder", ["self_attn"]),
                                                                             ("decoder", ["self_attn", "encoder_attn"]))
        for i in (0, 1) for attn in attns for p in ("q", "k", "v", "out")])
    warnings = {p["kind"]: p for p in plan["problems"] if p["kind"] in ("zeros", "dropped")}
    assert warnings["zeros"]["severity"] == "warning"
    assert run_cli("convert", src, "-o", out, "--to", "hf").exit_code == 0
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(src) as ckpt:
        embeddings = ckpt["embeddings/weights"].read()
    assert not written["model.shared.weight"][0].any() and embeddings[0].any()
    assert np.array_equal(written["model.shared.weight"][1:], embeddings[1:])
    assert written["final_logits_bias"].shape == (1, 40) and not written["final_logits_bias"].any()
    assert not any(k.endswith("embed_positions.weight") for k in written)


def test_bigbird_pegasus_writes_its_one_position_table_to_both_stacks(run_cli, tmp_path: Path) -> None:
    rows = _plan(run_cli, HF_DATA / "bigbird_pegasus/model.ckpt-1000", tmp_path)["rows"]
    table = "pegasus/embeddings/position_embeddings"
    assert sorted((r["source"], r["key"]) for r in rows if (r["source"] or "").startswith(table)) == [
        (table, "model.encoder.embed_positions.weight"), (f"{table} (copy 1)", "model.decoder.embed_positions.weight")]


def test_pegasus_without_its_params_names_the_fields_and_takes_them_from_hparams(run_cli, tmp_path: Path) -> None:
    src = _copy("pegasus", tmp_path, {})
    (src.parent / "params.json").unlink()
    result = run_cli("convert", src, "-o", tmp_path / "out", "--to", "hf")
    assert result.exit_code == 1 and not (tmp_path / "out").exists()
    assert "missing model configuration: no params.json beside the checkpoint" in result.output
    (src.parent / "params.json").write_text("{}")
    errors = refused(run_cli, src, tmp_path)
    fields = ("encoder_attention_heads", "decoder_attention_heads", "encoder_layers", "decoder_layers")
    assert errors == [f"error: config: {f}: missing model configuration field {f!r} in {src.parent / 'params.json'} "
                      f"(give it with --hparam {f}=VALUE)" for f in fields]
    hparams = [a for f in fields for a in ("--hparam", f"{f}=2")]
    result = run_cli("convert", src, "-o", tmp_path / "out", "--to", "hf", *hparams, "--hparam", "max_position_embeddings=32")
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (config["vocab_size"], config["d_model"], config["encoder_ffn_dim"]) == (40, 16, 24)  # from the shapes


def test_xlnet_fine_tuned_on_stsb_is_a_sequence_classifier_with_num_labels_from_the_head(run_cli, tmp_path: Path) -> None:
    plan = _plan(run_cli, HF_DATA / "xlnet_stsb/model.ckpt-100", tmp_path)
    rows = {r["key"]: r for r in plan["rows"]}
    assert plan["details"]["config"]["num_labels"] == 1
    assert rows["logits_proj.weight"] == {"source": "model/regression_sts-b/logit/kernel", "key": "logits_proj.weight",
                                          "shape": [1, 16], "dtype": "float32", "note": "", "transform": "transpose"}
    assert rows["sequence_summary.summary.weight"]["source"] == "model/sequnece_summary/summary/kernel"
    assert rows["transformer.mask_emb"]["source"] is None and rows["transformer.mask_emb"]["transform"] == "zeros"
    zeros = [p for p in plan["problems"] if p["kind"] == "zeros"]
    assert [(p["candidates"], p["severity"]) for p in zeros] == [(["transformer.mask_emb"], "warning")]
    assert "lm_loss.bias" not in rows and plan["details"]["tied"] == {}


def test_gpt_neo_bfloat16_variables_are_written_as_float32(run_cli, tmp_path: Path) -> None:
    rows = {r["source"]: r for r in _plan(run_cli, HF_DATA / "gpt_neo/model.ckpt-1000", tmp_path)["rows"]}
    with formats.open_checkpoint(HF_DATA / "gpt_neo/model.ckpt-1000") as ckpt:
        assert {ckpt[k].dtype for k in rows} == {"bfloat16"}
    assert rows["gpt2/h1/attn/o"]["transform"] == "transpose + as float32"
    assert rows["gpt2/wte"]["transform"] == "as float32" and rows["gpt2/wte"]["dtype"] == "float32"


@pytest.mark.parametrize("case", ["xlnet", "xlnet_stsb", "gpt_neo", "pegasus", "bigbird_pegasus"])
def test_back_to_tf_names_gives_the_original_model_tensors(run_cli, tmp_path: Path, case: str) -> None:
    src = HF_DATA / CASES[case][0]
    family = {"xlnet_stsb": "xlnet"}.get(case, case)
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", hf, "--to", "hf").exit_code == 0
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", family)
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(back) as restored, formats.open_checkpoint(src) as ckpt:
        original = {k: ckpt[k].read().astype(np.float32) for k in ckpt
                    if ckpt[k].dtype != "int64" and not k.endswith(("adam_m", "adam_v", "Adafactor", "Adafactor_1"))
                    and not (case == "bigbird_pegasus" and k.endswith("bias") and "/attention/" in k)}
        got = {k: restored[k].read() for k in restored}
    if case == "xlnet_stsb":  # written as zeros (fine-tuning has none), so named back as the pretrained model has it
        assert not got.pop("model/transformer/mask_emb/mask_emb").any()
    assert sorted(got) == sorted(original)
    for key, value in original.items():
        if case == "pegasus" and key == "embeddings/weights":  # the padding row, zeroed on the way
            assert not got[key][0].any() and np.array_equal(got[key][1:], value[1:])
            continue
        assert got[key].dtype == np.float32 and np.array_equal(got[key], value), key


def test_imagegpt_assembles_c_attn_and_wte_from_their_pieces(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    src, out = HF_DATA / "imagegpt/model.ckpt-1000", tmp_path / "hf"
    rows = {r["key"]: r for r in _plan(run_cli, src, tmp_path)["rows"]}
    assert rows["transformer.h.1.attn.c_attn.weight"]["source"] == (
        "model/h1/attn/q_proj + model/h1/attn/k_proj + model/h1/attn/v_proj")
    assert rows["transformer.h.1.attn.c_attn.weight"]["transform"] == "pieces along axis 1"
    assert rows["transformer.wte.weight"]["source"] == "model/wte + model/sos"
    assert run_cli("convert", src, "-o", out, "--to", "hf").exit_code == 0
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(src) as ckpt:
        q, k, v = (ckpt[f"model/h1/attn/{p}_proj"].read() for p in "qkv")
        wte, sos = ckpt["model/wte"].read(), ckpt["model/sos"].read()
    assert np.array_equal(written["transformer.h.1.attn.c_attn.weight"], np.concatenate([q.T, k.T, v.T], axis=1))
    assert np.array_equal(written["transformer.wte.weight"], np.concatenate([wte, sos[None]]))
    assert json.loads((out / "config.json").read_text())["vocab_size"] == 41


def test_imagegpt_piece_of_the_wrong_size_is_one_error(run_cli, tmp_path: Path) -> None:
    src = _copy("imagegpt", tmp_path, {"model/sos": np.zeros(8, np.float32)})
    assert refused(run_cli, src, tmp_path) == [
        "error: config: model/sos: 'model/sos' [8] does not fit its piece [1, 16] of 'transformer.wte.weight' [41, 16]: "
        "the configuration contradicts the shapes"]
