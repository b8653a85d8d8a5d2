"""Optional tier: TF Hub SavedModels and keras-hub presets through ``ckpt convert --to hf``, opened by transformers 5
(issue 37, items 3 and 4).

- ``tests/data/tfhub/bert``: a SavedModel written by tensorflow/models' own TF Hub exporter
  (``export_tfhub_lib.export_model``) from the committed ``tests/data/hf/bert_tf2_encoder`` checkpoint; its oracle is
  that case's golden files (transformers 4.x's ``BertModel`` of the same values).
- ``tests/data/keras_hub/<case>/preset``: keras-hub presets made by keras-hub's own transformers converter from a
  tiny transformers 5 model (``Backbone.from_preset(save_pretrained dir).save_to_preset``); the golden files are
  that model's state dict and outputs (``tests/data/keras_hub/generators/make_presets.py``).

Every golden tensor must come back bit for bit (tied ones as transformers ties them), and the outputs on the golden
inputs must equal bitwise those of transformers 5 running the golden state dict, and the golden outputs within
:data:`TOLERANCE`. Needs torch and transformers >= 5; skipped where they are missing.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.interop.hf5 import model_outputs, transformers5

pytestmark = pytest.mark.interop

torch, transformers = transformers5()

DATA = Path(__file__).resolve().parent.parent / "data"
TOLERANCE = 2e-5
"""Largest |difference| from the golden outputs relative to max(1, |value|): the TF Hub case's golden outputs are
transformers 4.57's (see tests/interop/test_hf_transformers5.py); the keras-hub ones are transformers 5's own."""

CASES = {
    "tfhub_bert": (DATA / "tfhub" / "bert", DATA / "hf" / "golden" / "bert_tf2_encoder", "BertModel"),
    "tfhub_bert_v2": (DATA / "tfhub" / "bert_v2", DATA / "hf" / "golden" / "bert_tf2_encoder", "BertModel"),
    "model_garden_bert_v2": (DATA / "tfhub" / "bert_v2_checkpoint" / "bert_model.ckpt",
                             DATA / "hf" / "golden" / "bert_tf2_encoder", "BertModel"),
    "tfhub_albert": (DATA / "tfhub" / "albert", DATA / "hf" / "golden" / "albert", "AlbertModel"),
    "tfhub_electra": (DATA / "tfhub" / "electra", DATA / "hf" / "golden" / "electra_discriminator", "ElectraModel"),
    "keras_hub_bert": (DATA / "keras_hub" / "bert" / "preset", DATA / "keras_hub" / "bert" / "golden", "BertModel"),
    "keras_hub_gpt2": (DATA / "keras_hub" / "gpt2" / "preset", DATA / "keras_hub" / "gpt2" / "golden",
                       "GPT2LMHeadModel"),
    "keras_hub_gemma": (DATA / "keras_hub" / "gemma" / "preset", DATA / "keras_hub" / "gemma" / "golden",
                        "GemmaForCausalLM"),
    "keras_hub_llama": (DATA / "keras_hub" / "llama" / "preset", DATA / "keras_hub" / "llama" / "golden",
                        "LlamaForCausalLM"),
    "keras_hub_llama_tied": (DATA / "keras_hub" / "llama_tied" / "preset", DATA / "keras_hub" / "llama_tied" / "golden",
                             "LlamaForCausalLM"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_transformers5_loads_the_conversion_with_the_golden_tensors_and_outputs(run_cli, tmp_path: Path,
                                                                               case: str) -> None:
    from safetensors.numpy import load_file

    source, golden, class_name = CASES[case]
    out = tmp_path / "hf"
    result = run_cli("convert", source, "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "config.json").read_text())["architectures"] == [class_name]
    torch.manual_seed(1234)  # a parameter left at its initial value would differ from the golden one
    cls = getattr(transformers, class_name)
    model = cls.from_pretrained(out).eval()
    golden_config = json.loads((golden / "config.json").read_text())
    golden_class = getattr(transformers, golden_config["architectures"][0])
    # The TF Hub ALBERT's and ELECTRA's golden models have pretraining heads: the SavedModels hold their base models.
    prefix = "" if golden_class is cls else f"{model.base_model_prefix}."
    expected = {k[len(prefix):]: v for k, v in load_file(str(golden / "model.safetensors")).items()
                if k.startswith(prefix)}
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    assert sorted(state) == sorted(expected)
    for key, value in expected.items():
        assert state[key].dtype == value.dtype and state[key].shape == value.shape, key
        assert state[key].tobytes() == value.tobytes(), key
    inputs = dict(np.load(golden / "inputs.npz"))
    got = model_outputs(model, inputs, use_cache=False)
    oracle_dir = tmp_path / "oracle"
    oracle_dir.mkdir()
    for name in ("config.json", "model.safetensors"):
        (oracle_dir / name).write_bytes((golden / name).read_bytes())
    same_weights = model_outputs(golden_class.from_pretrained(oracle_dir).eval(), inputs, use_cache=False)
    wanted = dict(np.load(golden / "outputs.npz"))
    if prefix:  # only the base model's outputs are comparable: the hidden states
        wanted = {k: v for k, v in wanted.items() if k.startswith("hidden_states.")}
        assert len(wanted) == golden_config["num_hidden_layers"] + 1
    assert set(wanted) <= set(got) and (prefix or sorted(got) == sorted(wanted))
    for key in wanted:
        assert np.array_equal(got[key], same_weights[key]), key
    relative = max(float(np.max(np.abs(got[k] - wanted[k]) / np.maximum(1.0, np.abs(wanted[k])))) for k in wanted)
    assert relative <= TOLERANCE, relative
