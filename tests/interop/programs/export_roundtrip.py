"""TensorFlow's side of tests/interop/test_export_roundtrip_tf.py: write an object-based checkpoint, and restore one
into a fresh program the way its users do.

``python export_roundtrip.py write DIR``: a two-layer Dense model trained 3 steps with Adam, saved by
``tf.train.Checkpoint(model=, optimizer=)`` under ``DIR/src/ckpt``; prints the prefix.
``python export_roundtrip.py resume OUT.npz PREFIX...``: for each prefix a fresh model and optimizer, restored
before any step (TensorFlow's deferred restoration; ``train``) and again after one step (``built``), trained 5
steps, then ``assert_consumed()``; and a fresh model alone restored with ``tf.train.Checkpoint(model=)``
(``expect_partial``). Saves every variable after training (``train:<prefix>:<i>``, ``built:...``), the model-only
restore's (``model:<prefix>:<i>``) and each status (``status-train:<prefix>``, ``status-built:...``: ``ok`` or
the assertion's first line).

The framework is whichever ``tf.keras`` the environment gives (``TF_USE_LEGACY_KERAS=1``: tf-keras, whose legacy
optimizer keeps TensorFlow's slot variables, ``.OPTIMIZER_SLOT``; else Keras 3).
"""
from __future__ import annotations

import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 4)).astype("float32")
Y = RNG.normal(size=(16, 2)).astype("float32")


def make() -> tuple:
    """A fresh model (built) and optimizer."""
    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="relu"), tf.keras.layers.Dense(2)])
    model.build((None, 4))
    optimizer = tf.keras.optimizers.legacy.Adam(0.01) if LEGACY else tf.keras.optimizers.Adam(0.01)
    return model, optimizer


def step(model: object, optimizer: object) -> None:
    """One step of mean squared error."""
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(X) - Y) ** 2)  # type: ignore[operator]
    grads = tape.gradient(loss, model.trainable_variables)  # type: ignore[attr-defined]
    optimizer.apply_gradients(zip(grads, model.trainable_variables))  # type: ignore[attr-defined]


def write(directory: str) -> None:
    model, optimizer = make()
    for _ in range(3):
        step(model, optimizer)
    print(tf.train.Checkpoint(model=model, optimizer=optimizer).save(os.path.join(directory, "src", "ckpt")))


def _trained(prefix: str, built: bool, dump: dict[str, np.ndarray], kind: str) -> None:
    """Restore ``prefix`` into a fresh model and optimizer (``built``: after one step has made the optimizer's
    variables, which the restore then overwrites; else before any step), train 5 steps, dump the variables."""
    model, optimizer = make()
    if built:
        step(model, optimizer)
    status = tf.train.Checkpoint(model=model, optimizer=optimizer).restore(prefix)
    for _ in range(5):
        step(model, optimizer)
    try:
        status.assert_consumed()
        dump[f"status-{kind}:{prefix}"] = np.array("ok")
    except AssertionError as exc:
        dump[f"status-{kind}:{prefix}"] = np.array(str(exc).splitlines()[0])
    # (the optimizer's variables by shape and value: the order they are made in may differ from one restore to
    # another, and their names carry each fresh model's layer numbers)
    variables = optimizer.variables() if LEGACY else optimizer.variables
    named = sorted(variables, key=lambda v: (tuple(v.shape), str(v.dtype), v.numpy().tobytes()))
    for i, v in enumerate(model.variables + named):
        dump[f"{kind}:{prefix}:{i}"] = v.numpy()


def resume(out: str, prefixes: list[str]) -> None:
    dump: dict[str, np.ndarray] = {}
    for prefix in prefixes:
        _trained(prefix, False, dump, "train")
        _trained(prefix, True, dump, "built")
        alone, _ = make()
        tf.train.Checkpoint(model=alone).restore(prefix).expect_partial()
        for i, v in enumerate(alone.variables):
            dump[f"model:{prefix}:{i}"] = v.numpy()
    np.savez(out, **dump)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        resume(sys.argv[2], sys.argv[3:])
