"""tests/data/hf_h5: tiny random transformers 4.x TF models saved as the hub holds them (tf_model.h5 +
config.json), and the oracle: what transformers 4.x's own from_tf=True makes of each, as golden files.

    /work/oracle/bin/python tests/data/hf_h5/generators/make_h5_zoo.py [case ...] [--out DIR] [--list]

(the oracle venv: transformers 4.57.6, tensorflow-cpu 2.21, tf-keras 2.21, torch 2.13.0 CPU; default: every case
of zoo_cases.py; --out defaults to tests/data/hf_h5). Deterministic: every TF weight is overwritten with values
seeded by (SEED, crc32 of its name). For each case:

    <case>/            tf_model.h5 + config.json as TFxxx.save_pretrained writes them (+ a tiny tokenizer for some)
    golden/<case>/     model.safetensors  the PyTorch state_dict() exactly as from_tf=True left it (every key,
                                          tied ones included)
                       config.json        as the PyTorch model's save_pretrained writes it
                       inputs.npz         fixed inputs (batch 2; text: length 8, row 2 padded from position 5)
                       outputs.npz        eval-mode outputs of the PyTorch model (torch.no_grad), tuples as
                                          name.0, name.1, ..., nested outputs as outer.inner
                       tf_outputs.npz     the TF model's outputs on the same inputs (training=False)
                       oracle.json        versions, classes, from_tf's missing/unexpected keys and messages,
                                          "untouched" (state-dict tensors no h5 weight equals: left at init),
                                          "sources" (the h5 weight each tensor equals, found by value, and how),
                                          the h5 weights no tensor equals, and the PT-vs-TF output differences
    cases.json         case -> dir, tf_class, pt_class, model_type, task, inputs
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import itertools
import json
import logging
import os
import sys
import time
import zlib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers.modeling_tf_pytorch_utils import (  # noqa: E402
    load_tf2_checkpoint_in_pytorch_model,
    load_tf2_state_dict_in_pytorch_model,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from zoo_cases import CASES  # noqa: E402
from zoo_tokenizers import save_tokenizer  # noqa: E402

ROOT = HERE.parent
SEED = 20261124


# --- weights: every TF weight gets its own values ------------------------------------------------------------

def fill(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values for one weight, seeded by its name: kernels ~ N(0, 1/fan_in), embeddings ~ N(0, 1), norm scales
    ~ 1 + N(0, 0.04), other vectors ~ N(0, 0.04), BatchNorm variances in [0.5, 1.5)."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    leaf = name.split("/")[-1].split(":")[0]
    low = name.lower()
    if "moving_variance" in leaf:
        return (0.5 + rng.random(shape)).astype(np.float32)
    if len(shape) >= 2:
        if "embed" in low or leaf in ("wte", "wpe", "weight") and len(shape) == 2 and "dense" not in low:
            std = 1.0
        else:
            std = 1.0 / np.sqrt(max(1, int(np.prod(shape[:-1]))))
        return rng.normal(0.0, std, shape).astype(np.float32)
    if leaf in ("gamma", "scale", "g") or ("norm" in low and leaf == "weight"):
        return (1.0 + rng.normal(0.0, 0.2, shape)).astype(np.float32)
    return rng.normal(0.0, 0.2, shape).astype(np.float32)


def randomize(model: tf.keras.Model) -> int:
    """Overwrite every float weight (trainable or not) except index tables; returns how many were set."""
    n = 0
    for w in model.weights:
        if not w.dtype.is_floating or any(s in w.name for s in ("index", "position_ids", "inv_freq")):
            continue
        w.assign(fill(w.name, tuple(w.shape)))
        n += 1
    return n


# --- inputs and outputs -------------------------------------------------------------------------------------

def inputs_for(spec: dict, config: transformers.PretrainedConfig) -> dict[str, np.ndarray]:
    """Fixed inputs for the case's input kind (batch 2)."""
    rng = np.random.default_rng(SEED)
    kind = spec["inputs"]
    batch, seq = 2, 8
    out: dict[str, np.ndarray] = {}
    if kind.startswith(("text", "causal", "seq2seq", "layout", "tapas", "clip")):
        vocab = getattr(config, "vocab_size", None) or config.get_text_config().vocab_size
        ids = rng.integers(3, vocab, size=(batch, seq)).astype(np.int32)
        mask = np.ones((batch, seq), np.int32)
        mask[1, 5:] = 0
        out["input_ids"], out["attention_mask"] = ids, mask
    if kind == "text+types":
        out["token_type_ids"] = (np.arange(seq)[None, :] >= 4).repeat(batch, 0).astype(np.int32)
    if kind == "seq2seq":
        dec = rng.integers(3, vocab, size=(batch, 5)).astype(np.int32)
        dec[:, 0] = config.decoder_start_token_id
        out["decoder_input_ids"] = dec
    if kind in ("image", "clip"):
        size = spec.get("image_size", 32)
        out["pixel_values"] = rng.normal(0, 1, (batch, 3, size, size)).astype(np.float32)
    if kind == "audio":
        out["input_values"] = rng.normal(0, 1, (batch, 400)).astype(np.float32)
    for name, (shape, dtype, low, high) in spec.get("extra_inputs", {}).items():
        if dtype == "float32":
            out[name] = rng.normal(0, 1, shape).astype(np.float32)
        else:
            out[name] = rng.integers(low, high, size=shape).astype(np.int32)
    for name, value in spec.get("fixed_inputs", {}).items():
        out[name] = np.asarray(value[0], dtype=value[1])
    return out


