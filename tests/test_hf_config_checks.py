"""``ckpt convert --to hf`` checks the ``config.json`` it would write the way transformers 5 loads it, before anything
is written (issue 37): heads that divide the hidden size, counts that agree with the blocks the checkpoint holds,
``tie_word_embeddings`` that agrees with the lm head tensor, ``architectures`` naming a class transformers 5 has.
Each failure is one line on stderr naming the field, exit 1 (docs/commands.md: a plan's problems), nothing written.

Expected values come from the original projects' rules, not from ckpt: ELECTRA's heads are
``max(1, hidden_size // 64)`` (google-research/electra configure_pretraining.get_bert_config); mesh-tensorflow's
``shared_embedding_and_softmax_weights`` is the tying (transformers 4.x's T5 loader and golden files, for the
checkpoints of ``tests/data/hf``, are checked in tests/test_hf_convert.py and the interop tier).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from formats.ops.convert.hf.check import transformers5_classes
from formats.ops.convert.hf.family import family_names, load_family

HF_DATA = Path(__file__).parent / "data" / "hf"


def _refused(run_cli: Any, out: Path, *args: Any) -> list[str]:
    """Run ``ckpt convert ... -o out --to hf``; assert exit 1, nothing written, no error on stdout; the error lines."""
    result = run_cli("convert", *args, "-o", out, "--to", "hf")
    assert result.exit_code == 1, result.output
    assert not out.exists() and not list(out.parent.glob(f".{out.name}*"))
    assert not [line for line in result.stdout.splitlines() if line.startswith("error")], result.stdout
    assert result.stderr.splitlines()[-1].endswith("; nothing written"), result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error")]


def _electra_hparams(tmp_path: Path, **overrides: Any) -> Path:
    hparams = json.loads((HF_DATA / "electra" / "hparams.json").read_text())
    hparams["model_hparam_overrides"].update(overrides)
    hparams["model_hparam_overrides"] = {k: v for k, v in hparams["model_hparam_overrides"].items() if v is not None}
    path = tmp_path / "hparams.json"
    path.write_text(json.dumps(hparams))
    return path


def test_electra_heads_follow_electras_rule_for_a_small_hidden_size(run_cli, tmp_path: Path) -> None:
    hparams = _electra_hparams(tmp_path, num_attention_heads=None)  # hidden 32: ELECTRA's max(1, 32 // 64) = 1
    out = tmp_path / "out"
    result = run_cli("convert", HF_DATA / "electra" / "model.ckpt", "-o", out, "--to", "hf", "--config", hparams)
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"]) == (32, 1)


def test_electra_heads_that_do_not_divide_the_hidden_size_are_refused(run_cli, tmp_path: Path) -> None:
    hparams = _electra_hparams(tmp_path, num_attention_heads=5)
    errors = _refused(run_cli, tmp_path / "out", HF_DATA / "electra" / "model.ckpt", "--config", hparams)
    assert errors == ["error: config: num_attention_heads: num_attention_heads=5 does not divide hidden_size=32: "
                      "transformers 5 needs hidden_size to be a multiple of num_attention_heads"]


def test_zero_heads_are_refused(run_cli, tmp_path: Path) -> None:
    errors = _refused(run_cli, tmp_path / "out", HF_DATA / "bert" / "bert_model.ckpt", "--hparam",
                      "num_attention_heads=0")
    assert errors == ["error: config: num_attention_heads: num_attention_heads=0: a model needs at least one "
                      "attention head (transformers 5 cannot build this configuration; --hparam num_attention_heads=N sets it)"]


def test_gpt2_heads_that_do_not_divide_n_embd_are_refused(run_cli, tmp_path: Path) -> None:
    errors = _refused(run_cli, tmp_path / "out", HF_DATA / "gpt2" / "model.ckpt", "--hparam", "n_head=5")
    assert errors == ["error: config: n_head: n_head=5 does not divide n_embd=32: transformers 5 needs n_embd to be a "
                      "multiple of n_head"]


@pytest.mark.parametrize("case", ["bert", "bert_tf2"])  # TF2: the pooler's layer_with_weights-N follows the count
@pytest.mark.parametrize("layers", [1, 3])
def test_a_wrong_layer_count_is_one_error_naming_the_field(run_cli, tmp_path: Path, layers: int, case: str) -> None:
    config = json.loads((HF_DATA / case / "bert_config.json").read_text())
    config["num_hidden_layers"] = layers
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(config))
    errors = _refused(run_cli, tmp_path / "out", HF_DATA / case / "bert_model.ckpt", "--config", path)
    assert errors == [f"error: config: num_hidden_layers: num_hidden_layers={layers} in {path}, but the checkpoint "
                      "holds 2 (blocks 0 to 1): the configuration does not describe this checkpoint"]


def test_a_wrong_decoder_layer_count_names_its_own_field(run_cli, tmp_path: Path) -> None:
    errors = _refused(run_cli, tmp_path / "out", HF_DATA / "t5" / "model.ckpt-1000000", "--hparam",
                      "num_decoder_layers=3")
    assert errors == ["error: config: num_decoder_layers: num_decoder_layers=3 (--hparam), but the checkpoint holds 2 "
                      "(blocks 0 to 1): the configuration does not describe this checkpoint"]


def _t5_copy(tmp_path: Path, case: str, tied: bool) -> Path:
    """The case's checkpoint beside a gin whose shared_embedding_and_softmax_weights says ``tied``."""
    folder = tmp_path / case
    shutil.copytree(HF_DATA / case, folder)
    gin = folder / "operative_config.gin"
    text = gin.read_text()
    for value in ("True", "False"):
        text = text.replace(f"shared_embedding_and_softmax_weights = {value}",
                            f"shared_embedding_and_softmax_weights = {tied}")
    gin.write_text(text)
    return folder / "model.ckpt-1000000"


