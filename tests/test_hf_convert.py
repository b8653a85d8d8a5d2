"""``ckpt convert --to hf``: TensorFlow checkpoints of BERT, ALBERT, ELECTRA, GPT-2 and T5 as transformers model
directories, by the model maps of ``formats/ops/convert/hf/families``.

The checkpoints under ``tests/data/hf/<case>/`` were written by real TensorFlow with the original repositories'
variable names; ``tests/data/hf/golden/<case>/`` holds what transformers 4.x's own ``load_tf_weights_in_*`` made
of them under real TensorFlow (``tests/data/hf/generators/``). ckpt's output must hold exactly the golden
state dict's parameters (tied ones left to transformers), with the same bytes. The error cases are built here
with ckpt's own writer; their expected messages name the tensor or the configuration field.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import formats
from formats.ops.convert.hf.family import family_names, holds, load_family
from formats.ops.convert.hf.plan import expected_params

HF_DATA = Path(__file__).parent / "data" / "hf"
CASES: dict[str, Any] = json.loads((HF_DATA / "cases.json").read_text()) if (HF_DATA / "cases.json").is_file() else {}
GOLDEN = HF_DATA / "golden"


def _golden(case: str) -> Path | None:
    folder = GOLDEN / case
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    return files[0] if files else None


def _read_dir(path: Path) -> dict[str, np.ndarray]:
    with formats.open_checkpoint(path) as ckpt:
        return {k: ckpt[k].read() for k in ckpt}


def _family(case: str) -> str:
    return "electra_generator" if CASES[case].get("electra_part") == "generator" else CASES[case]["family"]


def _tied(case: str, config: dict[str, Any]) -> set[str]:
    """The parameters transformers ties for this case's model (not stored)."""
    family = load_family(_family(case))
    return {n for n in family.tied if holds(family.tied_when.get(n), config)}


# -- against the oracle ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_output_holds_the_oracles_state_dict_bitwise(run_cli, tmp_path: Path, case: str) -> None:
    golden = _golden(case)
    if golden is None:
        pytest.skip(f"no golden state dict for {case} yet")
    out = tmp_path / "hf"
    result = run_cli("convert", HF_DATA / CASES[case]["checkpoint"], "-o", out, "--to", "hf",
                     *(["--family", "electra_generator"] if _family(case) == "electra_generator" else []),
                     *CASES[case].get("convert_options", []))
    assert result.exit_code == 0, result.output
    from safetensors.numpy import load_file

    expected = load_file(str(golden))
    written = _read_dir(out)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == [CASES[case]["class"]]
    tied = {k for k in expected if k in _tied(case, config)}
    sources = json.loads((golden.parent / "oracle.json").read_text())["sources"]
    tied |= {k for k, v in sources.items() if v.startswith(("computed", "none"))}  # made by transformers, or absent
    expected = {k: v for k, v in expected.items() if k not in tied and not k.endswith(("position_ids", "token_type_ids",
                                                                                       ".attn.masked_bias", ".attn.bias"))}
    assert sorted(k for k in written if k not in tied) == sorted(expected)
    for key, value in expected.items():
        assert written[key].dtype == value.dtype and written[key].shape == value.shape, key
        assert written[key].tobytes() == value.tobytes(), key


@pytest.mark.parametrize("case", [c for c in ("bert", "albert", "electra_discriminator", "gpt2", "t5", "t5_v1_1",
                                               "t5_relu_untied", "t5_gated_tied")
                                  if c in CASES])
def test_back_to_tf_names_gives_the_original_model_tensors(run_cli, tmp_path: Path, case: str) -> None:
    src = HF_DATA / CASES[case]["checkpoint"]
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", hf, "--to", "hf").exit_code == 0
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", CASES[case]["family"])
    assert result.exit_code == 0, result.output
    restored = _read_dir(back)
    with formats.open_checkpoint(src) as ckpt:
        for key, value in restored.items():
            assert ckpt[key].read().tobytes() == value.tobytes() and ckpt[key].shape == value.shape, key
        kept = {k for k in ckpt if not k.startswith(("generator", "global_step"))}
    assert sorted(restored) == sorted(kept)


