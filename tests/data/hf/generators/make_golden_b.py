"""The oracle for the original releases of issue 37 part B (XLNet, GPT-Neo): make_golden.py's procedure, run by
transformers 4.x's own loaders on the checkpoints make_originals_b.py wrote.

    /work/oracle/bin/python tests/data/hf/generators/make_golden_b.py [case ...] [--out DIR]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: every case of CASES below,
which cases.json holds too). Everything but the configs, the inputs and the value tracing is make_golden.py's
(imported): the golden files, their layout and oracle.json are the same as for the five older families.

- XLNet: convert_xlnet_original_tf_checkpoint_to_pytorch.py without a fine-tuning task:
  XLNetConfig.from_json_file(xlnet_config.json), XLNetLMHeadModel, load_tf_weights_in_xlnet; with
  --finetuning_task sts-b (xlnet_stsb): XLNetForSequenceClassification, num_labels 1, the same loader (it leaves
  mask_emb, which a fine-tuned checkpoint lacks, at its initial value). The inputs add
  token_type_ids (two segments), so that seg_embed and r_s_bias take part in the outputs.
- ImageGPT: load_tf_weights_in_imagegpt on ImageGPTForCausalImageModeling(ImageGPTConfig(n_embd, n_layer, n_head,
  vocab_size=n_vocab + 1, n_positions=n_ctx)) (convert_imagegpt_original_tf2_to_pytorch.py's config for a size
  of its own; the script names a class 4.57 lacks).
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
    "xlnet_stsb": {"family": "xlnet", "layout": "tf1", "checkpoint": "xlnet_stsb/model.ckpt-100",
                   "config": "xlnet_stsb/xlnet_config.json", "class": "XLNetForSequenceClassification",
                   "loader": "load_tf_weights_in_xlnet", "finetuning_task": "sts-b"},
    "gpt_neo": {"family": "gpt_neo", "layout": "mesh-tf", "checkpoint": "gpt_neo/model.ckpt-1000",
                "config": "gpt_neo/config.json", "class": "GPTNeoForCausalLM", "loader": "load_tf_weights_in_gpt_neo"},
    "gpt_neo_slots": {"family": "gpt_neo", "layout": "mesh-tf", "checkpoint": "gpt_neo_slots/model.ckpt-1003",
                      "config": "gpt_neo_slots/config.json", "class": "GPTNeoForCausalLM",
                      "loader": "load_tf_weights_in_gpt_neo"},
    "pegasus": {"family": "pegasus", "layout": "tf1", "checkpoint": "pegasus/model.ckpt-1000",
                "config": "pegasus/params.json", "class": "PegasusForConditionalGeneration",
                "loader": "convert_pegasus"},
    "bigbird_pegasus": {"family": "bigbird_pegasus", "layout": "tf1", "checkpoint": "bigbird_pegasus/model.ckpt-1000",
                        "config": "bigbird_pegasus/params.json", "class": "BigBirdPegasusForConditionalGeneration",
                        "loader": "convert_bigbird_pegasus"},
    "imagegpt": {"family": "imagegpt", "layout": "tf1", "checkpoint": "imagegpt/model.ckpt-1000",
                 "config": "imagegpt/hparams.json", "class": "ImageGPTForCausalImageModeling",
                 "loader": "load_tf_weights_in_imagegpt"},
}
BIGBIRD_PEGASUS_SCRIPT = "transformers/models/bigbird_pegasus/convert_bigbird_pegasus_tf_to_pytorch.py"


def bigbird_pegasus_updates(case: dict) -> dict:
    """The script's config_update (its __main__ passes {}: the user fills it in): bigbird's flags (params.json) as
    BigBirdPegasusConfig fields."""
    p = json.loads((mg.ROOT / case["config"]).read_text())
    return dict(vocab_size=p["vocab_size"], d_model=p["hidden_size"], encoder_ffn_dim=p["intermediate_size"],
                decoder_ffn_dim=p["intermediate_size"], encoder_attention_heads=p["num_attention_heads"],
                decoder_attention_heads=p["num_attention_heads"], encoder_layers=p["num_hidden_layers"],
                decoder_layers=p["num_hidden_layers"], max_position_embeddings=p["max_position_embeddings"],
                attention_type=p["attention_type"], block_size=p["block_size"], num_random_blocks=p["num_rand_blocks"],
                use_bias=p["use_bias"])


def bigbird_pegasus_config(case: dict) -> transformers.PretrainedConfig:
    """convert_bigbird_pegasus's BigBirdPegasusConfig(**config_update)."""
    return transformers.BigBirdPegasusConfig(**bigbird_pegasus_updates(case))