def flatten(result, prefix: str = "") -> dict[str, np.ndarray]:
    """Every tensor of a (TF or PT) model output: tuples as name.0, name.1, nested outputs as outer.inner."""
    out: dict[str, np.ndarray] = {}
    items = result.items() if hasattr(result, "items") else enumerate(result)
    for key, val in items:
        name = f"{prefix}{key}"
        if val is None:
            continue
        if isinstance(val, torch.Tensor):
            out[name] = val.detach().numpy()
        elif isinstance(val, (tf.Tensor, tf.Variable, np.ndarray)):
            out[name] = np.asarray(val)
        elif isinstance(val, (tuple, list)) or hasattr(val, "items"):
            out.update(flatten(val, name + "."))
    return out


def call_kwargs(spec: dict) -> dict:
    """Keyword arguments of the call besides the inputs: hidden states on, the decoder cache off."""
    kwargs: dict = {"output_hidden_states": True}
    if spec["inputs"] in ("causal", "seq2seq", "speech2seq"):
        kwargs["use_cache"] = False
    kwargs.update(spec.get("call", {}))
    return kwargs


def run_tf(model, inputs: dict[str, np.ndarray], spec: dict) -> dict[str, np.ndarray]:
    kwargs = {k: tf.constant(v) for k, v in inputs.items()}
    kwargs.update(call_kwargs(spec))
    return flatten(model(**kwargs, training=False))


def run_pt(model, inputs: dict[str, np.ndarray], spec: dict) -> dict[str, np.ndarray]:
    kwargs = {k: torch.from_numpy(v.astype(np.int64) if v.dtype == np.int32 else v) for k, v in inputs.items()}
    kwargs.update(call_kwargs(spec))
    with torch.no_grad():
        return flatten(model(**kwargs))


# --- the oracle ---------------------------------------------------------------------------------------------