# -- the plan -------------------------------------------------------------------------------------------------
BERT = dict(vocab_size=11, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=12,
            max_position_embeddings=16, type_vocab_size=2)


def _bert_tensors(rng: np.random.Generator, c: dict[str, int], slots: bool = True) -> dict[str, np.ndarray]:
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    shapes = {"bert/embeddings/word_embeddings": [v, h], "bert/embeddings/token_type_embeddings": [2, h],
              "bert/embeddings/position_embeddings": [c["max_position_embeddings"], h],
              "bert/embeddings/LayerNorm/gamma": [h], "bert/embeddings/LayerNorm/beta": [h],
              "bert/pooler/dense/kernel": [h, h], "bert/pooler/dense/bias": [h]}
    for n in range(c["num_hidden_layers"]):
        p = f"bert/encoder/layer_{n}/"
        for part in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
            shapes[p + part + "/kernel"], shapes[p + part + "/bias"] = [h, h], [h]
        shapes[p + "intermediate/dense/kernel"], shapes[p + "intermediate/dense/bias"] = [h, i], [i]
        shapes[p + "output/dense/kernel"], shapes[p + "output/dense/bias"] = [i, h], [h]
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[p + norm + "/gamma"], shapes[p + norm + "/beta"] = [h], [h]
    out = {}
    for name, shape in shapes.items():
        for suffix in ("", "/adam_m", "/adam_v") if slots else ("",):
            out[name + suffix] = rng.standard_normal(shape).astype(np.float32)
    out["global_step"] = np.array(7, dtype=np.int64)
    return out


@pytest.fixture
def tiny_bert(tmp_path: Path):
    """A BERT encoder (no pretraining heads) with Adam slots, its bert_config.json beside it."""
    def make(extra: dict[str, np.ndarray] | None = None, config: dict[str, Any] | None = BERT) -> tuple[Path, dict]:
        folder = tmp_path / "bert"
        folder.mkdir(exist_ok=True)
        tensors = {**_bert_tensors(np.random.default_rng(3), BERT), **(extra or {})}
        formats.write_checkpoint(str(folder / "bert_model.ckpt"), tensors)
        if config is not None:
            (folder / "bert_config.json").write_text(json.dumps(config))
        return folder / "bert_model.ckpt", tensors
    return make