PEGASUS_SCRIPT = "transformers/models/pegasus/convert_pegasus_tf_to_pytorch.py"
PEGASUS_DEFAULTS = dict(vocab_size=96103, max_position_embeddings=512, d_model=1024, encoder_ffn_dim=4096,
                        decoder_ffn_dim=4096, encoder_attention_heads=16, decoder_attention_heads=16, encoder_layers=16,
                        decoder_layers=16, dropout=0.1, attention_dropout=0.1, activation_dropout=0.1, pad_token_id=0,
                        eos_token_id=1, is_encoder_decoder=True, normalize_before=True, scale_embedding=True,
                        normalize_embedding=False, add_final_layer_norm=True, static_position_embeddings=True,
                        num_beams=8, activation_function="relu")
"""configuration_pegasus.DEFAULTS as transformers 3.x/4.0 defined it (the script imports it; later releases dropped
it, so the script as shipped in 4.46.3 fails at its import): pegasus-large's architecture."""


def pegasus_updates(case: dict) -> dict:
    """The script's cfg_updates for the case (its task_specific_params entry, for the tiny model): pegasus's param
    set fields (params.json) as PegasusConfig fields."""
    p = json.loads((mg.ROOT / case["config"]).read_text())
    return dict(vocab_size=p["vocab_size"], d_model=p["hidden_size"], encoder_ffn_dim=p["filter_size"],
                decoder_ffn_dim=p["filter_size"], encoder_attention_heads=p["num_heads"],
                decoder_attention_heads=p["num_heads"], encoder_layers=p["num_encoder_layers"],
                decoder_layers=p["num_decoder_layers"], max_position_embeddings=p["max_input_len"])


def pegasus_config(case: dict) -> transformers.PretrainedConfig:
    """convert_pegasus's PegasusConfig(**DEFAULTS updated by cfg_updates)."""
    return transformers.PegasusConfig(**{**PEGASUS_DEFAULTS, **pegasus_updates(case)})


def pegasus_script(wheel: str, path: str = PEGASUS_SCRIPT):
    """A conversion script from a transformers 4.46.3 wheel, run unchanged against 4.57.6 (for Pegasus's, with the
    DEFAULTS and task_specific_params it imports put back into configuration_pegasus)."""
    import importlib.util
    import zipfile

    from transformers.models.pegasus import configuration_pegasus

    configuration_pegasus.DEFAULTS = PEGASUS_DEFAULTS
    configuration_pegasus.task_specific_params = {}
    with zipfile.ZipFile(wheel) as whl:
        source = whl.read(path).decode()
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("convert_pegasus", loader=None))
    exec(compile(source, PEGASUS_SCRIPT, "exec"), module.__dict__)  # noqa: S102 - the oracle itself
    return module


WHEEL: list[str] = []
_load = mg.load


