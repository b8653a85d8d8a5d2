"""Write the keras-hub presets of tests/data/keras_hub and their golden files (issue 37, item 4).

For each case: a tiny transformers 5 model with seeded values is saved (``save_pretrained``), loaded into keras-hub
by keras-hub's own transformers converter (``keras_hub.models.Backbone.from_preset(<that directory>)``: the oracle)
and saved as a keras-hub preset (``save_to_preset``: ``config.json``, ``model.weights.h5``, ``metadata.json``).
The golden files are the transformers model's: ``golden/model.safetensors`` (its whole ``state_dict()``, tied
parameters included), ``golden/config.json``, ``golden/inputs.npz`` (batch 2, length 8, the second row padded from
position 5 by ``attention_mask``) and ``golden/outputs.npz`` (the eval-mode outputs, ``output_hidden_states=True``). Then ``make_tokenizers.py`` gives
each preset its tokenizer (keras-hub's converter again) and writes ``golden/tokens.json``.

Needs keras-hub, keras 3, torch 2.13 CPU and transformers 5 (no TensorFlow)::

    python3 -m venv /work/savedhub-venv  # with keras-hub 0.32, keras 3.15, torch 2.13.0+cpu, transformers 5.23
    KERAS_BACKEND=torch /work/savedhub-venv/bin/python tests/data/keras_hub/generators/make_presets.py

Deterministic: every parameter's values come from a generator seeded by crc32 of its name.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import zlib
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

HERE = Path(__file__).resolve().parent.parent

CASES = {
    "bert": ("BertModel", transformers.BertConfig, dict(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, type_vocab_size=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)),
    "gpt2": ("GPT2LMHeadModel", transformers.GPT2Config, dict(
        vocab_size=99, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=98, eos_token_id=98, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0)),
    "gemma": ("GemmaForCausalLM", transformers.GemmaConfig, dict(
        vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=64, rms_norm_eps=1e-6)),
    "llama": ("LlamaForCausalLM", transformers.LlamaConfig, dict(
        vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_theta=10000.0)),
    "llama_tied": ("LlamaForCausalLM", transformers.LlamaConfig, dict(
        vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_theta=500000.0)),
}


def _values(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Seeded values by the parameter's role: norm scales ~ 1 + N(0, 0.04) (Gemma's ~ N(0, 0.04): it adds 1),
    biases ~ N(0, 0.04), embeddings ~ N(0, 1), kernels ~ N(0, 1/fan_in)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if len(shape) == 1:
        base = 1.0 if ("norm" in name or "ln_" in name or "LayerNorm" in name) and name.endswith("weight") else 0.0
        return (base + 0.2 * rng.standard_normal(shape)).astype(np.float32)
    if "embed" in name or name.endswith(("wte.weight", "wpe.weight")):
        return rng.standard_normal(shape).astype(np.float32)
    fan_in = shape[0] if "c_attn" in name or "c_proj" in name or "c_fc" in name else shape[-1]
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def _model(cls_name: str, config_cls: type, fields: dict) -> torch.nn.Module:
    config = config_cls(**fields)
    model = getattr(transformers, cls_name)(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(torch.from_numpy(_values(name, tuple(param.shape))))
    model.tie_weights()
    return model


def _inputs(case: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(37)
    ids = rng.integers(3, 99, size=(2, 8)).astype(np.int64)
    mask = np.ones((2, 8), dtype=np.int64)
    mask[1, 5:] = 0
    out = {"input_ids": ids, "attention_mask": mask}
    if case == "bert":
        out["token_type_ids"] = np.array([[0] * 4 + [1] * 4, [0] * 8], dtype=np.int64)
    return out


def outputs(model: torch.nn.Module, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The eval-mode outputs, tuples as ``name.0``, ``name.1``, ..."""
    kwargs = {k: torch.from_numpy(v) for k, v in inputs.items()}
    with torch.no_grad():
        result = model(**kwargs, output_hidden_states=True, use_cache=False)
    out: dict[str, np.ndarray] = {}
    for key, val in result.items():
        if isinstance(val, torch.Tensor):
            out[key] = val.numpy()
        elif isinstance(val, tuple):
            out.update({f"{key}.{i}": t.numpy() for i, t in enumerate(val)})
    return out


def make(case: str, work: Path) -> None:
    import keras_hub
    from make_tokenizers import add_tokenizer
    from safetensors.torch import save_file

    cls_name, config_cls, fields = CASES[case]
    model = _model(cls_name, config_cls, fields)
    hf_dir = work / case
    model.save_pretrained(hf_dir)
    backbone = keras_hub.models.Backbone.from_preset(str(hf_dir))
    out = HERE / case
    shutil.rmtree(out, ignore_errors=True)
    backbone.save_to_preset(str(out / "preset"))
    golden = out / "golden"
    golden.mkdir(parents=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(golden / "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(hf_dir / "config.json", golden / "config.json")
    inputs = _inputs(case)
    np.savez(golden / "inputs.npz", **inputs)
    np.savez(golden / "outputs.npz", **outputs(model, inputs))
    (golden / "oracle.json").write_text(json.dumps({
        "class": cls_name, "transformers": transformers.__version__, "keras_hub": keras_hub.__version__,
        "keras": __import__("keras").__version__, "backend": __import__("keras").backend.backend(),
        "torch": torch.__version__, "keras_hub_class": type(backbone).__name__,
        "how": "keras_hub.models.Backbone.from_preset(save_pretrained dir).save_to_preset(preset)"}, indent=1) + "\n")
    print(case, "->", out)
    add_tokenizer(case, work)


def main() -> None:
    import tempfile

    from make_tokenizers import fixed_hash_seed

    fixed_hash_seed()

    with tempfile.TemporaryDirectory() as work:
        for case in sys.argv[1:] or CASES:
            make(case, Path(work))
        if not sys.argv[1:]:
            from make_tokenizers import add_llama2_tokenizer, add_nfkc_tokenizer

            add_llama2_tokenizer(Path(work))
            add_nfkc_tokenizer(Path(work))


if __name__ == "__main__":
    main()