class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def load_components(pt_model, tf_dir: Path, spec: dict) -> dict:
    """Composite models (encoder-decoder, dual encoder): transformers 4.x's generic path maps none of their
    components (TF names hold the component's main layer, `encoder/vit/...`, PyTorch names do not). Its
    EncoderDecoderModel / VisionEncoderDecoderModel.from_pretrained(from_tf=True) instead load the TF model,
    copy each component into a standalone TF model (variable names without the first two levels), save it and load
    that with from_tf=True into the PyTorch component; done here the same way, minus the files: each component's
    TF weights, renamed as that workaround does, through load_tf2_state_dict_in_pytorch_model."""
    tf_model = getattr(transformers, spec["tf_class"]).from_pretrained(str(tf_dir))
    info: dict = {"missing_keys": [], "unexpected_keys": []}
    for comp in spec["components"]:
        weights = {"standalone/" + "/".join(w.name.split("/")[2:]): w.numpy() for w in getattr(tf_model, comp).weights}
        _, i = load_tf2_state_dict_in_pytorch_model(getattr(pt_model, comp), weights, allow_missing_keys=True,
                                                    output_loading_info=True)
        info["missing_keys"] += [f"{comp}.{k}" for k in i["missing_keys"]]
        info["unexpected_keys"] += [f"{comp}.{k}" for k in i["unexpected_keys"]]
    return info