def load(case: dict, model, config, prefix: str, tf2_script: str | None) -> None:
    """make_golden's loaders; Pegasus: the script's get_tf_weights_as_numpy and convert_pegasus (which builds its own
    model from DEFAULTS + cfg_updates), its state dict then put into the case's model (same config)."""
    if case["loader"] == "convert_bigbird_pegasus":
        script = pegasus_script(WHEEL[0], BIGBIRD_PEGASUS_SCRIPT)
        built = script.convert_bigbird_pegasus(script.get_tf_weights_as_numpy(prefix), bigbird_pegasus_updates(case))
        assert built.config.to_dict() == config.to_dict()
        model.load_state_dict(built.state_dict(), strict=True)
        return
    if case["loader"] != "convert_pegasus":
        _load(case, model, config, prefix, tf2_script)
        return
    script = pegasus_script(WHEEL[0])
    built = script.convert_pegasus(script.get_tf_weights_as_numpy(prefix), pegasus_updates(case))
    assert built.config.to_dict() == config.to_dict()
    model.load_state_dict(built.state_dict(), strict=True)


def imagegpt_config(case: dict) -> transformers.PretrainedConfig:
    """convert_imagegpt_original_tf2_to_pytorch.py's ImageGPTConfig(n_embd, n_layer, n_head) (its sizes table has
    only the released small/medium/large) with the tiny run's vocab_size = n_vocab + 1 (the start-of-image token) and
    n_positions = n_ctx; its ImageGPTForCausalLM is ImageGPTForCausalImageModeling in 4.57."""
    h = json.loads((mg.ROOT / case["config"]).read_text())
    return transformers.ImageGPTConfig(n_embd=h["n_embd"], n_layer=h["n_layer"], n_head=h["n_head"],
                                       vocab_size=h["n_vocab"] + 1, n_positions=h["n_ctx"])


def xlnet_config(case: dict) -> transformers.PretrainedConfig:
    """convert_xlnet_original_tf_checkpoint_to_pytorch.py: XLNetConfig.from_json_file(xlnet_config.json); with
    --finetuning_task sts-b, config.finetuning_task = "sts-b" and num_labels = GLUE_TASKS_NUM_LABELS["sts-b"] = 1."""
    config = transformers.XLNetConfig.from_json_file(str(mg.ROOT / case["config"]))
    if case.get("finetuning_task"):
        config.finetuning_task, config.num_labels = case["finetuning_task"], {"sts-b": 1}[case["finetuning_task"]]
    return config


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
    if case["family"] in ("pegasus", "bigbird_pegasus"):
        dec = np.random.default_rng(20261124).integers(1, config.vocab_size, size=(2, 5)).astype(np.int64)
        dec[:, 0] = config.decoder_start_token_id
        out["decoder_input_ids"] = dec
    return out


def outputs_of(model, inputs: dict[str, np.ndarray], family: str) -> dict[str, np.ndarray]:
    """make_golden's outputs; GPT-Neo's and the Pegasus ones' with use_cache=False, as GPT-2's (not ImageGPT's: 4.57 fails
    on it without a cache, past_length None)."""
    return _outputs(model, inputs, "gpt2" if family in ("gpt_neo", "pegasus", "bigbird_pegasus") else family)


