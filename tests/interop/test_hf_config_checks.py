"""Optional tier: every ``config.json`` ckpt's ``convert --to hf`` writes loads in transformers 5 (issue 37, item 5).

For every case of ``tests/data/hf`` (BERT TF1/TF2, ALBERT, ELECTRA discriminator and generator, GPT-2, T5 v1.0,
v1.1, and the ReLU-untied / gated-tied T5): ``AutoConfig.from_pretrained`` reads the written directory as the
model type's config class, agrees with the oracle's ``config.json`` (transformers 4.x's, in ``golden/``) on every
field the model's shapes and outputs depend on, and the class ``architectures`` names builds from it. Also: an
ELECTRA below 64 hidden units without a head count (ELECTRA's rule gives 1) loads, and ``transformers5.toml`` holds
the classes the installed transformers has for the shipped families. Needs transformers >= 5; skipped otherwise.
"""
from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from tests.interop.hf5 import transformers5

pytestmark = pytest.mark.interop

torch, transformers = transformers5()

HF_DATA = Path(__file__).resolve().parent.parent / "data" / "hf"
CASES = json.loads((HF_DATA / "cases.json").read_text())
SHAPING = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "embedding_size",
           "max_position_embeddings", "type_vocab_size", "num_hidden_groups", "inner_group_num", "n_embd", "n_head",
           "n_layer", "n_positions", "d_model", "d_ff", "d_kv", "num_heads", "num_layers", "num_decoder_layers",
           "relative_attention_num_buckets", "feed_forward_proj", "tie_word_embeddings", "hidden_act",
           "activation_function", "layer_norm_eps", "layer_norm_epsilon", "model_type", "architectures",
           "type_vocab_sizes", "block_sizes")
"""The config fields the weights' shapes and the outputs depend on (dropout and initialisation do not, in eval)."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_written_config_loads_as_the_oracles(run_cli, tmp_path: Path, case: str) -> None:
    spec = CASES[case]
    out = tmp_path / "hf"
    family = ["--family", "electra_generator"] if spec.get("electra_part") == "generator" else []
    family += spec.get("convert_options", [])  # TAPAS's --hf-task
    result = run_cli("convert", HF_DATA / spec["checkpoint"], "-o", out, "--to", "hf", *family)
    assert result.exit_code == 0, result.output
    config = transformers.AutoConfig.from_pretrained(out)
    oracle = transformers.AutoConfig.from_pretrained(HF_DATA / "golden" / case)
    assert type(config) is type(oracle)
    mine, theirs = config.to_dict(), oracle.to_dict()
    # a field the oracle's config class does not take is an extra the original JSON carried (TAPAS's list-valued
    # type_vocab_size beside the type_vocab_sizes TapasConfig reads): not what transformers builds from
    known = set(inspect.signature(type(oracle).__init__).parameters) | {"model_type", "architectures",
                                                                        "tie_word_embeddings"}
    shaping = [k for k in SHAPING if k in theirs and k in known]
    assert {k: mine.get(k) for k in shaping} == {k: theirs[k] for k in shaping}
    (architecture,) = config.architectures
    model = getattr(transformers, architecture).from_pretrained(out)
    assert type(model).__name__ == spec["class"]


def test_a_small_electra_without_a_head_count_loads(run_cli, tmp_path: Path) -> None:
    hparams = json.loads((HF_DATA / "electra" / "hparams.json").read_text())
    del hparams["model_hparam_overrides"]["num_attention_heads"]  # hidden 32: ELECTRA's max(1, 32 // 64) = 1
    path = tmp_path / "hparams.json"
    path.write_text(json.dumps(hparams))
    out = tmp_path / "hf"
    result = run_cli("convert", HF_DATA / "electra" / "model.ckpt", "-o", out, "--to", "hf", "--config", path)
    assert result.exit_code == 0, result.output
    model = transformers.ElectraForPreTraining.from_pretrained(out)
    assert model.config.num_attention_heads == 1


def test_the_class_list_holds_what_transformers_has_for_the_shipped_families() -> None:
    from transformers.models.auto import modeling_auto

    from formats.ops.convert.hf.check import transformers5_classes
    from formats.ops.convert.hf.family import family_names, load_family

    listed = transformers5_classes()
    for model_type in {load_family(name).model_type for name in family_names()}:
        auto = set()
        for name in dir(modeling_auto):
            if name.endswith("_MAPPING_NAMES"):
                value = getattr(modeling_auto, name).get(model_type)
                auto.update(value if isinstance(value, (list, tuple)) else [value] if value else [])
        auto = {c for c in auto if not c.endswith("Config")}
        assert auto <= set(listed[model_type]), (model_type, sorted(auto - set(listed[model_type])))
        assert all(isinstance(getattr(transformers, c), type) for c in listed[model_type])