def test_a_gin_that_ties_a_checkpoint_with_its_own_logits_is_refused(run_cli, tmp_path: Path) -> None:
    src = _t5_copy(tmp_path, "t5_relu_untied", tied=True)
    errors = _refused(run_cli, tmp_path / "out", src)
    assert errors == [f"error: config: tie_word_embeddings: tie_word_embeddings=True in {src.parent / 'operative_config.gin'}, "
                      "but the checkpoint holds its own 'lm_head.weight' ('decoder/logits/kernel'): the configuration "
                      "does not describe this checkpoint"]


def test_a_gin_that_unties_a_checkpoint_without_logits_is_refused(run_cli, tmp_path: Path) -> None:
    src = _t5_copy(tmp_path, "t5_gated_tied", tied=False)
    errors = _refused(run_cli, tmp_path / "out", src)
    assert errors == [f"error: config: tie_word_embeddings: tie_word_embeddings=False in {src.parent / 'operative_config.gin'}, "
                      "but the checkpoint holds no tensor for 'lm_head.weight': the configuration does not describe "
                      "this checkpoint"]


@pytest.mark.parametrize(("case", "tied"), [("t5_relu_untied", False), ("t5_gated_tied", True)])
def test_without_the_gin_line_the_checkpoint_decides_the_tying(run_cli, tmp_path: Path, case: str, tied: bool) -> None:
    src = _t5_copy(tmp_path, case, tied=True)
    gin = src.parent / "operative_config.gin"
    gin.write_text("\n".join(line for line in gin.read_text().splitlines() if "shared_embedding_and_softmax" not in line))
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "config.json").read_text())["tie_word_embeddings"] is tied
    notes = [p["message"] for p in json.loads(result.stdout)["problems"] if p["key"] == "tie_word_embeddings"]
    assert notes == [f"tie_word_embeddings = {tied} from the checkpoint: it holds {'no ' * tied}decoder/logits/kernel"]


@pytest.mark.parametrize(("edit", "error"), [
    (('name = "BertModel"', 'name = "BertModal"'),
     "error: config: architectures: architectures=['BertModal']: transformers 5 has no class 'BertModal' for "
     "model_type 'bert'"),
    (('model_type = "bert"', 'model_type = "bert2"'),
     "error: config: model_type: model_type='bert2': transformers 5 has no such model type"),
])
def test_a_class_or_model_type_transformers_5_lacks_is_refused(run_cli, tmp_path: Path, edit: tuple[str, str],
                                                                 error: str) -> None:
    mine = tmp_path / "mine.toml"
    text = Path(load_family("bert").path).read_text()
    assert edit[0] in text
    mine.write_text(text.replace(edit[0], edit[1]))
    src = tmp_path / "bert"  # no pretraining heads: BertModel
    src.mkdir()
    import formats

    with formats.open_checkpoint(HF_DATA / "bert" / "bert_model.ckpt") as ckpt:
        formats.write_checkpoint(str(src / "model.ckpt"), {k: ckpt[k].read() for k in ckpt
                                                           if not k.startswith("cls/")})
    errors = _refused(run_cli, tmp_path / "out", src / "model.ckpt", "--rules", mine, "--config",
                      HF_DATA / "bert" / "bert_config.json")
    assert errors == [error]


def test_the_mapped_tensors_alone_need_no_transformers_class(run_cli, tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"  # --to safetensors writes no config.json: no class, no model type to check
    mine.write_text(Path(load_family("bert").path).read_text().replace('model_type = "bert"', 'model_type = "mine"'))
    out = tmp_path / "model.safetensors"
    result = run_cli("convert", HF_DATA / "bert" / "bert_model.ckpt", "-o", out, "--to", "safetensors", "--rules", mine)
    assert result.exit_code == 0, result.output
    assert out.is_file()


def test_every_shipped_class_is_one_transformers_5_has() -> None:
    known = transformers5_classes()
    assert known["bert"] and "BertForPreTraining" in known["bert"] and "BertConfig" not in known["bert"]
    for name in family_names():
        family = load_family(name)
        for cls in family.classes:
            assert cls["name"] in known[family.model_type], (name, cls["name"])
