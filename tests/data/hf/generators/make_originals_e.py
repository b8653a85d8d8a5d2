"""TAPAS fine-tuned with an aggregation head (WTQ, WikiSQL) and GPT-1 as OpenAI released it, and the oracle's answer
for them (issue 37).

    /work/oracle/bin/python tests/data/hf/generators/make_originals_e.py [checkpoints] [golden] [case ...] [--out DIR]

(the oracle venv: tensorflow-cpu, torch==2.13.0 CPU, transformers 4.57.6; default: both steps, every case below).
Step ``checkpoints`` writes tests/data/hf/<case>/, step ``golden`` writes tests/data/hf/golden/<case>/ (or
DIR/<case>/: tests/interop/test_hf_oracle.py compares a fresh one with the committed files) with make_golden.py's
own functions (the loaders of transformers 4.57.6 on these files).

- ``tapas_wtq``: what tapas's ``run_task_main.py --task=WTQ`` leaves (``model.ckpt`` + ``bert_config.json``,
  written with ``tf.compat.v1.train.Saver``): make_originals_d.py's TAPAS encoder with its pooler, the
  cell-selection head (``output_weights`` / ``column_output_weights`` [hidden], scalar ``output_bias`` /
  ``column_output_bias``) and tapas_classifier_model.py's aggregation head ``output_weights_agg``
  [num_aggregation_labels = 4, hidden] (already [out, in]) / ``output_bias_agg`` [4]; ``global_step``. As
  ``TapasForQuestionAnswering`` with convert_tapas_original_tf_checkpoint_to_pytorch.py's ``--task WTQ``
  configuration (:data:`TASKS`), ``ckpt convert --hf-task wtq``.
- ``tapas_wikisql``: the same variables (other values) with the ``--task WIKISQL_SUPERVISED`` configuration,
  ``ckpt convert --hf-task wikisql-supervised``.
- ``openai_gpt``: openai/finetune-transformer-lm's ``model/`` layout, tiny: ``params_shapes.json`` (the position
  table [n_positions, n_embd], the token table [vocab, n_embd], then per block ``attn/c_attn/w`` [1, n_embd,
  3 n_embd], ``b``, ``attn/c_proj/w`` [1, n_embd, n_embd], ``b``, ``ln_1/g``, ``b``, ``mlp/c_fc/w`` [1, n_embd,
  4 n_embd], ``b``, ``mlp/c_proj/w`` [1, 4 n_embd, n_embd], ``b``, ``ln_2/g``, ``b``) and ``params_0.npy`` ...
  ``params_9.npy``: every array flattened as float32, concatenated, and split in ten (``np.array_split``: arrays
  straddle the shard boundaries). No names file, as OpenAI published it. As ``OpenAIGPTLMHeadModel``: the oracle
  runs ``load_tf_weights_in_openai_gpt`` on its ``transformer`` (an ``OpenAIGPTModel``, as
  convert_openai_original_tf_checkpoint_to_pytorch.py did; ``lm_head`` is tied to it) from a copy of the release
  with the ``parameters_names.json`` that loader reads (huggingface/pytorch-openai-transformer-lm's list:
  ``model/we:0``, each block's names, ``model/clf/w:0``, ``model/clf/b:0``) beside it; the config is
  ``OpenAIGPTConfig`` with the release's sizes and its default ``n_head`` (12), as the script built it.

The TAPAS oracle's configuration is make_originals_d.py's (``TapasConfig.from_json_file``, ``type_vocab_sizes`` =
the file's list, ``reset_position_index_per_cell`` False) with the task's fields set as the conversion script's
``WTQ`` / ``WIKISQL_SUPERVISED`` branch sets them (the script is not in the 4.57.6 wheel or sdist; the values are
copied from its source, src/transformers/models/tapas/convert_tapas_original_tf_checkpoint_to_pytorch.py) and
``num_aggregation_labels`` = 4.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import make_originals_d as md  # noqa: E402
from tfwrite import clean, save_tf1, value, write_json  # noqa: E402

ROOT = HERE.parent
SEEDS = {"tapas_wtq": 46, "tapas_wikisql": 47, "openai_gpt": 48}
TASKS = {
    "tapas_wtq": {"num_aggregation_labels": 4, "use_answer_as_supervision": True, "answer_loss_cutoff": 0.664694,
                  "cell_selection_preference": 0.207951, "huber_loss_delta": 0.121194,
                  "init_cell_selection_weights_to_zero": True, "select_one_column": True,
                  "allow_empty_column_selection": False, "temperature": 0.0352513},
    "tapas_wikisql": {"num_aggregation_labels": 4, "use_answer_as_supervision": False, "answer_loss_cutoff": 36.4519,
                      "cell_selection_preference": 0.903421, "huber_loss_delta": 222.088,
                      "init_cell_selection_weights_to_zero": True, "select_one_column": True,
                      "allow_empty_column_selection": True, "temperature": 0.763141},
}
"""convert_tapas_original_tf_checkpoint_to_pytorch.py's config for --task WTQ and WIKISQL_SUPERVISED."""
GPT1 = {"vocab_size": 50, "n_positions": 16, "n_embd": 24, "n_layer": 2}
"""The tiny release's sizes (n_embd a multiple of OpenAIGPTConfig's 12 heads)."""
GPT1_BLOCK = ("attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b",
              "mlp/c_fc/w", "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b")

