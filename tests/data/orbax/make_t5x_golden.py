"""The oracle for ``ckpt convert t5x/checkpoint_3 --to hf``: transformers 4.x's own T5X conversion script.

``convert_t5x_checkpoint_to_pytorch.py`` (shipped in the transformers 4.46.3 wheel, no longer in 4.57's) is run
unchanged against transformers 4.57.6 and torch: its ``load_t5x_weights_in_t5`` fills a
``T5ForConditionalGeneration`` whose config is T5 1.1's (gated GELU, untied head) at the sample's dimensions.
The script imports ``flax.traverse_util`` and ``t5x.checkpoints``; neither is installed here, so both are stood in
for: ``flatten_dict`` (flax's: a nested dict to tuple keys) and ``load_t5x_checkpoint``, which reads the sample
with this file's own small reader (msgpack for the tree and the inline arrays, the zarr v2 arrays' gzip chunks by
hand), not with ckpt and not with tensorstore. Writes ``t5x_golden/``: ``model.safetensors`` (the state dict
without the two ``embed_tokens`` aliases of ``shared.weight``, as ``save_pretrained`` stores it), ``config.json``
(the oracle's), ``io.npz`` (fixed input ids and the logits the oracle's model gives for them) and ``oracle.json``.

    PYTHONPATH=<a folder holding msgpack> /work/oracle/bin/python tests/data/orbax/make_t5x_golden.py \\
        --wheel transformers-4.46.3-py3-none-any.whl
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import itertools
import json
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

HERE = Path(__file__).resolve().parent
SCRIPT = "transformers/models/t5/convert_t5x_checkpoint_to_pytorch.py"
CHECKPOINT = HERE / "t5x" / "checkpoint_3"


def read_zarr(directory: Path) -> np.ndarray:
    """A zarr v2 array with gzip chunks, C order, '.'-separated chunk keys."""
    meta = json.loads((directory / ".zarray").read_text())
    assert meta["compressor"]["id"] == "gzip" and meta["order"] == "C" and meta["filters"] is None
    dtype, shape, chunks = np.dtype(meta["dtype"]), meta["shape"], meta["chunks"]
    out = np.zeros(shape, dtype)
    grid = [range(-(-s // c)) for s, c in zip(shape, chunks)]
    for index in itertools.product(*grid):
        raw = gzip.decompress((directory / ".".join(map(str, index))).read_bytes())
        block = np.frombuffer(raw, dtype).reshape(chunks)
        where = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))
        out[where] = block[tuple(slice(0, w.stop - w.start) for w in where)]
    return out


def _ext(code: int, data: bytes) -> Any:
    assert code == 1, code  # flax's ndarray: (shape, dtype name, bytes)
    shape, dtype, raw = msgpack.unpackb(data, raw=False)
    return np.frombuffer(raw, np.dtype(dtype)).reshape(shape)


def _leaves(node: Any) -> Any:
    if isinstance(node, dict) and "driver" in node and "kvstore" in node:
        return read_zarr(CHECKPOINT / node["kvstore"]["path"])
    if isinstance(node, dict):
        return {k: _leaves(v) for k, v in node.items()}
    return node


def load_t5x_checkpoint(path: Any) -> dict[str, Any]:
    """Stands in for ``t5x.checkpoints.load_t5x_checkpoint``: the optimizer's tree, every leaf an array."""
    top = msgpack.unpackb((Path(path) / "checkpoint").read_bytes(), raw=False, ext_hook=_ext, strict_map_key=False)
    return _leaves(top["optimizer"])


def flatten_dict(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Stands in for ``flax.traverse_util.flatten_dict``."""
    out: dict[tuple[str, ...], Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(flatten_dict(value, (*prefix, key)))
        else:
            out[(*prefix, key)] = value
    return out


def script(wheel: str) -> Any:
    flax = types.ModuleType("flax")
    flax.traverse_util = types.SimpleNamespace(flatten_dict=flatten_dict)  # type: ignore[attr-defined]
    t5x = types.ModuleType("t5x")
    t5x.checkpoints = types.SimpleNamespace(load_t5x_checkpoint=load_t5x_checkpoint)  # type: ignore[attr-defined]
    sys.modules.update({"flax": flax, "t5x": t5x})
    with zipfile.ZipFile(wheel) as whl:
        source = whl.read(SCRIPT).decode()
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("convert_t5x", loader=None))
    exec(compile(source, SCRIPT, "exec"), module.__dict__)  # noqa: S102 - the oracle itself
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", required=True, help="a transformers 4.46.3 wheel (holds the conversion script)")
    parser.add_argument("--out", type=Path, default=HERE / "t5x_golden")
    args = parser.parse_args()
    import safetensors.numpy
    import torch
    import transformers

    dims = json.loads((HERE / "goldens.json").read_text())["t5x/checkpoint_3"]["dims"]
    config = transformers.T5Config(vocab_size=dims["vocab"], d_model=dims["d_model"], d_kv=dims["d_kv"],
                                   d_ff=dims["d_ff"], num_layers=dims["layers"], num_heads=dims["heads"],
                                   feed_forward_proj="gated-gelu", tie_word_embeddings=False, dropout_rate=0.0,
                                   decoder_start_token_id=0)  # as google/t5-v1_1-*'s config.json
    model = transformers.T5ForConditionalGeneration(config).eval()
    script(args.wheel).load_t5x_weights_in_t5(model, config, str(CHECKPOINT), is_encoder_only=False)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()
             if k not in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")}
    args.out.mkdir(exist_ok=True)
    safetensors.numpy.save_file(state, str(args.out / "model.safetensors"))
    (args.out / "config.json").write_text(config.to_json_string())
    ids = np.array([[3, 7, 11, 1], [5, 2, 9, 1]], np.int64)
    labels = np.array([[0, 4, 8], [0, 6, 1]], np.int64)
    with torch.no_grad():
        logits = model(input_ids=torch.from_numpy(ids), decoder_input_ids=torch.from_numpy(labels)).logits.numpy()
    np.savez(args.out / "io.npz", input_ids=ids, decoder_input_ids=labels, logits=logits)
    (args.out / "oracle.json").write_text(json.dumps(
        {"script": SCRIPT + " (transformers 4.46.3 wheel)", "transformers": transformers.__version__,
         "torch": torch.__version__}, indent=1) + "\n")


if __name__ == "__main__":
    main()
