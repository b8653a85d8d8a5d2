"""``ckpt convert --to hf`` of original TF releases of BERT-like families whose transformers 4.x loaders transformers
5 dropped (issue 37): MobileBERT (google-research/google-research mobilebert/, TF1), BigBird
(google-research/bigbird, its encoder and pretraining heads, TF1 graph code), ConvBERT (yitu-opensource/ConvBert,
ELECTRA's pretraining with convolution heads, as ConvBertModel) and RemBERT (as RemBertModel).

The checkpoints under ``tests/data/hf/<case>/`` were written by real TensorFlow under the original variable names
(``generators/make_originals_a.py``); ``golden/<case>/`` is what transformers 4.57.6's own
``load_tf_weights_in_<family>`` made of them. Their state dicts are checked bitwise by ``tests/test_hf_convert.py``
and, loaded by transformers 5, by ``tests/interop/test_hf_transformers5.py``; here, numpy only: the plan's keys and
shapes are exactly the golden state dict's (tied parameters aside), each family is detected by its names even where
BERT's detect pattern matches too, and a configuration that contradicts the checkpoint is one error.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats.ops.convert.hf.family import load_family

HF_DATA = Path(__file__).parent / "data" / "hf"
CASES = {"mobilebert": "mobilebert/model.ckpt-3", "bigbird": "bigbird/model.ckpt-3", "convbert": "convbert/model.ckpt-3",
         "rembert": "rembert/model.ckpt"}
DROPS = {"mobilebert": {"{*}/{s:adam_m|adam_v}": 170, "global_step": 1},
         "bigbird": {"{*}/{s:AdamWeightDecayOptimizer|AdamWeightDecayOptimizer_1|adam_m|adam_v}": 92, "global_step": 1},
         "convbert": {"{p:generator|generator_predictions|discriminator_predictions}/{*}": 34, "global_step": 1},
         "rembert": {"cls/{*}": 6}}
"""Each case's drop rules and how many tensors each leaves out (nothing else is left out)."""