CASES: dict[str, dict] = {
    "tapas_wtq": {"family": "tapas", "layout": "tf1", "checkpoint": "tapas_wtq/model.ckpt-3",
                  "config": "tapas_wtq/bert_config.json", "class": "TapasForQuestionAnswering",
                  "loader": "load_tf_weights_in_tapas", "convert_options": ["--hf-task", "wtq"],
                  "golden_made_by": "make_originals_e.py"},
    "tapas_wikisql": {"family": "tapas", "layout": "tf1", "checkpoint": "tapas_wikisql/model.ckpt-3",
                      "config": "tapas_wikisql/bert_config.json", "class": "TapasForQuestionAnswering",
                      "loader": "load_tf_weights_in_tapas", "convert_options": ["--hf-task", "wikisql-supervised"],
                      "golden_made_by": "make_originals_e.py"},
    "openai_gpt": {"family": "openai_gpt", "layout": "openai-npy", "checkpoint": "openai_gpt",
                   "config": "openai_gpt/params_shapes.json", "class": "OpenAIGPTLMHeadModel",
                   "loader": "load_tf_weights_in_openai_gpt", "loader_target": "transformer",
                   "golden_made_by": "make_originals_e.py"},
}


def gpt1_shapes(c: dict) -> list[tuple[str, list[int]]]:
    """The release's arrays in order, each with the name parameters_names.json gives it (the two embeddings
    share model/we:0; told apart here)."""
    e = c["n_embd"]
    out = [("we (positions)", [c["n_positions"], e]), ("we (tokens)", [c["vocab_size"], e])]
    sizes = {"attn/c_attn/w": [1, e, 3 * e], "attn/c_attn/b": [3 * e], "attn/c_proj/w": [1, e, e],
             "attn/c_proj/b": [e], "mlp/c_fc/w": [1, e, 4 * e], "mlp/c_fc/b": [4 * e], "mlp/c_proj/w": [1, 4 * e, e],
             "mlp/c_proj/b": [e]}
    for i in range(c["n_layer"]):
        out += [(f"h{i}/{part}", sizes.get(part, [e])) for part in GPT1_BLOCK]
    return out


def gpt1_arrays() -> list[tuple[str, np.ndarray]]:
    return [(name, value(SEEDS["openai_gpt"], name.replace(" ", ""), shape)) for name, shape in gpt1_shapes(GPT1)]


def gpt1_names_file() -> list[str]:
    """huggingface/pytorch-openai-transformer-lm's parameters_names.json, for this release's block count."""
    return (["model/we:0"] + [f"model/h{i}/{part}:0" for i in range(GPT1["n_layer"]) for part in GPT1_BLOCK]
            + ["model/clf/w:0", "model/clf/b:0"])


def make_checkpoint(case: str) -> None:
    d = ROOT / case
    clean(d)
    if case == "openai_gpt":
        arrays = gpt1_arrays()
        (d / "params_shapes.json").write_text(json.dumps([list(a.shape) for _, a in arrays]))
        flat = np.concatenate([a.reshape(-1) for _, a in arrays]).astype("<f4")
        for n, part in enumerate(np.array_split(flat, 10)):
            np.save(d / f"params_{n}.npy", part)
        print(d, len(arrays), "arrays,", flat.size, "values")
        return
    write_json(d / "bert_config.json", md.TAPAS_CONFIG)
    shapes = md.tapas_shapes(md.TAPAS_CONFIG, "tapas_sqa")
    shapes.update({"output_weights_agg": [4, md.TAPAS_CONFIG["hidden_size"]], "output_bias_agg": [4]})
    tensors = {n: value(SEEDS[case], n, sh) for n, sh in shapes.items()}
    print(save_tf1(d / "model.ckpt", tensors, global_step=3, write_checkpoint_file=True))


