"""``ckpt convert --to hf`` of google-research/tapas's and Funnel-Transformer's TF1 checkpoints (issue 37, part D): the plan and the written
files, numpy only (the transformers 5 side is tests/interop/test_hf_transformers5.py, driven by cases.json).

The checkpoints are ``tests/data/hf/{tapas,tapas_sqa,funnel}`` (real TensorFlow, the original names: seven
token-type tables, the SQA head's scalar biases; Funnel's globally numbered layers); the keys, shapes and values
expected are the oracle's (``golden/<case>/model.safetensors``: transformers 4.57.6's ``load_tf_weights_in_tapas``
/ ``load_tf_weights_in_funnel``). Bad inputs are rebuilt from those
checkpoints with ckpt's own writer.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.ops.convert.hf.family import evaluate

from .hf_edits import refused, rewritten

HF_DATA = Path(__file__).parent / "data" / "hf"
CASES = {"tapas": ("tapas/model.ckpt-3", "TapasModel"),
         "tapas_sqa": ("tapas_sqa/model.ckpt-3", "TapasForQuestionAnswering"),
         "tapas_mlm": ("tapas_mlm/model.ckpt-3", "TapasForMaskedLM"),
         "tapas_tabfact": ("tapas_tabfact/model.ckpt-3", "TapasForSequenceClassification"),
         "funnel": ("funnel/model.ckpt-3", "FunnelModel")}
FIELDS = {"tapas": ("type_vocab_sizes", "reset_position_index_per_cell", "hidden_size", "num_hidden_layers",
                    "num_attention_heads", "intermediate_size", "max_position_embeddings", "vocab_size"),
          "funnel": ("block_sizes", "block_repeats", "num_decoder_layers", "d_model", "n_head", "d_head", "d_inner",
                     "hidden_act", "layer_norm_eps", "pooling_type", "attention_type", "separate_cls", "truncate_seq",
                     "pool_q_only", "vocab_size")}
"""config.json fields that must be the oracle's (its config.json has more: transformers' defaults)."""


def _plan(run_cli, src: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--dry-run", "--json", *extra)
    assert result.exit_code == 0, result.output
    assert not out.exists()
    return json.loads(result.stdout)


MLM_TIED = {"cls.predictions.decoder.weight": "tapas.embeddings.word_embeddings.weight",
            "cls.predictions.decoder.bias": "cls.predictions.bias"}
"""TapasForMaskedLM's tied parameters: in the oracle's state dict, not stored by ckpt (transformers ties them)."""
DROPPED = {"tapas_mlm": [("cls/seq_relationship/{*}", ["cls/seq_relationship/output_bias",
                                                       "cls/seq_relationship/output_weights"]),
                         ("global_step", ["global_step"]),
                         ("pooler", ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"])],
           "tapas_tabfact": [("cell_selection", ["output_bias", "output_weights"]), ("global_step", ["global_step"])]}


def _golden(case: str) -> dict[str, np.ndarray]:
    """The oracle's state dict without the tied parameters."""
    from safetensors.numpy import load_file

    golden = load_file(str(HF_DATA / "golden" / case / "model.safetensors"))
    return {k: v for k, v in golden.items() if case != "tapas_mlm" or k not in MLM_TIED}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_has_exactly_the_oracles_parameters_and_shapes(run_cli, tmp_path: Path, case: str) -> None:
    plan = _plan(run_cli, HF_DATA / CASES[case][0], tmp_path)
    assert {r["key"]: r["shape"] for r in plan["rows"]} == {k: list(v.shape) for k, v in _golden(case).items()}
    assert all(r["dtype"] == "float32" for r in plan["rows"])
    assert plan["details"]["family"] == case.split("_")[0] and plan["details"]["class"] == CASES[case][1]
    assert [p for p in plan["problems"] if p["severity"] == "error"] == []
    if case == "tapas_mlm":
        assert plan["details"]["tied"] == MLM_TIED
    assert sorted((p["key"], sorted(p["candidates"])) for p in plan["problems"] if p["kind"] == "dropped") == \
        DROPPED.get(case, [("global_step", ["global_step"])])
    notes = [p["message"] for p in plan["problems"] if p["kind"] != "dropped"]
    assert notes == (["num_labels = 2 from the shape of output_weights_cls"] if case == "tapas_tabfact" else [])