def trace_sources(state: dict, prefix: str) -> tuple[dict[str, str], list[str]]:
    """make_golden's tracing by value, plus a part of a variable along its first axis (XLNet's per-layer biases,
    stored stacked): ``name [i]``; a bfloat16 variable cast (``as float32``); Pegasus's zeroed padding row, computed
    position tables and zeros."""
    import tensorflow as tf

    sources, unused = _trace(state, prefix)
    arrays = {n: tf.train.load_variable(prefix, n) for n in unused + ["embeddings/weights", "model/wte"]
              if n in dict(tf.train.list_variables(prefix))}
    pieces: set[str] = set()  # variables traced as pieces of a parameter (ImageGPT)
    cast = {n: a for n, a in arrays.items() if isinstance(a, np.ndarray) and a.dtype.name == "bfloat16"}
    for key, found in sources.items():
        if found != "-":
            continue
        g = state[key].detach().numpy()
        hits = [f"{n} ({how}as float32)" for n, a in cast.items() for how, b in (("", a), ("transpose, ", a.T))[:1 + (a.ndim == 2)]
                if b.shape == g.shape and np.array_equal(b.astype(np.float32), g)]  # GPT-Neo's bfloat16 variables
        hits += [f"{n} [{i}]" for n, a in arrays.items() if isinstance(a, np.ndarray) and a.ndim == g.ndim + 1
                and a.shape[1:] == g.shape for i in range(a.shape[0]) if np.array_equal(a[i], g)]
        if not hits and g.ndim == 2:  # Pegasus: the script zeroes the padding token's embedding row
            hits = [f"{n} (row 0 zeroed)" for n, a in arrays.items() if isinstance(a, np.ndarray) and a.shape == g.shape
                    and not g[0].any() and np.array_equal(a[1:], g[1:])]
        if not hits and key.endswith("attn.c_attn.weight"):  # ImageGPT: q, k, v side by side, each transposed
            layer = "model/h" + key.split(".")[2] + "/attn/"
            qkv = [arrays.get(f"{layer}{p}_proj") for p in "qkv"]
            if all(a is not None for a in qkv) and np.array_equal(np.concatenate([a.T for a in qkv], 1), g):
                hits = [f"{layer}q_proj, k_proj, v_proj (each transposed, side by side)"]
                pieces.update(f"{layer}{p}_proj" for p in "qkv")
        if not hits and key == "transformer.wte.weight" and "model/sos" in arrays:  # ImageGPT: sos as the last row
            if np.array_equal(np.concatenate([arrays["model/wte"], arrays["model/sos"][None]]), g):
                hits = ["model/wte, then model/sos as the last row"]
                pieces.update(("model/wte", "model/sos"))
        if not hits and key.endswith("embed_positions.weight"):
            hits = ["computed (sinusoidal, as transformers makes it)"]
        elif not hits and not g.any():
            hits = ["zeros (no checkpoint variable: the script's zeros, or the loader's initial ones)"]
        if hits:
            sources[key] = " | ".join(hits)
    used = {f.split(" ")[0] for v in sources.values() for f in v.split(" | ")} | pieces
    return sources, [n for n in unused if n not in used]


mg.CONFIGS.update({"xlnet": xlnet_config, "gpt_neo": gpt_neo_config, "pegasus": pegasus_config,
                   "bigbird_pegasus": bigbird_pegasus_config, "imagegpt": imagegpt_config})
mg.inputs_for, mg.outputs_of, mg.trace_sources, mg.load = inputs_for, outputs_of, trace_sources, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="golden case names (default: all of CASES)")
    parser.add_argument("--out", type=Path, default=mg.ROOT / "golden")
    parser.add_argument("--wheel", help="a transformers 4.46.3 wheel (for the Pegasus script; default: pip download)")
    args = parser.parse_args()
    if args.wheel is None and any("pegasus" in CASES[c]["family"] for c in args.cases or CASES):
        import subprocess
        import tempfile

        tmp = tempfile.mkdtemp(prefix="hf-oracle-")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "transformers==4.46.3", "-d", tmp],
                       check=True)
        args.wheel = str(next(Path(tmp).glob("*.whl")))
    WHEEL.append(args.wheel or "")
    for name in args.cases or list(CASES):
        record = mg.make(name, CASES[name], args.out, None)
        left = [k for k in record["untouched"] if record["sources"][k] == "-"]
        if left:  # XLNet fine-tuned: mask_emb is in no checkpoint variable; the loader left it as initialised
            record["sources"].update({k: "none: not in the checkpoint, left at its initial value (untouched)"
                                      for k in left})
            (args.out / name / "oracle.json").write_text(json.dumps(record, indent=2) + "\n")
        print(name, "untouched:", record["untouched"], "sources:", sum(v != "-" for v in record["sources"].values()),
              "/", len(record["sources"]), "not in state dict:", len(record["checkpoint_variables_not_in_state_dict"]))


if __name__ == "__main__":
    main()
