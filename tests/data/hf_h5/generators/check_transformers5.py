"""How transformers 5 takes each golden directory of tests/data/hf_h5 as it is (an information report, not the oracle).

    /work/venv/bin/python tests/data/hf_h5/generators/check_transformers5.py [case ...] [--json PATH]

(any venv with transformers 5, torch and numpy). For each case: `<PT class>.from_pretrained(golden/<case>)` (the
golden model.safetensors + config.json, i.e. the transformers 4.x state dict), with its loading info; every
golden tensor compared with the loaded model's tensor of the same name; the eval-mode outputs on inputs.npz
compared with outputs.npz (over the positions attention_mask keeps). Prints one line a case; --json writes the
details.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def flatten(result, prefix: str = "") -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    items = result.items() if hasattr(result, "items") else enumerate(result)
    for key, val in items:
        name = f"{prefix}{key}"
        if isinstance(val, torch.Tensor):
            out[name] = val.detach().numpy()
        elif isinstance(val, (tuple, list)) or hasattr(val, "items"):
            out.update(flatten(val, name + "."))
    return out


def check(name: str, case: dict) -> dict:
    gold = ROOT / case["golden"]
    from zoo_cases import CASES  # the call arguments of the generator

    spec = CASES[name]
    rec: dict = {"case": name}
    cls = getattr(transformers, case["pt_class"], None)
    if cls is None:
        return {**rec, "error": f"no {case['pt_class']} in transformers {transformers.__version__}"}
    try:
        model, info = cls.from_pretrained(str(gold), output_loading_info=True)
    except Exception as exc:  # reported
        return {**rec, "error": f"from_pretrained: {type(exc).__name__}: {str(exc)[:300]}"}
    model.eval()
    rec["missing_keys"] = sorted(info.get("missing_keys", []))
    rec["unexpected_keys"] = sorted(info.get("unexpected_keys", []))
    rec["mismatched_keys"] = [list(map(str, m)) for m in info.get("mismatched_keys", [])]
    golden = load_file(str(gold / "model.safetensors"))
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    rec["golden_keys_not_in_model"] = sorted(k for k in golden if k not in state)
    rec["model_keys_not_in_golden"] = sorted(k for k in state if k not in golden)
    rec["tensors_differing"] = sorted(k for k in golden if k in state and not (
        golden[k].shape == state[k].shape and np.array_equal(golden[k], state[k])))
    inputs = dict(np.load(gold / "inputs.npz"))
    kwargs = {k: torch.from_numpy(v.astype(np.int64) if v.dtype == np.int32 else v) for k, v in inputs.items()}
    kwargs["output_hidden_states"] = True
    if spec["inputs"] in ("causal", "seq2seq", "speech2seq"):
        kwargs["use_cache"] = False
    kwargs.update(spec.get("call", {}))
    try:
        with torch.no_grad():
            out = flatten(model(**kwargs))
    except Exception as exc:  # reported
        return {**rec, "error": f"forward: {type(exc).__name__}: {str(exc)[:300]}"}
    expected = dict(np.load(gold / "outputs.npz"))
    diffs = {}
    for k, v in expected.items():
        if k not in out:
            diffs[k] = "absent"
        elif out[k].shape != v.shape:
            diffs[k] = f"shape {list(out[k].shape)} vs {list(v.shape)}"
        else:
            d = np.abs(out[k].astype(np.float64) - v)
            mask = inputs.get("attention_mask")
            if mask is not None and d.shape[:2] == mask.shape:  # padded positions hold each version's own
                d = d[mask.astype(bool)]
            diffs[k] = float(np.max(d)) if d.size else 0.0
    rec["output_max_abs_diff"] = diffs
    return rec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.manual_seed(0)
    cases = json.loads((ROOT / "cases.json").read_text())
    results = {}
    for name in args.cases or list(cases):
        rec = check(name, cases[name])
        results[name] = rec
        if "error" in rec:
            print(f"{name}: ERROR {rec['error']}", flush=True)
            continue
        nums = [v for v in rec["output_max_abs_diff"].values() if isinstance(v, float)]
        other = [f"{k}: {v}" for k, v in rec["output_max_abs_diff"].items() if not isinstance(v, float)]
        print(f"{name}: missing {len(rec['missing_keys'])} unexpected {len(rec['unexpected_keys'])} "
              f"golden-not-in-model {len(rec['golden_keys_not_in_model'])} "
              f"model-not-in-golden {len(rec['model_keys_not_in_golden'])} "
              f"differing {len(rec['tensors_differing'])} max|out-golden| {max(nums, default=None)} "
              f"{'; '.join(other[:3])}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
