"""``ckpt convert --to hf`` of TF Hub SavedModels and keras-hub presets (issue 37, items 3 and 4), numpy only.

The data (``tests/data/tfhub``, ``tests/data/keras_hub``) and its oracles are described in
``tests/interop/test_hf_saved_model_keras_hub.py``, which loads the output with transformers 5. Here: every written
tensor equals the golden one bitwise (the tied ones, which are not written, excepted), the plan names where each
came from, and bad input (another backbone's config, a config the map cannot carry, an extra or a missing tensor)
is one error line, exit 1, nothing written.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent / "data"
KERAS_HUB = DATA / "keras_hub"
TFHUB_BERT = DATA / "tfhub" / "bert"

CASES = {
    "tfhub_bert": (TFHUB_BERT, DATA / "hf" / "golden" / "bert_tf2_encoder", set()),
    "tfhub_bert_v2": (DATA / "tfhub" / "bert_v2", DATA / "hf" / "golden" / "bert_tf2_encoder", set()),
    "model_garden_bert_v2": (DATA / "tfhub" / "bert_v2_checkpoint" / "bert_model.ckpt",
                             DATA / "hf" / "golden" / "bert_tf2_encoder", set()),
    "tfhub_albert": (DATA / "tfhub" / "albert", DATA / "hf" / "golden" / "albert", set()),
    "tfhub_electra": (DATA / "tfhub" / "electra", DATA / "hf" / "golden" / "electra_discriminator", set()),
    "keras_hub_bert": (KERAS_HUB / "bert" / "preset", KERAS_HUB / "bert" / "golden", set()),
    "keras_hub_gpt2": (KERAS_HUB / "gpt2" / "preset", KERAS_HUB / "gpt2" / "golden", {"lm_head.weight"}),
    "keras_hub_gemma": (KERAS_HUB / "gemma" / "preset", KERAS_HUB / "gemma" / "golden", {"lm_head.weight"}),
    "keras_hub_llama": (KERAS_HUB / "llama" / "preset", KERAS_HUB / "llama" / "golden", set()),
    "keras_hub_llama_tied": (KERAS_HUB / "llama_tied" / "preset", KERAS_HUB / "llama_tied" / "golden", {"lm_head.weight"}),
}


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_written_tensor_is_the_golden_one(run_cli, tmp_path: Path, case: str) -> None:
    from safetensors.numpy import load_file

    source, golden, tied = CASES[case]
    out = tmp_path / "hf"
    result = run_cli("convert", source, "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    written = load_file(str(out / "model.safetensors"))
    expected = load_file(str(golden / "model.safetensors"))
    base = {"tfhub_albert": "albert.", "tfhub_electra": "electra."}.get(case)
    if base:  # the golden model has pretraining heads; the SavedModel holds its base model
        expected = {k[len(base):]: v for k, v in expected.items() if k.startswith(base)}
    assert sorted(written) == sorted(set(expected) - tied)
    for key, value in written.items():
        assert value.dtype == expected[key].dtype and value.shape == expected[key].shape, key
        assert np.array_equal(value, expected[key]), key
    config = json.loads((out / "config.json").read_text())
    oracle = json.loads((golden / "config.json").read_text())
    for field in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                  "num_key_value_heads", "head_dim", "n_embd", "n_layer", "n_head", "n_positions",
                  "max_position_embeddings", "type_vocab_size", "tie_word_embeddings", "rms_norm_eps"):
        if field in config:
            assert config[field] == oracle[field], field


def test_a_tfhub_savedmodel_is_read_by_object_path_and_sizes_from_its_shapes(run_cli, tmp_path: Path) -> None:
    result = run_cli("convert", TFHUB_BERT, "-o", tmp_path / "hf", "--to", "hf", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {row["source"]: row["key"] for row in report["rows"]}
    assert rows["variables/5/.ATTRIBUTES/VARIABLE_VALUE"] == "encoder.layer.0.attention.self.query.weight"
    assert rows["variables/0/.ATTRIBUTES/VARIABLE_VALUE"] == "embeddings.word_embeddings.weight"
    assert report["details"]["layout"] == "tfhub-saved-model" and report["details"]["class"] == "BertModel"
    warned = " ".join(p["message"] for p in report["problems"])
    assert "num_hidden_layers = 2, the number of source tensors named" in warned
    assert "do_lower_case/.ATTRIBUTES/VARIABLE_VALUE" in json.dumps(report["problems"])


def _copy(case: str, tmp_path: Path) -> Path:
    copy = tmp_path / case
    shutil.copytree(KERAS_HUB / case / "preset", copy)
    return copy


def _edit_config(preset: Path, **fields: object) -> None:
    doc = json.loads((preset / "config.json").read_text())
    for name, value in fields.items():
        if name == "class_name":
            doc["class_name"] = value
        else:
            doc["config"][name] = value
    (preset / "config.json").write_text(json.dumps(doc))


def _refused(run_cli, preset: Path, tmp_path: Path, *options: str) -> list[str]:
    out = tmp_path / "out"
    result = run_cli("convert", preset, "-o", out, "--to", "hf", *options)
    assert result.exit_code == 1, result.output
    assert not out.exists()
    assert "nothing written" in result.output
    return _errors(result.output)


def test_another_backbones_preset_is_refused_by_its_config(run_cli, tmp_path: Path) -> None:
    preset = _copy("bert", tmp_path)
    _edit_config(preset, class_name="RobertaBackbone")
    assert _refused(run_cli, preset, tmp_path) == [
        f"error: family: {preset}: no model family recognises these variable names (ckpt knows albert, bert, "
        "bert_generation, "
        "bigbird, bigbird_pegasus, canine, convbert, electra, electra_generator, funnel, gemma, gpt2, gpt_neo, "
        "imagegpt, llama, mobilebert, openai_gpt, pegasus, rembert, roformer, t5, tapas, xlnet); name one with --family "
        "or give a "
        "map with --rules"]
    assert _refused(run_cli, preset, tmp_path, "--family", "bert") == [
        f"error: family: {preset / 'config.json'}: describes a RobertaBackbone, not a BertBackbone (the bert map's "
        "keras-hub layout)"]


@pytest.mark.parametrize(("case", "field", "value", "allowed"), [
    ("gemma", "use_post_ffw_norm", True, "only false"),
    ("gemma", "final_logit_soft_cap", 30.0, "only null"),
    ("llama", "rope_frequency_adjustment_factor", 8.0, "only null"),
])
def test_a_config_the_map_cannot_carry_is_refused(run_cli, tmp_path: Path, case: str, field: str, value: object,
                                                  allowed: str) -> None:
    preset = _copy(case, tmp_path)
    _edit_config(preset, **{field: value})
    assert _refused(run_cli, preset, tmp_path) == [
        f"error: config: {field}: the {case} map cannot carry {field} = {json.dumps(value)} of "
        f"{preset / 'config.json'} ({allowed})"]


def test_an_extra_tensor_in_a_preset_is_an_error_naming_it(run_cli, tmp_path: Path) -> None:
    import h5py

    preset = _copy("llama", tmp_path)
    with h5py.File(preset / "model.weights.h5", "a") as f:
        f.create_dataset("layers/dense/vars/0", data=np.zeros((32, 4), dtype=np.float32))
    errors = _refused(run_cli, preset, tmp_path)
    assert len(errors) == 1 and "unmapped tensor 'layers/dense/vars/0' [32, 4]" in errors[0], errors


def test_a_missing_part_of_a_joined_parameter_is_an_error_naming_it(run_cli, tmp_path: Path) -> None:
    import h5py

    preset = _copy("gpt2", tmp_path)
    with h5py.File(preset / "model.weights.h5", "a") as f:
        del f["layers/transformer_decoder_1/_self_attention_layer/key_dense/vars/1"]
    assert _refused(run_cli, preset, tmp_path) == [
        "error: missing: transformer.h.1.attn.c_attn.bias: parameter 'transformer.h.1.attn.c_attn.bias' joins "
        "query, key, value; no source tensor for key (have layers/transformer_decoder_1/_self_attention_layer/"
        "query_dense/vars/1, layers/transformer_decoder_1/_self_attention_layer/value_dense/vars/1)"]


def test_the_data_stays_small() -> None:
    total = sum(p.stat().st_size for root in (KERAS_HUB, DATA / "tfhub") for p in root.rglob("*") if p.is_file())
    assert total < 6_000_000, total  # 5.5 MB: four SavedModels (mostly their saved_model.pb) and five presets


def test_a_tfhub_albert_without_its_keras_metadata_takes_the_familys_config(run_cli, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    saved = tmp_path / "albert_en_base"
    shutil.copytree(DATA / "tfhub" / "albert", saved)
    (saved / "keras_metadata.pb").unlink()
    assert _refused(run_cli, saved, tmp_path) == [
        f"error: config: config: missing model configuration: no keras_metadata.pb beside the checkpoint in {saved}; "
        "give one with --config FILE (or the albert family's albert_config.json, config.json)"]
    out = tmp_path / "hf"
    result = run_cli("convert", saved, "-o", out, "--to", "hf", "--config", DATA / "hf" / "albert" / "albert_config.json")
    assert result.exit_code == 0, result.output
    golden = load_file(str(DATA / "hf" / "golden" / "albert" / "model.safetensors"))
    written = load_file(str(out / "model.safetensors"))
    assert sorted(written) == sorted(k[len("albert."):] for k in golden if k.startswith("albert."))
    assert all(np.array_equal(v, golden["albert." + k]) for k, v in written.items())