def h5_weights(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of the h5 file by its path."""
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


def trace_sources(state: dict[str, torch.Tensor], arrays: dict[str, np.ndarray]) -> tuple[dict, list[str]]:
    """Independently of the loader: which h5 weight each state-dict tensor equals, and how ("" as is,
    "transpose" or "permute(...)" of the axes, "reshape"); "-" when none does. Also the h5 weights none equals."""
    by_size: dict[int, list[str]] = {}
    for n, a in arrays.items():
        if a.dtype.kind == "f":
            by_size.setdefault(a.size, []).append(n)
    sources: dict[str, str] = {}
    used: set[str] = set()
    for key, tensor in state.items():
        g = tensor.detach().numpy()
        found = []
        for n in by_size.get(g.size, []) if g.dtype.kind == "f" else []:
            a = arrays[n]
            if a.shape == g.shape and np.array_equal(a, g):
                found.append(n)
                continue
            if a.ndim == g.ndim and sorted(a.shape) == sorted(g.shape):
                hit = next((p for p in itertools.permutations(range(a.ndim)) if p != tuple(range(a.ndim))
                            and a.transpose(p).shape == g.shape and np.array_equal(a.transpose(p), g)), None)
                if hit is not None:
                    found.append(n + (" (transpose)" if a.ndim == 2 else f" (permute{hit})"))
                    continue
            if np.array_equal(a.reshape(g.shape), g):
                found.append(n + " (reshape)")
        sources[key] = " | ".join(found) if found else "-"
        used.update(f.split(" ")[0] for f in found)
    return sources, sorted(n for n in arrays if n not in used)


def diff(pt: dict[str, np.ndarray], tfo: dict[str, np.ndarray], mask: np.ndarray | None = None
         ) -> dict[str, float | str]:
    """Max |PT - TF| per output both have; with ``mask`` (the text attention_mask), only over the positions it
    keeps, for outputs shaped [batch, seq, ...] (what a padded position holds is each implementation's own)."""
    out: dict[str, float | str] = {}
    for k in sorted(set(pt) & set(tfo)):
        if pt[k].shape != tfo[k].shape:
            out[k] = f"shape {list(pt[k].shape)} vs TF {list(tfo[k].shape)}"
            continue
        d = np.abs(pt[k].astype(np.float64) - tfo[k])
        if mask is not None and d.shape[:2] == mask.shape:
            d = d[mask.astype(bool)]
        out[k] = float(np.max(d)) if d.size else 0.0
    return out


def make(name: str, spec: dict, root: Path) -> dict:
    """Write <case>/ and golden/<case>/ for one case; returns its oracle.json record."""
    t0 = time.time()
    tf.keras.utils.set_random_seed(SEED)
    torch.manual_seed(0)
    config = getattr(transformers, spec["config_class"])(**copy.deepcopy(spec["config"]))  # some pop keys
    tf_model = getattr(transformers, spec["tf_class"])(config)
    inputs = inputs_for(spec, config)
    run_tf(tf_model, inputs, spec)  # builds every weight
    n_set = randomize(tf_model)
    tf_out = run_tf(tf_model, inputs, spec)
    src = root / name
    src.mkdir(parents=True, exist_ok=True)
    for old in src.iterdir():
        old.unlink()
    tf_model.save_pretrained(str(src))
    if spec.get("tokenizer"):
        save_tokenizer(spec["tokenizer"], src, config)

    record: dict = {"case": name, "dir": name, "model_type": spec["model_type"], "tf_class": spec["tf_class"],
                    "pt_class": spec["pt_class"], "task": spec["task"],
                    "versions": {"transformers": transformers.__version__, "tensorflow": tf.__version__,
                                 "torch": torch.__version__}, "tf_weights_randomized": n_set}
    # transformers 4.57.6's from_pretrained(from_tf=True) builds the model on the meta device and then loads with
    # load_state_dict (no assign): every parameter stays on "meta". So the oracle does what it calls itself:
    # the PyTorch class built from the saved config.json, then load_tf2_checkpoint_in_pytorch_model on the h5.
    pt_class = getattr(transformers, spec["pt_class"])
    torch.manual_seed(0)
    pt_model = pt_class(pt_class.config_class.from_pretrained(str(src)))
    initial = {k: v.detach().clone() for k, v in pt_model.state_dict().items()}
    handler = _Messages()
    hf_logger = logging.getLogger("transformers")
    hf_logger.addHandler(handler)
    transformers.logging.set_verbosity_info()
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            pt_model, info = load_tf2_checkpoint_in_pytorch_model(
                pt_model, str(src / "tf_model.h5"), allow_missing_keys=True, output_loading_info=True)
            if spec.get("components"):
                comp = load_components(pt_model, src, spec)
                record["generic_path_missing_keys"] = len(info["missing_keys"])
                record["oracle"] = ("generic load_tf2_checkpoint_in_pytorch_model (top-level weights), then each of "
                                    f"{spec['components']} as EncoderDecoderModel.from_pretrained(from_tf=True) "
                                    "does it")
                prefixes = tuple(f"{c}." for c in spec["components"])
                info = {"missing_keys": [k for k in info["missing_keys"] if not k.startswith(prefixes)]
                        + comp["missing_keys"], "unexpected_keys": info["unexpected_keys"] + comp["unexpected_keys"]}
    finally:
        hf_logger.removeHandler(handler)
        transformers.logging.set_verbosity_warning()
    pt_model.eval()
    record["from_tf_missing_keys"] = sorted(info.get("missing_keys", [])) if info else None
    record["from_tf_unexpected_keys"] = sorted(info.get("unexpected_keys", [])) if info else None
    keep = ("not used", "not initialized", "not loaded", "newly initialized", "Skipping")
    record["from_tf_messages"] = sorted({ln if len(ln) < 600 else ln[:600] + " ..." for ln in
                                         handler.lines + stdout.getvalue().splitlines() if any(k in ln for k in keep)})
    state = pt_model.state_dict()
    arrays = h5_weights(src / "tf_model.h5")
    record["h5_datasets"] = len(arrays)
    record["state_dict_keys"] = len(state)
    record["sources"], record["h5_weights_not_in_state_dict"] = trace_sources(state, arrays)
    record["untouched"] = sorted(k for k, v in state.items() if v.dtype.is_floating_point and v.numel()
                                 and torch.equal(v, initial[k]))
    record["no_h5_source"] = sorted(k for k, v in record["sources"].items()
                                    if v == "-" and state[k].dtype.is_floating_point)
    pt_out = run_pt(pt_model, inputs, spec)
    record["pt_vs_tf_max_abs_diff"] = diff(pt_out, tf_out)
    if "attention_mask" in inputs:
        record["pt_vs_tf_max_abs_diff_unpadded"] = diff(pt_out, tf_out, inputs["attention_mask"])
    d = root / "golden" / name
    d.mkdir(parents=True, exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(d / "model.safetensors"),
              metadata={"format": "pt"})
    pt_model.config.to_json_file(str(d / "config.json"))
    np.savez(d / "inputs.npz", **inputs)
    np.savez(d / "outputs.npz", **pt_out)
    np.savez(d / "tf_outputs.npz", **tf_out)
    (d / "oracle.json").write_text(json.dumps(record, indent=2) + "\n")
    record["seconds"] = round(time.time() - t0, 1)  # printed, not written: the files are deterministic
    return record


def write_cases(root: Path, done: dict[str, dict]) -> None:
    """cases.json: every case made (kept from earlier runs when only some cases were remade)."""
    path = root / "cases.json"
    cases = json.loads(path.read_text()) if path.exists() else {}
    for name in done:
        spec = CASES[name]
        cases[name] = {"dir": name, "golden": f"golden/{name}", "tf_class": spec["tf_class"],
                       "pt_class": spec["pt_class"], "model_type": spec["model_type"], "task": spec["task"],
                       "inputs": spec["inputs"], "config_class": spec["config_class"],
                       "tokenizer": spec.get("tokenizer")}
    order = [n for n in CASES if n in cases] + sorted(n for n in cases if n not in CASES)
    path.write_text("{\n" + ",\n".join(f"  {json.dumps(n)}: {json.dumps(cases[n])}" for n in order) + "\n}\n")


def table(root: Path) -> str:
    """The README's table of cases, from cases.json and each golden oracle.json."""
    rows = ["| case | TF class | PT class | tensors | from_tf missing | from_tf unexpected | untouched | "
            "h5 weights unused | max abs PT-TF (unpadded) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, c in json.loads((root / "cases.json").read_text()).items():
        r = json.loads((root / c["golden"] / "oracle.json").read_text())
        diffs = r.get("pt_vs_tf_max_abs_diff_unpadded", r["pt_vs_tf_max_abs_diff"])
        worst = max([v for v in diffs.values() if isinstance(v, float)], default=0.0)

        def cell(keys: list[str]) -> str:
            shown = ", ".join(f"`{k}`" for k in keys[:3]) or "-"
            return f"{len(keys)}: {shown}, ..." if len(keys) > 3 else shown
        rows.append(f"| `{name}` | {c['tf_class']} | {c['pt_class']} | {r['state_dict_keys']} | "
                    f"{cell(r['from_tf_missing_keys'])} | {cell(r['from_tf_unexpected_keys'])} | "
                    f"{cell(r['untouched'])} | {cell(r['h5_weights_not_in_state_dict'])} | {worst:.1e} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all in zoo_cases.py)")
    parser.add_argument("--out", type=Path, default=ROOT)
    parser.add_argument("--keep-going", action="store_true", help="report a failing case and go on")
    parser.add_argument("--table", action="store_true", help="print the README's table of cases and exit")
    args = parser.parse_args()
    if args.table:
        print(table(args.out))
        return
    torch.set_num_threads(1)
    done: dict[str, dict] = {}
    for name in args.cases or list(CASES):
        try:
            rec = make(name, CASES[name], args.out)
        except Exception as exc:  # a TF class that does not build is reported, not hidden
            if not args.keep_going:
                raise
            print(f"{name}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            continue
        done[name] = rec
        diffs = rec.get("pt_vs_tf_max_abs_diff_unpadded", rec["pt_vs_tf_max_abs_diff"])
        worst = max([v for v in diffs.values() if isinstance(v, float)], default=None)
        print(f"{name}: {rec['state_dict_keys']} tensors, missing {len(rec['from_tf_missing_keys'] or [])}, "
              f"unexpected {len(rec['from_tf_unexpected_keys'] or [])}, untouched {len(rec['untouched'])}, "
              f"no source {len(rec['no_h5_source'])}, "
              f"h5 unused {len(rec['h5_weights_not_in_state_dict'])}, max|PT-TF| {worst}, {rec['seconds']} s",
              flush=True)
    write_cases(args.out, done)


if __name__ == "__main__":
    main()
