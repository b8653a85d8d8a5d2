"""The oracle: transformers 4.x's own TensorFlow loaders on every checkpoint of tests/data/hf, as golden files.

    /work/venvs/hf-oracle/bin/python tests/data/hf/generators/make_golden.py [case ...] [--out DIR]
        [--tf2-script PATH]

(a venv with tensorflow-cpu, torch==2.13.0 (CPU) and the newest transformers 4.x, 4.57.6 when made; default:
every case of cases.json; --out defaults to tests/data/hf/golden). For each golden case: build the family's
PyTorch class from the case's original config (translated as the transformers 4.x conversion scripts did),
run transformers' own load_tf_weights_in_<family> on the TF checkpoint, and write golden/<name>/:

    model.safetensors  the model's state_dict() exactly as loaded (every key, tied ones included)
    config.json        the config as transformers writes it (model.save_pretrained: with "architectures")
    inputs.npz         the fixed inputs;  outputs.npz  the eval-mode outputs on them (torch.no_grad)
    oracle.json        versions, the loader and class, what the loader skipped or failed on, which
                       parameters it left at their PyTorch initial values ("untouched"), and, found by
                       comparing values (not from the loader), the checkpoint variable each state-dict
                       tensor equals ("sources") and the variables none equals

The TF2 Model Garden loader, load_tf2_weights_in_bert, is in convert_bert_original_tf2_checkpoint_to_pytorch.py,
which transformers wheels stopped shipping after 4.46 (4.52.4 has none): --tf2-script names that file or a
transformers 4.46.3 wheel holding it; without it the script runs `pip download transformers==4.46.3 --no-deps`.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CASES = json.loads((ROOT / "cases.json").read_text())
TF2_SCRIPT = "transformers/models/bert/convert_bert_original_tf2_checkpoint_to_pytorch.py"


# --- configs: the original config file -> the transformers config the 4.x conversion scripts built -----------

def bert_config(case: dict) -> transformers.PretrainedConfig:
    """convert_bert_original_tf_checkpoint_to_pytorch.py: BertConfig.from_json_file(bert_config.json)."""
    return transformers.BertConfig.from_json_file(str(ROOT / case["config"]))


def albert_config(case: dict) -> transformers.PretrainedConfig:
    """convert_albert_original_tf_checkpoint_to_pytorch.py: AlbertConfig.from_json_file(albert_config.json)."""
    return transformers.AlbertConfig.from_json_file(str(ROOT / case["config"]))


def electra_config(case: dict) -> transformers.PretrainedConfig:
    """convert_electra_original_tf_checkpoint_to_pytorch.py: ElectraConfig.from_json_file(<HF config json>)."""
    return transformers.ElectraConfig.from_json_file(str(ROOT / case["config"]))


def gpt2_config(case: dict) -> transformers.PretrainedConfig:
    """GPT-2's hparams.json (n_vocab, n_ctx, n_embd, n_head, n_layer) as GPT2Config (n_ctx is n_positions)."""
    h = json.loads((ROOT / case["config"]).read_text())
    return transformers.GPT2Config(vocab_size=h["n_vocab"], n_positions=h["n_ctx"], n_embd=h["n_embd"],
                                   n_head=h["n_head"], n_layer=h["n_layer"])


def t5_config(case: dict) -> transformers.PretrainedConfig:
    """The T5Config the case's operative_config.gin describes; the values are in cases.json ("hf_config"),
    read off the gin file by hand (transformers 4.x's T5 script took a T5Config JSON, never gin)."""
    return transformers.T5Config(**case["hf_config"])


CONFIGS = {"bert": bert_config, "albert": albert_config, "electra": electra_config, "gpt2": gpt2_config,
           "t5": t5_config}


# --- loaders ------------------------------------------------------------------------------------------------

def tf2_loader(script: str | None):
    """load_tf2_weights_in_bert from the TF2 conversion script (a .py file, or a wheel that holds it)."""
    if script is None:
        tmp = tempfile.mkdtemp(prefix="hf-oracle-")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "transformers==4.46.3",
                        "-d", tmp], check=True)
        script = str(next(Path(tmp).glob("*.whl")))
    if script.endswith(".whl"):
        with zipfile.ZipFile(script) as whl:
            source = whl.read(TF2_SCRIPT).decode()
    else:
        source = Path(script).read_text()
    name = "transformers.models.bert.convert_bert_original_tf2_checkpoint_to_pytorch"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "transformers.models.bert"
    exec(compile(source, TF2_SCRIPT, "exec"), module.__dict__)  # noqa: S102 - the oracle itself
    return module.load_tf2_weights_in_bert