def gpt1_trace(state: dict, prefix: str) -> tuple[dict[str, str], list[str]]:
    """Which release array each state-dict tensor equals (squeezed, as the loader squeezes), by value."""
    arrays = gpt1_arrays()
    sources, used = {}, set()
    for key, tensor in state.items():
        g = tensor.detach().numpy()
        found = [f"array {i} ({name})" for i, (name, a) in enumerate(arrays)
                 if a.squeeze().shape == g.shape and np.array_equal(a.squeeze(), g)]
        sources[key] = " | ".join(found) or "-"
        used.update(f.split(" (")[0] for f in found)
    return sources, [f"array {i} ({name})" for i, (name, _) in enumerate(arrays) if f"array {i}" not in used]


def make_golden_case(case: str, out: Path = ROOT / "golden") -> None:
    import make_golden as mg

    transformers = mg.transformers

    def tapas_config(spec: dict):
        config = transformers.TapasConfig.from_json_file(str(ROOT / spec["config"]))
        config.reset_position_index_per_cell = False
        config.type_vocab_sizes = list(config.type_vocab_size)
        for name, val in TASKS[case].items():
            setattr(config, name, val)
        return config

    def gpt1_config(spec: dict):
        return transformers.OpenAIGPTConfig(**GPT1)

    plain_load, plain_trace, plain_inputs = mg.load, mg.trace_sources, mg.inputs_for

    def load(spec: dict, model, config, prefix: str, tf2_script) -> None:
        if spec["family"] != "openai_gpt":
            return plain_load(spec, model, config, prefix, tf2_script)
        from transformers.models.openai.modeling_openai import load_tf_weights_in_openai_gpt

        with tempfile.TemporaryDirectory() as tmp:  # the release, with the names list the loader reads beside it
            for f in Path(prefix).iterdir():
                shutil.copy(f, tmp)
            (Path(tmp) / "parameters_names.json").write_text(json.dumps(gpt1_names_file()))
            load_tf_weights_in_openai_gpt(getattr(model, spec["loader_target"]), config, tmp)

    def inputs_for(spec: dict, config) -> dict:
        out = plain_inputs(spec, config)
        if spec["family"] == "tapas":
            rng = np.random.default_rng(20261124)
            batch, seq = out["input_ids"].shape
            out["token_type_ids"] = np.stack([rng.integers(0, n, size=(batch, seq)) for n in config.type_vocab_sizes],
                                             axis=-1).astype(np.int64)
        return out

    mg.CONFIGS["tapas"], mg.CONFIGS["openai_gpt"] = tapas_config, gpt1_config
    mg.load, mg.inputs_for = load, inputs_for
    mg.trace_sources = gpt1_trace if case == "openai_gpt" else plain_trace
    record = mg.make(case, CASES[case], out, None)
    if case != "openai_gpt" and "-" in record["sources"].values():
        record = _trace_scalars(case, record, out)
    print(case, "untouched:", record["untouched"], "messages:", record["loader_messages"])


def _trace_scalars(case: str, record: dict, out: Path) -> dict:
    """make_originals_d.trace_scalars for this script's cases (the scalar biases, found by value), on ``out``."""
    saved, root = dict(md.CASES), md.ROOT
    md.CASES[case] = CASES[case]
    if out != ROOT / "golden":  # trace_scalars reads ROOT/golden/<case>: point it at a tree whose golden is out
        import os

        link_root = Path(tempfile.mkdtemp(prefix="hf-e-"))
        os.symlink(out, link_root / "golden")
        for name in (CASES[case]["checkpoint"].split("/")[0],):
            os.symlink(ROOT / name, link_root / name)
        md.ROOT = link_root
    try:
        return md.trace_scalars(case, record)
    finally:
        md.CASES.clear()
        md.CASES.update(saved)
        md.ROOT = root


def main(argv: list[str]) -> None:
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else ROOT / "golden"
    steps = [a for a in argv if a in ("checkpoints", "golden")] or ["checkpoints", "golden"]
    cases = [a for a in argv if a in CASES] or list(CASES)
    for case in cases:
        if "checkpoints" in steps:
            make_checkpoint(case)
        if "golden" in steps:
            make_golden_case(case, out)


if __name__ == "__main__":
    main(sys.argv[1:])
