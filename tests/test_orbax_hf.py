"""``ckpt convert --to hf`` of a T5X T5 1.1 equals what transformers 4.x's own T5X conversion script made of it.

The golden files (``tests/data/orbax/t5x_golden``) were made by ``convert_t5x_checkpoint_to_pytorch.py`` from the
transformers 4.46.3 wheel, run unchanged under transformers 4.57.6 and torch, on the committed T5X sample
(``make_t5x_golden.py`` beside it: the script's ``load_t5x_weights_in_t5`` with T5X's reader stood in for by a
small independent one). ckpt's state dict must hold exactly the golden tensors, bit for bit, and its config.json
the oracle's model fields. Needs tensorstore (the sample's arrays) and safetensors.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

DATA = Path(__file__).parent / "data" / "orbax"
GOLDEN = DATA / "t5x_golden"

pytest.importorskip("tensorstore")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

FIELDS = ("vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_decoder_layers", "num_heads",
          "relative_attention_num_buckets", "feed_forward_proj", "tie_word_embeddings", "is_encoder_decoder",
          "layer_norm_epsilon", "decoder_start_token_id", "pad_token_id", "eos_token_id", "model_type")


def test_t5x_to_hf_equals_the_t5x_conversion_script(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    result = run_cli("convert", DATA / "t5x/checkpoint_3", "--to", "hf", "-o", out)
    assert result.exit_code == 0, result.output
    assert "T5X optimizer state" in result.output and "training step counter" in result.output
    ours, golden = safetensors_numpy.load_file(str(out / "model.safetensors")), \
        safetensors_numpy.load_file(str(GOLDEN / "model.safetensors"))
    assert sorted(ours) == sorted(golden)
    for key, want in golden.items():
        assert ours[key].dtype == want.dtype and ours[key].shape == want.shape, key
        assert ours[key].tobytes() == want.tobytes(), key
    config, oracle = json.loads((out / "config.json").read_text()), json.loads((GOLDEN / "config.json").read_text())
    assert {f: config.get(f) for f in FIELDS} == {f: oracle.get(f) for f in FIELDS}
    assert config["architectures"] == ["T5ForConditionalGeneration"]
    assert not [k for k in config if k.startswith("_")]


def test_the_golden_files_hold_the_t5x_tensors_transposed() -> None:
    """The hand-computed map, checked on the oracle's output: kernels and relative position tables transposed,
    T5X's query/key/value/out as q/k/v/o, scales as stored (sha256 in goldens.json: the T5X values as written)."""
    import hashlib

    written = json.loads((DATA / "goldens.json").read_text())["t5x/checkpoint_3"]["restore"]
    golden = safetensors_numpy.load_file(str(GOLDEN / "model.safetensors"))

    def sha(value: np.ndarray) -> str:
        return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()

    pairs = {"shared.weight": ("target/token_embedder/embedding", False),
             "encoder.block.0.layer.0.SelfAttention.q.weight": ("target/encoder/layers_0/attention/query/kernel", True),
             "decoder.block.0.layer.1.EncDecAttention.o.weight":
                 ("target/decoder/layers_0/encoder_decoder_attention/out/kernel", True),
             "decoder.block.0.layer.2.DenseReluDense.wi_1.weight": ("target/decoder/layers_0/mlp/wi_1/kernel", True),
             "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight":
                 ("target/encoder/relpos_bias/rel_embedding", True),
             "decoder.block.0.layer.1.layer_norm.weight":
                 ("target/decoder/layers_0/pre_cross_attention_layer_norm/scale", False),
             "lm_head.weight": ("target/decoder/logits_dense/kernel", True)}
    for hf, (t5x, transposed) in pairs.items():
        value = golden[hf].T if transposed else golden[hf]
        assert sha(value) == written[t5x]["sha256"], hf
