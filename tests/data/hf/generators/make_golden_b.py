"""The oracle for the original releases of issue 37 part B (XLNet, GPT-Neo): make_golden.py's procedure, run by
transformers 4.x's own loaders on the checkpoints make_originals_b.py wrote.

    /work/oracle/bin/python tests/data/hf/generators/make_golden_b.py [case ...] [--out DIR]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: every case of CASES below,
which cases.json holds too). Everything but the configs, the inputs and the value tracing is make_golden.py's
(imported): the golden files, their layout and oracle.json are the same as for the five older families.

- XLNet: convert_xlnet_original_tf_checkpoint_to_pytorch.py without a fine-tuning task:
  XLNetConfig.from_json_file(xlnet_config.json), XLNetLMHeadModel, load_tf_weights_in_xlnet. The inputs add
  token_type_ids (two segments), so that seg_embed and r_s_bias take part in the outputs.
- GPT-Neo: convert_gpt_neo_mesh_tf_to_pytorch.py's GPTNeoConfig(hidden_size=n_embd, num_layers=n_layer,
  num_heads=n_head, attention_types, max_position_embeddings=n_positions, resid_dropout=res_dropout,
  embed_dropout, attention_dropout=attn_dropout) **plus vocab_size=n_vocab**: the script passes no vocabulary
  size, so its GPTNeoConfig has the default 50257 and the loader's `wte[:vocab_size]` keeps the tiny model's 50
  rows, which then do not fit; the released models have 50257. GPTNeoForCausalLM, load_tf_weights_in_gpt_neo
  (which ties lm_head to wte). Outputs with use_cache=False.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_golden as mg  # noqa: E402
import transformers  # noqa: E402

CASES = {
    "xlnet": {"family": "xlnet", "layout": "tf1", "checkpoint": "xlnet/xlnet_model.ckpt",
              "config": "xlnet/xlnet_config.json", "class": "XLNetLMHeadModel", "loader": "load_tf_weights_in_xlnet"},
    "xlnet_slots": {"family": "xlnet", "layout": "tf1", "checkpoint": "xlnet_slots/model.ckpt-3",
                    "config": "xlnet_slots/xlnet_config.json", "class": "XLNetLMHeadModel",
                    "loader": "load_tf_weights_in_xlnet"},
    "gpt_neo": {"family": "gpt_neo", "layout": "mesh-tf", "checkpoint": "gpt_neo/model.ckpt-1000",
                "config": "gpt_neo/config.json", "class": "GPTNeoForCausalLM", "loader": "load_tf_weights_in_gpt_neo"},
    "gpt_neo_slots": {"family": "gpt_neo", "layout": "mesh-tf", "checkpoint": "gpt_neo_slots/model.ckpt-1003",
                      "config": "gpt_neo_slots/config.json", "class": "GPTNeoForCausalLM",
                      "loader": "load_tf_weights_in_gpt_neo"},
}


def xlnet_config(case: dict) -> transformers.PretrainedConfig:
    """convert_xlnet_original_tf_checkpoint_to_pytorch.py: XLNetConfig.from_json_file(xlnet_config.json)."""
    return transformers.XLNetConfig.from_json_file(str(mg.ROOT / case["config"]))


def gpt_neo_config(case: dict) -> transformers.PretrainedConfig:
    """convert_gpt_neo_mesh_tf_to_pytorch.py's GPTNeoConfig from the mesh-tf config, plus vocab_size=n_vocab."""
    c = json.loads((mg.ROOT / case["config"]).read_text())
    return transformers.GPTNeoConfig(hidden_size=c["n_embd"], num_layers=c["n_layer"], num_heads=c["n_head"],
                                     attention_types=c["attention_types"], max_position_embeddings=c["n_positions"],
                                     resid_dropout=c["res_dropout"], embed_dropout=c["embed_dropout"],
                                     attention_dropout=c["attn_dropout"], vocab_size=c["n_vocab"])


_inputs, _outputs, _trace = mg.inputs_for, mg.outputs_of, mg.trace_sources


def inputs_for(case: dict, config: transformers.PretrainedConfig) -> dict[str, np.ndarray]:
    """make_golden's fixed inputs; XLNet's with two segments (token_type_ids 0 then 1)."""
    out = _inputs(case, config)
    if case["family"] == "xlnet":
        out["token_type_ids"] = (np.arange(8)[None, :] >= 4).repeat(2, 0).astype(np.int64)
    return out


def outputs_of(model, inputs: dict[str, np.ndarray], family: str) -> dict[str, np.ndarray]:
    """make_golden's outputs; GPT-Neo's with use_cache=False, as GPT-2's."""
    return _outputs(model, inputs, "gpt2" if family == "gpt_neo" else family)


def trace_sources(state: dict, prefix: str) -> tuple[dict[str, str], list[str]]:
    """make_golden's tracing by value, plus a part of a variable along its first axis (XLNet's per-layer biases,
    stored stacked): ``name [i]``."""
    import tensorflow as tf

    sources, unused = _trace(state, prefix)
    arrays = {n: tf.train.load_variable(prefix, n) for n in unused}
    for key, found in sources.items():
        if found != "-":
            continue
        g = state[key].detach().numpy()
        hits = [f"{n} [{i}]" for n, a in arrays.items() if isinstance(a, np.ndarray) and a.ndim == g.ndim + 1
                and a.shape[1:] == g.shape for i in range(a.shape[0]) if np.array_equal(a[i], g)]
        if hits:
            sources[key] = " | ".join(hits)
    used = {f.split(" ")[0] for v in sources.values() for f in v.split(" | ")}
    return sources, [n for n in unused if n not in used]


mg.CONFIGS.update({"xlnet": xlnet_config, "gpt_neo": gpt_neo_config})
mg.inputs_for, mg.outputs_of, mg.trace_sources = inputs_for, outputs_of, trace_sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="golden case names (default: all of CASES)")
    parser.add_argument("--out", type=Path, default=mg.ROOT / "golden")
    args = parser.parse_args()
    for name in args.cases or list(CASES):
        record = mg.make(name, CASES[name], args.out, None)
        print(name, "untouched:", record["untouched"], "sources:", sum(v != "-" for v in record["sources"].values()),
              "/", len(record["sources"]), "not in state dict:", len(record["checkpoint_variables_not_in_state_dict"]))


if __name__ == "__main__":
    main()
