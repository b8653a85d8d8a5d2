"""Shared helpers of make_checkpoints.py: deterministic values and TF1 name-based saving (needs TensorFlow).

Every tensor's values come from its own generator, seeded by (family seed, crc32 of the variable name),
so a checkpoint's model weights are the same whether or not it also holds optimizer slots, and no two
tensors repeat each other's values.
"""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1

NORM_SCALES = ("gamma", "g", "scale")  # last name parts of layer-norm / rms-norm scales


def value(seed: int, name: str, shape: list[int], kind: str = "auto") -> np.ndarray:
    """Float32 values for ``name``: kernels ~ N(0, 1/fan_in), embeddings ~ N(0, 1), norm scales ~ 1 + N(0, 0.2^2),
    biases and shifts ~ N(0, 0.2^2); optimizer moments small (first ~ N(0, 0.01^2), second ~ |N| * 1e-4)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    x = rng.standard_normal(shape)
    if kind == "m":
        return (x * 1e-2).astype(np.float32)
    if kind == "v":
        return (np.abs(x) * 1e-4 + 1e-6).astype(np.float32)
    last = name.rsplit("/", 1)[-1]
    if kind == "embedding" or "embedding" in last or last in ("wte", "wpe", "relative_attention_bias"):
        return x.astype(np.float32)
    if last in NORM_SCALES:
        return (1.0 + 0.2 * x).astype(np.float32)
    if len(shape) >= 2:
        fan_in = shape[-1] if last == "output_weights" else int(np.prod(shape[:-1]))
        return (x / np.sqrt(fan_in)).astype(np.float32)
    return (0.2 * x).astype(np.float32)


def save_tf1(prefix: Path, tensors: dict[str, np.ndarray], global_step: int | None = None,
             write_checkpoint_file: bool = False) -> str:
    """Save ``tensors`` (name -> float32 array) with ``tf.compat.v1.train.Saver`` as a name-based TF1 checkpoint.

    ``global_step`` adds the int64 ``global_step`` variable (tf.train.get_or_create_global_step) holding
    that value, and names the files ``prefix-<step>``, as Estimator/TPUEstimator training does.
    Returns the prefix written. No .meta file (it would embed every initial value a second time)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with tf.Graph().as_default():
        variables = []
        for name, array in tensors.items():
            var = v1.Variable(array, name=name)
            assert var.op.name == name, (var.op.name, name)
            variables.append(var)
        step = v1.train.get_or_create_global_step() if global_step is not None else None
        saver = v1.train.Saver(max_to_keep=None, save_relative_paths=True)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            if step is not None:
                sess.run(step.assign(global_step))
            written = saver.save(sess, str(prefix), global_step=global_step, write_meta_graph=False,
                                 write_state=write_checkpoint_file)
    return written


def clean(directory: Path) -> None:
    """Remove the checkpoint files a previous run left in ``directory`` (keeps nothing else there)."""
    if directory.exists():
        for f in directory.iterdir():
            if f.is_file():
                f.unlink()
    directory.mkdir(parents=True, exist_ok=True)


def write_json(path: Path, obj: dict) -> None:
    """JSON as the original repositories write their configs: indent 2, sorted keys, trailing newline."""
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def listing(prefix: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every variable in a checkpoint, as TensorFlow lists it."""
    return [(n, list(s)) for n, s in tf.train.list_variables(prefix)]