def test_values_are_the_kernels_transposed_and_the_rest_copied(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, tensors = tiny_bert()
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf")
    assert result.exit_code == 0, result.output
    written = _read_dir(out)
    assert len(written) == 5 + 16 * 2 + 2  # embeddings, 16 per layer, pooler (BertModel: no heads)
    np.testing.assert_array_equal(written["encoder.layer.1.attention.self.key.weight"],
                                  tensors["bert/encoder/layer_1/attention/self/key/kernel"].T)
    np.testing.assert_array_equal(written["encoder.layer.0.output.dense.weight"],
                                  tensors["bert/encoder/layer_0/output/dense/kernel"].T)
    assert written["embeddings.word_embeddings.weight"].tobytes() == tensors["bert/embeddings/word_embeddings"].tobytes()
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertModel"] and config["model_type"] == "bert"
    assert {k: config[k] for k in BERT} == BERT
    head = json.loads((out / "model.safetensors").read_bytes()[8:8 + int.from_bytes(
        (out / "model.safetensors").read_bytes()[:8], "little")])
    assert head["__metadata__"]["format"] == "pt"


def test_dry_run_json_reports_every_row_and_every_drop(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, tensors = tiny_bert()
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert not out.exists()
    rows = {r["source"]: r for r in plan["rows"]}
    assert rows["bert/encoder/layer_0/attention/self/query/kernel"] == {
        "source": "bert/encoder/layer_0/attention/self/query/kernel", "key": "encoder.layer.0.attention.self.query.weight",
        "shape": [8, 8], "dtype": "float32", "note": "", "transform": "transpose"}
    assert rows["bert/embeddings/LayerNorm/beta"]["key"] == "embeddings.LayerNorm.bias"
    dropped = {p["key"]: p for p in plan["problems"] if p["kind"] == "dropped"}
    slots = sorted(k for k in tensors if k.endswith(("adam_m", "adam_v")))
    assert sorted(dropped["{*}/{s:adam_m|adam_v}"]["candidates"]) == slots
    assert dropped["global_step"]["candidates"] == ["global_step"]
    assert sorted(rows) == sorted(k for k in tensors if k not in slots and k != "global_step")
    assert plan["details"]["class"] == "BertModel" and plan["details"]["layout"] == "tf1"


@pytest.mark.parametrize("how", ["unmapped", "config", "no-config", "missing-field"])
def test_errors_name_the_tensor_or_field_exit_1_and_write_nothing(run_cli, tmp_path: Path, tiny_bert, how: str) -> None:
    extra = {"bert/encoder/layer_0/attention/extra_gate": np.zeros(3, np.float32)} if how == "unmapped" else None
    config: dict[str, Any] | None = dict(BERT)
    if how == "config":
        config = {**BERT, "hidden_size": 16}
    if how == "no-config":
        config = None
    if how == "missing-field":
        config = {k: v for k, v in BERT.items() if k != "intermediate_size"}
    src, _ = tiny_bert(extra, config)
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf")
    assert result.exit_code == 1, result.output
    assert not out.exists() and not list(tmp_path.glob(".out*"))
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert errors, result.output
    if how == "unmapped":
        assert errors == ["error: unmapped: bert/encoder/layer_0/attention/extra_gate: unmapped tensor "
                          "'bert/encoder/layer_0/attention/extra_gate' [3]: no rule of the bert map (tf1 layout) maps "
                          "or drops it"]
    elif how == "config":
        assert errors == ["error: config: hidden_size=16: the configuration contradicts the shapes: "
                          "'bert/embeddings/LayerNorm/beta' [8] does not fit 'embeddings.LayerNorm.bias' [16] "
                          "(and 36 more tensors)"]  # all but the intermediate biases
    elif how == "no-config":
        assert len(errors) == 1 and "missing model configuration: no bert_config.json or config.json" in errors[0]
    else:
        assert errors == [f"error: config: intermediate_size: missing model configuration field 'intermediate_size' "
                          f"in {src.parent / 'bert_config.json'} (give it with --hparam intermediate_size=VALUE)"]


def test_hparam_and_config_option_supply_the_configuration(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, _ = tiny_bert(config=None)
    elsewhere = tmp_path / "cfg.json"
    elsewhere.write_text(json.dumps({k: v for k, v in BERT.items() if k != "intermediate_size"}))
    out = tmp_path / "out"
    result = run_cli("convert", src, "-o", out, "--to", "hf", "--config", elsewhere, "--hparam", "intermediate_size=12")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "config.json").read_text())["intermediate_size"] == 12


def test_sharded_output_as_transformers_writes_it(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, tensors = tiny_bert()
    one, sharded = tmp_path / "one", tmp_path / "sharded"
    assert run_cli("convert", src, "-o", one, "--to", "hf").exit_code == 0
    result = run_cli("convert", src, "-o", sharded, "--to", "hf", "--max-shard-size", "1KB")
    assert result.exit_code == 0, result.output
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    files = sorted(p.name for p in sharded.glob("*.safetensors"))
    assert len(files) > 2 and files[0] == f"model-00001-of-{len(files):05d}.safetensors"
    assert sorted(set(index["weight_map"].values())) == files
    expected = _read_dir(one)
    assert index["metadata"]["total_size"] == sum(v.nbytes for v in expected.values())
    written = _read_dir(sharded)
    assert sorted(written) == sorted(expected) == sorted(index["weight_map"])
    assert all(written[k].tobytes() == expected[k].tobytes() for k in expected)


def test_existing_output_is_refused_and_replaced_with_force(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, _ = tiny_bert()
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("x")
    assert run_cli("convert", src, "-o", out, "--to", "hf").exit_code == 4
    assert run_cli("convert", src, "-o", out, "--to", "hf", "--force").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]


def test_back_to_tf_names_restores_the_model_tensors_bytewise(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, tensors = tiny_bert()
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", hf, "--to", "hf").exit_code == 0
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", "bert")
    assert result.exit_code == 0, result.output
    restored = _read_dir(back)
    model = {k: v for k, v in tensors.items() if not k.endswith(("adam_m", "adam_v")) and k != "global_step"}
    assert sorted(restored) == sorted(model)
    assert all(restored[k].tobytes() == model[k].tobytes() for k in model)


def test_a_users_map_file_for_safetensors(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, tensors = tiny_bert()
    mine = tmp_path / "mine.toml"
    text = Path(load_family("bert").path).read_text().replace('family = "bert"', 'family = "my-bert"')
    mine.write_text(text)
    out = tmp_path / "model.safetensors"
    result = run_cli("convert", src, "-o", out, "--to", "safetensors", "--rules", mine)
    assert result.exit_code == 0, result.output
    from safetensors.numpy import load_file

    written = load_file(str(out))
    np.testing.assert_array_equal(written["encoder.layer.0.intermediate.dense.weight"],
                                  tensors["bert/encoder/layer_0/intermediate/dense/kernel"].T)


def test_family_is_detected_and_every_family_file_is_consistent() -> None:
    assert set(family_names()) == {"albert", "bert", "electra", "electra_generator", "gemma", "gpt2", "llama", "t5",
                                   "mobilebert", "bigbird", "convbert", "rembert", "gpt_neo", "xlnet", "pegasus",
                                   "bigbird_pegasus", "imagegpt", "roformer", "canine", "tapas", "funnel", "openai_gpt",
                                   "bert_generation"}
    for name in family_names():
        family = load_family(name)
        assert family.name == name and family.classes and family.layouts
        for layout in family.layouts:
            assert layout.maps and (layout.drops or layout.name == "keras-hub")  # a preset holds only weights
    config = {**BERT, "layer_norm_eps": 1e-12}
    params = expected_params(load_family("bert"), config, ["base", "pooler", "mlm", "nsp"])
    assert len(params) == 5 + 16 * 2 + 2 + 7  # embeddings, layers, pooler, the two heads
    assert params["cls.seq_relationship.weight"].shape == (2, 8)
    assert params["bert.encoder.layer.1.output.dense.weight"].shape == (8, 12)


def test_an_output_directory_holding_the_input_is_refused_even_with_force(run_cli, tiny_bert) -> None:
    src, _ = tiny_bert()
    before = sorted(p.name for p in src.parent.iterdir())
    result = run_cli("convert", src, "-o", src.parent, "--to", "hf", "--force")
    assert result.exit_code == 4 and "which is being read" in result.output, result.output
    assert sorted(p.name for p in src.parent.iterdir()) == before


def test_a_family_that_does_not_fit_the_names_is_one_error(run_cli, tmp_path: Path, tiny_bert) -> None:
    src, _ = tiny_bert()
    result = run_cli("convert", src, "-o", tmp_path / "out", "--to", "hf", "--family", "t5")
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        f"error: family: {src}: no source layout of the t5 map (mesh-tf, t5x) recognises these variable names"]


def test_a_configuration_nested_too_deep_is_one_clear_error(run_cli, tmp_path: Path) -> None:
    config = tmp_path / "bert_config.json"
    config.write_text('{"hidden_size": ' + "[" * 5000 + "1" + "]" * 5000 + "}")
    result = run_cli("convert", HF_DATA / "bert" / "bert_model.ckpt", "-o", tmp_path / "out", "--to", "hf",
                     "--config", config)
    assert result.exit_code == 3
    assert (f"ckpt: error: {config}: not a JSON model configuration: the model configuration nests deeper than 64 "
            "levels; refusing to parse it") in result.output
    assert not (tmp_path / "out").exists()