def load(case: dict, model: torch.nn.Module, config: transformers.PretrainedConfig, prefix: str,
         tf2_script: str | None) -> None:
    """Run the case's transformers loader, exactly as its conversion script called it."""
    if case["loader"] == "load_tf2_weights_in_bert":
        tf2_loader(tf2_script)(model, prefix, config)
        return
    if case.get("loader_target"):  # GPT-2: convert_gpt2_original_tf_checkpoint_to_pytorch.py loads a GPT2Model,
        model = getattr(model, case["loader_target"])  # which is GPT2LMHeadModel.transformer (lm_head is tied to wte)
    module = importlib.import_module(f"transformers.models.{case['family']}.modeling_{case['family']}")
    fn = getattr(module, case["loader"])
    if case["family"] == "electra":
        fn(model, config, prefix, discriminator_or_generator=case["electra_part"])
    else:
        fn(model, config, prefix)


def model_only_copy(prefix: str, keep: list[str], directory: str) -> str:
    """The checkpoint's ``keep`` variables alone, re-saved with TensorFlow (for a loader that fails on slots)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        for name in keep:
            v1.Variable(tf.train.load_variable(prefix, name), name=name)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return v1.train.Saver().save(sess, os.path.join(directory, "model.ckpt"), write_meta_graph=False)


# --- inputs and outputs -------------------------------------------------------------------------------------

def inputs_for(case: dict, config: transformers.PretrainedConfig) -> dict[str, np.ndarray]:
    """Fixed inputs: a batch of 2, the second row padded (attention_mask 0 on its last tokens)."""
    rng = np.random.default_rng(20261123)
    batch, seq = 2, 8
    ids = rng.integers(1, config.vocab_size, size=(batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[1, 5:] = 0
    out = {"input_ids": ids, "attention_mask": mask}
    if case["family"] in ("bert", "albert", "electra"):
        out["token_type_ids"] = (np.arange(seq)[None, :] >= 4).repeat(batch, 0).astype(np.int64)
    if case["family"] == "t5":
        dec = rng.integers(1, config.vocab_size, size=(batch, 5)).astype(np.int64)
        dec[:, 0] = config.decoder_start_token_id
        out["decoder_input_ids"] = dec
    return out


def outputs_of(model: torch.nn.Module, inputs: dict[str, np.ndarray], family: str) -> dict[str, np.ndarray]:
    """Every tensor of the model's output (tuples as name.0, name.1, ...), hidden states included."""
    kwargs = {k: torch.from_numpy(v) for k, v in inputs.items()}
    if family in ("gpt2", "t5"):
        kwargs["use_cache"] = False
    with torch.no_grad():
        result = model(**kwargs, output_hidden_states=True)
    out: dict[str, np.ndarray] = {}
    for key, val in result.items():
        if isinstance(val, torch.Tensor):
            out[key] = val.numpy()
        elif isinstance(val, tuple):
            for i, t in enumerate(val):
                out[f"{key}.{i}"] = t.numpy()
    return out


# --- one case -----------------------------------------------------------------------------------------------

class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _noteworthy(lines: list[str]) -> list[str]:
    keep = ("Skipping", "Ignored", "not copied", "Weights not")
    return sorted({line for line in lines if any(k in line for k in keep)})


def trace_sources(state: dict[str, torch.Tensor], prefix: str) -> tuple[dict[str, str], list[str]]:
    """Independently of the loader: which checkpoint variable each state-dict tensor equals, and how
    ("" same shape, "reshape", "transpose" of the [in, out] matrix (after a reshape to 2-D if needed)); and the
    checkpoint variables no tensor equals (what the loader skipped or dropped)."""
    import tensorflow as tf

    arrays = {n: tf.train.load_variable(prefix, n) for n, _ in tf.train.list_variables(prefix)}
    by_size: dict[int, list[str]] = {}
    for n, a in arrays.items():
        if isinstance(a, np.ndarray) and a.dtype == np.float32:
            by_size.setdefault(a.size, []).append(n)
    sources: dict[str, str] = {}
    used: set[str] = set()
    for key, tensor in state.items():
        g = tensor.detach().numpy()
        found = []
        for n in by_size.get(g.size, []):
            a = arrays[n]
            if a.shape == g.shape and np.array_equal(a, g):
                found.append(n)
            elif np.array_equal(a.reshape(g.shape), g):
                found.append(n + " (reshape)")
            elif g.ndim == 2 and np.array_equal(a.reshape(g.shape[::-1]).T, g):
                found.append(n + " (transpose)")
        if found:
            sources[key] = " | ".join(found)
            used.update(f.split(" ")[0] for f in found)
        else:
            sources[key] = "-"
    return sources, sorted(n for n in arrays if n not in used)