@pytest.mark.parametrize("case", sorted(CASES))
def test_written_tensors_and_config_are_the_oracles(run_cli, tmp_path: Path, case: str) -> None:
    from safetensors.numpy import load_file

    out = tmp_path / "hf"
    result = run_cli("convert", HF_DATA / CASES[case][0], "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    written, golden = load_file(str(out / "model.safetensors")), _golden(case)
    assert sorted(written) == sorted(golden)
    for key, value in golden.items():
        assert written[key].shape == value.shape and written[key].tobytes() == value.tobytes(), key
    config = json.loads((out / "config.json").read_text())
    oracle = json.loads((HF_DATA / "golden" / case / "config.json").read_text())
    for name in (*FIELDS[case.split("_")[0]], "architectures", "model_type"):
        assert config[name] == oracle[name], name


def test_sqa_head_keeps_its_scalar_biases_as_scalars(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    src, out = HF_DATA / "tapas_sqa/model.ckpt-3", tmp_path / "hf"
    assert run_cli("convert", src, "-o", out, "--to", "hf").exit_code == 0
    written = load_file(str(out / "model.safetensors"))
    with formats.open_checkpoint(src) as ckpt:
        for name in ("output_bias", "column_output_bias", "output_weights", "column_output_weights"):
            stored = np.asarray(ckpt[name].read())
            assert written[name].shape == stored.shape and written[name].tobytes() == stored.tobytes(), name
    assert written["output_bias"].shape == () and written["output_weights"].shape == (16,)


def test_list_items_in_shape_expressions() -> None:
    values = {"type_vocab_sizes": [3, 8, 10], "hidden_size": 16}
    assert evaluate("type_vocab_sizes[2]", values) == 10
    assert evaluate("2*type_vocab_sizes[0]+hidden_size", values) == 22
    with pytest.raises(ValueError, match=r"type_vocab_sizes is \[3, 8, 10\], not a list with an item 6"):
        evaluate("type_vocab_sizes[6]", values)
    with pytest.raises(ValueError, match="not a list"):
        evaluate("hidden_size[0]", values)
    with pytest.raises(KeyError):
        evaluate("token_type_sizes[0]", values)


def _copy(case: str, tmp_path: Path, change: dict[str, np.ndarray | None], config: dict | None = None) -> Path:
    """The case's checkpoint re-written by ckpt with ``change`` (None removes a tensor), its bert_config.json beside
    it (with ``config``'s fields over it)."""
    src = HF_DATA / CASES[case][0]
    return rewritten(src, tmp_path / case, change, ["config.json" if case == "funnel" else "bert_config.json"], config)


def test_a_token_type_table_the_config_contradicts_names_the_field(run_cli, tmp_path: Path) -> None:
    src = _copy("tapas", tmp_path, {"bert/embeddings/token_type_embeddings_6": np.zeros((9, 16), np.float32)})
    assert refused(run_cli, src, tmp_path) == [
        "error: config: hidden_size=16, type_vocab_sizes[6]=10: the configuration contradicts the shapes: "
        "'bert/embeddings/token_type_embeddings_6' [9, 16] does not fit 'embeddings.token_type_embeddings_6.weight' "
        "[10, 16] (candidates: bert/embeddings/token_type_embeddings_6)"]


def test_a_config_with_too_few_token_types_is_one_error(run_cli, tmp_path: Path) -> None:
    src = _copy("tapas", tmp_path, {}, {"type_vocab_size": [3, 8, 8]})
    assert refused(run_cli, src, tmp_path) == [
        "error: config: config: model configuration: type_vocab_sizes is [3, 8, 8], not a list with an item 3"]


def test_a_missing_scalar_bias_or_an_unmapped_head_is_one_error_naming_it(run_cli, tmp_path: Path) -> None:
    src = _copy("tapas_sqa", tmp_path, {"column_output_bias": None})
    assert refused(run_cli, src, tmp_path) == [
        "error: missing: column_output_bias: parameter 'column_output_bias' [] of TapasForQuestionAnswering has no "
        "source tensor"]
    (tmp_path / "tapas_sqa").rename(tmp_path / "first")
    agg = _copy("tapas_sqa", tmp_path, {"output_weights_agg": np.zeros((4, 16), np.float32)})
    assert refused(run_cli, agg, tmp_path, "--hf-task", "wtq") == [
        "error: missing: aggregation_classifier.bias: parameter 'aggregation_classifier.bias' [4] of "
        "TapasForQuestionAnswering has no source tensor"]
    (tmp_path / "tapas_sqa").rename(tmp_path / "second")
    other = _copy("tapas_sqa", tmp_path, {"output_weights_other": np.zeros((4, 16), np.float32)})
    assert refused(run_cli, other, tmp_path) == [
        "error: unmapped: output_weights_other: unmapped tensor 'output_weights_other' [4, 16]: no rule of the tapas "
        "map (tf1 layout) maps or drops it"]


# --- Funnel-Transformer -------------------------------------------------------------------------------------------

def test_locate_reads_a_global_layer_number_as_block_and_layer() -> None:
    from formats.ops.convert.hf.family import global_index, locate

    config = {"block_sizes": [1, 2]}
    assert [locate(i, config, "block_sizes") for i in range(5)] == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert [global_index(b, n, config, "block_sizes") for b, n in ((0, 0), (1, 0), (1, 1), (2, 0), (2, 1))] == [
        0, 1, 2, 3, 4]
    for bad in (3, [], [1, 0], [1, True], "4_4_4"):
        with pytest.raises(ValueError, match="not a list of block sizes"):
            locate(0, {"block_sizes": bad}, "block_sizes")
    with pytest.raises(KeyError):
        locate(0, {}, "block_sizes")


def test_funnel_layers_go_to_their_blocks_and_the_decoder(run_cli, tmp_path: Path) -> None:
    rows = {r["source"]: r for r in _plan(run_cli, HF_DATA / "funnel/model.ckpt-3", tmp_path)["rows"]}
    where = {s.split("/")[2]: r["key"].rsplit(".attention.", 1)[0] for s, r in rows.items()
             if s.endswith("/rel_attn/r_w_bias")}
    assert where == {"layer_0": "encoder.blocks.0.0", "layer_1": "encoder.blocks.1.0", "layer_2": "encoder.blocks.1.1",
                     "layer_3": "decoder.layers.0"}
    q = rows["model/encoder/layer_2/rel_attn/q/kernel"]
    assert (q["key"], q["shape"], q["transform"]) == ("encoder.blocks.1.1.attention.q_head.weight", [16, 16],
                                                      "reshape + transpose")
    assert rows["model/decoder/layer_3/rel_attn/r/kernel"]["shape"] == [16, 2, 8]
    assert rows["model/decoder/layer_3/rel_attn/r/kernel"]["transform"] is None


def test_funnel_without_its_decoder_is_a_base_model(run_cli, tmp_path: Path) -> None:
    with formats.open_checkpoint(HF_DATA / "funnel/model.ckpt-3") as ckpt:
        gone = {k: None for k in ckpt if k.startswith("model/decoder/")}
    src = _copy("funnel", tmp_path, gone)
    plan = _plan(run_cli, src, tmp_path)
    assert plan["details"]["class"] == "FunnelBaseModel"
    assert {r["key"]: r["shape"] for r in plan["rows"]} == {
        k: list(v.shape) for k, v in _golden("funnel").items() if not k.startswith("decoder.")}


def test_funnel_decoder_layer_numbered_inside_the_blocks_is_unmapped(run_cli, tmp_path: Path) -> None:
    with formats.open_checkpoint(HF_DATA / "funnel/model.ckpt-3") as ckpt:
        tensors = {k: ckpt[k].read() for k in ckpt if k.startswith("model/decoder/")}
    change: dict[str, np.ndarray | None] = {k: None for k in tensors}
    change.update({k.replace("layer_3", "layer_0"): v for k, v in tensors.items()})
    errors = refused(run_cli, _copy("funnel", tmp_path, change), tmp_path)
    assert errors[0] == ("error: unmapped: model/decoder/layer_0/ff/layer_1/bias: unmapped tensor "
                         "'model/decoder/layer_0/ff/layer_1/bias' [24]: no rule of the funnel map (tf1 layout) maps "
                         "or drops it")
    assert len([e for e in errors if e.startswith("error: unmapped: model/decoder/layer_0/")]) == len(tensors)


def test_funnel_back_to_tf_names_gives_the_original_tensors(run_cli, tmp_path: Path) -> None:
    src = HF_DATA / "funnel/model.ckpt-3"
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", hf, "--to", "hf").exit_code == 0
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", "funnel")
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(back) as restored, formats.open_checkpoint(src) as ckpt:
        original = {k: ckpt[k].read() for k in ckpt if k != "global_step"}
        got = {k: restored[k].read() for k in restored}
    assert sorted(got) == sorted(original)
    for key, value in original.items():
        assert got[key].shape == value.shape and got[key].tobytes() == value.tobytes(), key


@pytest.mark.parametrize("sizes", [[1, 1], [1, 3], [2, 2]])
def test_funnel_block_sizes_that_do_not_add_up_are_one_error(run_cli, tmp_path: Path, sizes: list[int]) -> None:
    src = _copy("funnel", tmp_path, {}, {"block_sizes": sizes, "block_repeats": [1] * len(sizes)})
    assert refused(run_cli, src, tmp_path) == [
        f"error: config: block_sizes: block_sizes={sizes} in {src.parent / 'config.json'} makes {sum(sizes)} layers, "
        "but the checkpoint holds 3 (layers 0 to 2): the configuration does not describe this checkpoint"]


@pytest.mark.parametrize("sizes, why", [("1_2", "'1_2'"), ([], "[]"), ([1, 0, 2], "[1, 0, 2]")])
def test_funnel_block_sizes_that_are_no_list_of_sizes_are_one_error(run_cli, tmp_path: Path, sizes, why: str) -> None:
    src = _copy("funnel", tmp_path, {}, {"block_sizes": sizes})
    assert refused(run_cli, src, tmp_path) == [
        f"error: config: config: model configuration: block_sizes is {why}, not a list of block sizes"]


def test_funnel_without_its_config_is_one_error(run_cli, tmp_path: Path) -> None:
    src = _copy("funnel", tmp_path, {})
    (src.parent / "config.json").unlink()
    assert refused(run_cli, src, tmp_path) == [
        f"error: config: config: missing model configuration: no config.json beside the checkpoint in {src.parent}; "
        "give one with --config FILE"]


@pytest.mark.parametrize(("case", "options"), [("tapas", ()), ("tapas_sqa", ()), ("tapas_wtq", ("--hf-task", "wtq"))])
def test_tapas_back_to_tf_names_gives_the_original_tensors(run_cli, tmp_path: Path, case: str,
                                                           options: tuple[str, ...]) -> None:
    """Bit for bit: the cell-selection heads and (WTQ, tests/test_hf_originals_e.py) the aggregation head."""
    src = HF_DATA / case / "model.ckpt-3"
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", hf, "--to", "hf", *options).exit_code == 0
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", "tapas")
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(back) as restored, formats.open_checkpoint(src) as ckpt:
        original = {k: np.asarray(ckpt[k].read()) for k in ckpt if k != "global_step"}
        got = {k: np.asarray(restored[k].read()) for k in restored}
    assert sorted(got) == sorted(original)
    for key, value in original.items():
        assert got[key].shape == value.shape and np.array_equal(got[key], value), key