def _golden_shapes(case: str) -> dict[str, list[int]]:
    """The golden state dict's keys and shapes, from its safetensors header (no tensor read)."""
    raw = (HF_DATA / "golden" / case / "model.safetensors").read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_is_exactly_the_oracles_state_dict(run_cli, case: str) -> None:
    result = run_cli("convert", HF_DATA / CASES[case], "-o", HF_DATA / "never", "--to", "hf", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    family = load_family(case)
    assert plan["details"]["family"] == case and plan["details"]["class"] == family.classes[0]["name"]
    golden = {k: v for k, v in _golden_shapes(case).items() if k not in family.tied}
    assert {r["key"]: r["shape"] for r in plan["rows"]} == golden
    assert {p["kind"] for p in plan["problems"]} == {"dropped"}
    dropped = {p["key"]: p["candidates"] for p in plan["problems"]}
    assert {rule: len(keys) for rule, keys in dropped.items()} == DROPS[case]
    if "global_step" in dropped:
        assert dropped.pop("global_step") == ["global_step"]
    ((rule, keys),) = dropped.items()
    if case == "convbert":  # the generator and both ELECTRA heads (no optimizer slots in this case)
        assert {k.split("/")[0] for k in keys} == {"generator", "generator_predictions", "discriminator_predictions"}
    elif case == "rembert":  # the pretraining head and the output embedding transformers' converter never reads
        assert all(k.startswith("cls/predictions/") for k in keys)
    else:  # the optimizer's two slots of every model variable
        assert len(keys) == 2 * len(golden) and {k.rsplit("/", 1)[0] for k in keys} == {r["source"] for r in plan["rows"]}


def test_mobilebert_rows_follow_load_tf_weights_in_mobilebert(run_cli) -> None:
    result = run_cli("convert", HF_DATA / CASES["mobilebert"], "-o", HF_DATA / "never", "--to", "hf", "--dry-run",
                     "--json")
    rows = {r["source"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["cls/predictions/extra_output_weights"]["key"] == "cls.predictions.dense.weight"
    assert rows["cls/predictions/extra_output_weights"]["shape"] == [8, 40]  # [hidden - embedding, vocab]
    assert rows["cls/predictions/extra_output_weights"]["transform"] == "transpose"
    assert rows["bert/encoder/layer_1/ffn_layer_0/output/FakeLayerNorm/gamma"]["key"] == \
        "mobilebert.encoder.layer.1.ffn.0.output.LayerNorm.weight"
    assert rows["bert/embeddings/embedding_transformation/kernel"]["shape"] == [16, 24]  # [hidden, 3 * embedding]
    assert rows["bert/encoder/layer_0/attention/self/value/kernel"]["shape"] == [8, 16]  # from the layer input


@pytest.mark.parametrize("field, value, message", [
    ("intra_bottleneck_size", 4, "error: config: intra_bottleneck_size=4: the configuration contradicts the shapes: "
     "'bert/encoder/layer_0/attention/output/FakeLayerNorm/beta' [8] does not fit "
     "'mobilebert.encoder.layer.0.attention.output.LayerNorm.bias' [4] (and 57 more tensors)"),
    ("type_vocab_size", 3, "error: config: hidden_size=16, type_vocab_size=3: the configuration contradicts the shapes: "
     "'bert/embeddings/token_type_embeddings' [2, 16] does not fit 'mobilebert.embeddings.token_type_embeddings.weight' "
     "[3, 16] (candidates: bert/embeddings/token_type_embeddings)"),
])
def test_a_mobilebert_config_that_contradicts_the_checkpoint_is_refused(run_cli, tmp_path: Path, field: str,
                                                                         value: int, message: str) -> None:
    config = json.loads((HF_DATA / "mobilebert" / "bert_config.json").read_text())
    config[field] = value
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "out"
    result = run_cli("convert", HF_DATA / CASES["mobilebert"], "-o", out, "--to", "hf", "--config", path)
    assert result.exit_code == 1, result.output
    assert not out.exists()
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert errors[0].startswith(message) and len(errors) == 1, errors


def test_bigbird_rows_follow_load_tf_weights_in_big_bird(run_cli) -> None:
    result = run_cli("convert", HF_DATA / CASES["bigbird"], "-o", HF_DATA / "never", "--to", "hf", "--dry-run",
                     "--json")
    plan = json.loads(result.stdout)
    rows = {r["source"]: r for r in plan["rows"]}
    assert rows["bert/encoder/LayerNorm/gamma"]["key"] == "bert.embeddings.LayerNorm.weight"  # postnorm's embeddings
    assert rows["bert/pooler/dense/kernel"]["key"] == "bert.pooler.weight"  # one Linear
    assert rows["cls/predictions/transform/kernel"]["key"] == "cls.predictions.transform.dense.weight"
    assert rows["cls/predictions/transform/gamma"]["key"] == "cls.predictions.transform.LayerNorm.weight"
    config = plan["details"]["config"]
    assert config["model_type"] == "big_bird" and config["num_random_blocks"] == 3
    assert config["attention_type"] == "original_full" and config["rescale_embeddings"] is False


def test_convbert_convolution_kernels_as_load_tf_weights_in_convbert_permutes_them(run_cli) -> None:
    result = run_cli("convert", HF_DATA / CASES["convbert"], "-o", HF_DATA / "never", "--to", "hf", "--dry-run",
                     "--json")
    rows = {r["source"]: r for r in json.loads(result.stdout)["rows"]}
    p = "electra/encoder/layer_1/attention/self/conv_attn_key/"
    assert (rows[p + "depthwise_kernel"]["shape"], rows[p + "depthwise_kernel"]["transform"]) == ([16, 1, 3],
                                                                                                 "reshape + transpose")
    assert (rows[p + "pointwise_kernel"]["shape"], rows[p + "pointwise_kernel"]["transform"]) == ([8, 16, 1], "transpose")
    assert (rows[p + "bias"]["shape"], rows[p + "bias"]["transform"]) == ([8, 1], "reshape")
    assert rows["electra/encoder/layer_0/attention/self/conv_attn_kernel/kernel"]["key"] == \
        "encoder.layer.0.attention.self.conv_kernel_layer.weight"


def test_a_family_is_detected_by_the_rules_that_cover_its_names() -> None:
    import formats
    from formats.ops.convert.hf.plan import detect_family

    for case in ("mobilebert", "bigbird", "rembert"):
        with formats.open_checkpoint(HF_DATA / CASES[case]) as ckpt:
            keys = list(ckpt)
        assert load_family("bert").layout_of(keys, {}) is not None  # BERT's detect pattern matches their names too
        family = detect_family(keys)
        assert family is not None and family.name == case
    with formats.open_checkpoint(HF_DATA / CASES["convbert"]) as ckpt:
        keys = list(ckpt)
    assert load_family("electra").layout_of(keys, {}) is not None  # ELECTRA's detect pattern matches ConvBERT's
    family = detect_family(keys)
    assert family is not None and family.name == "convbert"
    with formats.open_checkpoint(HF_DATA / "bert" / "bert_model.ckpt") as ckpt:
        family = detect_family(list(ckpt))
    assert family is not None and family.name == "bert"


@pytest.mark.parametrize("case, family", [*((c, c) for c in sorted(CASES)), ("bert_classifier", "bert"),
                                          ("bert_squad", "bert")])
def test_back_to_tf_names_gives_the_original_model_tensors(run_cli, tmp_path: Path, case: str, family: str) -> None:
    import formats

    src = HF_DATA / CASES.get(case, f"{case}/model.ckpt-3")
    hf, back = tmp_path / "hf", tmp_path / "back" / "model.ckpt"
    assert run_cli("convert", src, "-o", hf, "--to", "hf").exit_code == 0
    result = run_cli("convert", hf, "-o", back, "--to", "tf-name", "--family", family)
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(back) as ckpt:
        restored = {k: ckpt[k].read() for k in ckpt}
    plan = json.loads(run_cli("convert", src, "-o", tmp_path / "x", "--to", "hf", "--dry-run", "--json").stdout)
    assert sorted(restored) == sorted(r["source"] for r in plan["rows"])
    with formats.open_checkpoint(src) as ckpt:
        for key, value in restored.items():
            assert ckpt[key].shape == value.shape and ckpt[key].read().tobytes() == value.tobytes(), key