def make(name: str, case: dict, out_root: Path, tf2_script: str | None) -> dict:
    """Write golden/<name>/ for one case; returns its oracle.json record."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = CONFIGS[case["family"]](case)
    model = getattr(transformers, case["class"])(config)
    model.eval()
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    prefix = str(ROOT / case["checkpoint"])
    record: dict = {"case": name, "checkpoint": case["checkpoint"], "config_source": case["config"],
                    "class": case["class"], "loader": case["loader"],
                    "loader_applied_to": case.get("loader_target", "the model"),
                    "versions": {"transformers": transformers.__version__, "torch": torch.__version__}}
    handler = _Messages()
    hf_logger = logging.getLogger("transformers")
    hf_logger.addHandler(handler)
    transformers.logging.set_verbosity_info()
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            if case.get("loader_refuses_layout_use"):  # the loader cannot read this layout: record its error, then
                try:  # make the golden from the twin case holding the same values (traced below by value)
                    load(case, getattr(transformers, case["class"])(config), config, prefix, tf2_script)
                    record["loader_on_this_layout"] = "loaded (unexpected)"
                except Exception as exc:
                    record["loader_on_this_layout"] = f"{type(exc).__name__}: {exc}"
                twin = CASES[case["loader_refuses_layout_use"]]
                record["made_from"] = (f"{twin['checkpoint']} (same values, other layout) by the same loader; "
                                       "'sources' traces every tensor to this checkpoint by value")
                handler.lines.clear()  # the messages kept are the twin load's
                stdout.seek(0)
                stdout.truncate()
                load(twin, model, config, str(ROOT / twin["checkpoint"]), tf2_script)
            else:
                try:
                    load(case, model, config, prefix, tf2_script)
                except Exception as exc:  # recorded: the oracle's own failure is a finding
                    if not case.get("on_failure_load_model_variables"):
                        raise
                    record["loader_failed_on_full_checkpoint"] = f"{type(exc).__name__}: {exc}"
                    import tensorflow as tf

                    keep = [n for n, _ in tf.train.list_variables(prefix) if n.startswith("model/")
                            and not n.endswith(("/Adam", "/Adam_1"))]
                    with tempfile.TemporaryDirectory() as tmp:
                        subset = model_only_copy(prefix, keep, tmp)
                        record["then_loaded"] = f"the {len(keep)} model/ variables re-saved alone"
                        load(case, model, config, subset, tf2_script)
    finally:
        hf_logger.removeHandler(handler)
        transformers.logging.set_verbosity_warning()
    import tensorflow as tf

    record["versions"]["tensorflow"] = tf.__version__
    record["loader_messages"] = _noteworthy(handler.lines + stdout.getvalue().splitlines())
    state = model.state_dict()
    record["untouched"] = sorted(k for k, v in state.items() if v.dtype.is_floating_point
                                 and torch.equal(v, initial[k]))
    record["state_dict_keys"] = len(state)
    record["sources"], record["checkpoint_variables_not_in_state_dict"] = trace_sources(state, prefix)
    d = out_root / name
    d.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(d / "model.safetensors"),
              metadata={"format": "pt"})
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)  # as the conversion scripts' users did; only its config.json is kept
        (d / "config.json").write_text((Path(tmp) / "config.json").read_text())
    inputs = inputs_for(case, config)
    np.savez(d / "inputs.npz", **inputs)
    np.savez(d / "outputs.npz", **outputs_of(model, inputs, case["family"]))
    (d / "oracle.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="golden case names (default: all in cases.json)")
    parser.add_argument("--out", type=Path, default=ROOT / "golden")
    parser.add_argument("--tf2-script", default=None)
    args = parser.parse_args()
    for name in args.cases or list(CASES):
        record = make(name, CASES[name], args.out, args.tf2_script)
        print(name, "untouched:", record["untouched"], "failed:" if "loader_failed_on_full_checkpoint" in record
              else "", record.get("loader_failed_on_full_checkpoint", ""))


if __name__ == "__main__":
    main()
