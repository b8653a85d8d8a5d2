"""The zoo of tests/interop/test_keras3_zoo.py: real models built the same way by tf-keras (Keras 2) and Keras 3.

Each model is one function taking the ``keras`` module (``tf_keras`` under ``TF_USE_LEGACY_KERAS=1``, or Keras 3)
and returning a built model; ``ZOO`` maps the model's name to ``(builder, input shape, input kind)``. This file
imports only numpy at module level (the test module reads ``ZOO``'s names without TensorFlow), never ckpt, and
is a program too, run once per framework (one process for the whole zoo: TensorFlow's start-up costs seconds).
Each mode reports per model or per job as soon as it is done, a JSON line flushed at once, so that the harness
(``zoo_report.py``) converts a model while the next ones are still being built:

- ``python keras_zoo.py keras2 DIR [MODEL...]`` (tf-keras): builds each model, gives every weight distinct
  random values, and writes ``DIR/MODEL/k2/``: ``x.npy`` (a fixed input), ``pred.npy`` (the model's
  predictions), ``w.h5`` (``save_weights``), ``tf/ckpt`` (``save_weights``, TF format), ``full.h5``
  (``model.save``; not for the subclassed model, which tf-keras cannot save whole as .h5); then appends
  ``{"model", "error": null or the first line of the error that stopped it, "seconds"}`` to ``DIR/keras2.jsonl``.
- ``python keras_zoo.py keras3 DIR [MODEL...]`` (Keras 3): builds each model and writes the templates
  ``DIR/MODEL/k3/t.weights.h5`` (``save_weights``) and ``t.keras`` (``model.save``); ``DIR/keras3.jsonl`` as above.
- ``python keras_zoo.py load DIR JOBS OUT`` (Keras 3): follows JOBS, JSON lines ``{"id", "model", "weights"}``
  appended by another process until a ``null`` line, grouped by model. For each, a model of that architecture
  (built once per group) has every variable set to a sentinel (NaN, or ``INT_SENTINEL``), loads ``weights``
  with ``model.load_weights`` and predicts on ``x.npy``; a line ``{"id", "error", "warnings", "unloaded",
  "n_variables", "rel_err", "seconds"}`` goes to OUT: ``error`` the exception's first line (or null),
  ``unloaded`` the paths of variables still holding the sentinel, ``rel_err`` ``max|pred - k2 pred| /
  max|k2 pred|`` (null when there is no prediction or it is not finite).
- ``python keras_zoo.py keras3+load DIR JOBS OUT [MODEL...]`` (Keras 3): keras3 and load in the same process,
  a job loaded as soon as it comes and the next model built while none is waiting; each job is loaded into the
  model whose templates were saved (the sentinels make it as good as a fresh one), kept until the jobs move on to
  the next model.

The builders build model *i* (counting from 0 in the order given) only once ``DIR/allowed`` (a number the harness
writes, replaced whole) is above *i*: the harness lets them run a few models ahead of the loads and removes a
model's files once they are loaded, so the zoo's disk stays at a few models' worth (all of it is 7.8 GB). With no
``DIR/allowed`` they build every model at once.

Every model leaves layer names automatic except where keras.applications names them; ``keras.backend.
clear_session()`` before each build gives each model the automatic names a fresh process would.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

INT_SENTINEL = -987654321
BATCH = 2
SOURCES = {"h5": "w.h5", "tf": "tf/ckpt", "full": "full.h5"}  # tag -> the Keras 2 file under MODEL/k2/
TEMPLATES = {"weights": "t.weights.h5", "keras": "t.keras"}  # tag -> the Keras 3 template under MODEL/k3/
NO_FULL_H5 = {"subclassed": "tf-keras cannot save a subclassed model whole as .h5 (model.save raises)"}


def _app(name: str, size: int, **kwargs: Any) -> Callable[[Any], Any]:
    def build(keras: Any) -> Any:
        return getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), classes=10,
                                                 classifier_activation=None, **kwargs)
    build.__name__ = name
    return build


def _legacy(keras: Any) -> bool:
    return keras.__name__.split(".")[0] == "tf_keras"


def rnn(keras: Any) -> Any:
    """Embedding + Bidirectional(LSTM) + GRU + Dense."""
    inp = keras.Input((12,), dtype="int32")
    x = keras.layers.Embedding(50, 8)(inp)
    x = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(x)
    x = keras.layers.GRU(8)(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))


def norms(keras: Any) -> Any:
    """BatchNormalization(scale=False) + LayerNormalization + Dense."""
    inp = keras.Input((8,))
    x = keras.layers.Dense(16)(inp)
    x = keras.layers.BatchNormalization(scale=False)(x)
    x = keras.layers.LayerNormalization()(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))


def attention(keras: Any) -> Any:
    """MultiHeadAttention: self-attention on a sequence, then Dense."""
    inp = keras.Input((6, 16))
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(inp, inp)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))


def conv2d(keras: Any) -> Any:
    """DepthwiseConv2D, SeparableConv2D, Conv2DTranspose."""
    inp = keras.Input((12, 12, 3))
    x = keras.layers.DepthwiseConv2D(3, depth_multiplier=2)(inp)
    x = keras.layers.SeparableConv2D(8, 3, activation="relu")(x)
    x = keras.layers.Conv2DTranspose(4, 3, strides=2)(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))


def conv1d(keras: Any) -> Any:
    """Conv1D (two, the second dilated)."""
    inp = keras.Input((20, 4))
    x = keras.layers.Conv1D(8, 3, activation="relu")(inp)
    x = keras.layers.Conv1D(8, 3, dilation_rate=2)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))


def nested(keras: Any) -> Any:
    """A functional model holding a Sequential that holds a Sequential."""
    inner = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(8)])
    outer = keras.Sequential([inner, keras.layers.Dense(6, activation="tanh")])
    inp = keras.Input((5,))
    x = keras.layers.Dense(8)(inp)
    return keras.Model(inp, keras.layers.Dense(3)(outer(x)))


def subclassed(keras: Any) -> Any:
    """A subclassed model with its layers in a list and in a dict."""
    class Blocks(keras.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.blocks = [keras.layers.Dense(8, activation="relu"), keras.layers.Dense(8, activation="tanh")]
            self.heads = {"left": keras.layers.Dense(3), "right": keras.layers.Dense(3)}

        def call(self, x: Any) -> Any:
            for block in self.blocks:
                x = block(x)
            return self.heads["left"](x) * self.heads["right"](x)

    model = Blocks()
    model(np.zeros((1, 6), "float32"))
    return model


def shared(keras: Any) -> Any:
    """One Dense layer applied three times."""
    inp = keras.Input((8,))
    layer = keras.layers.Dense(8, activation="tanh")
    return keras.Model(inp, keras.layers.Dense(2)(layer(layer(layer(inp)))))


def custom(keras: Any) -> Any:
    """A custom layer with a float and an int64 non-trainable weight."""
    cast = keras.backend.cast if _legacy(keras) else keras.ops.cast

    class Shift(keras.layers.Layer):
        def build(self, input_shape: Any) -> None:
            self.scale = self.add_weight(name="scale", shape=(input_shape[-1],), initializer="ones",
                                         trainable=False)
            self.offset = self.add_weight(name="offset", shape=(), dtype="int64", initializer="zeros",
                                          trainable=False)
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return x * self.scale + cast(self.offset, x.dtype)

    inp = keras.Input((6,))
    x = Shift()(keras.layers.Dense(6)(inp))
    return keras.Model(inp, keras.layers.Dense(3)(x))


def renamed(keras: Any) -> Any:
    """Unnamed Dense layers: dense_3, dense_4, dense_5 under tf-keras (a throwaway model took dense to
    dense_2 first), dense, dense_1, dense_2 under Keras 3."""
    if _legacy(keras):
        keras.Sequential([keras.Input((3,))] + [keras.layers.Dense(2) for _ in range(3)])
    inp = keras.Input((4,))
    x = keras.layers.Dense(8, activation="relu")(inp)
    x = keras.layers.Dense(8, activation="relu")(x)
    return keras.Model(inp, keras.layers.Dense(3)(x))


# name -> (builder, input shape without the batch, input kind: "float" in [-1, 1], "pixels" in [0, 255] for the
# applications that rescale their input themselves, or "int<N>" for tokens in [0, N))
ZOO: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], str]] = {
    "MobileNet": (_app("MobileNet", 32), (32, 32, 3), "float"),
    "MobileNetV2": (_app("MobileNetV2", 32), (32, 32, 3), "float"),
    "MobileNetV3Small": (_app("MobileNetV3Small", 32), (32, 32, 3), "pixels"),
    "MobileNetV3Large": (_app("MobileNetV3Large", 32), (32, 32, 3), "pixels"),
    "ResNet50": (_app("ResNet50", 32), (32, 32, 3), "float"),
    "ResNet50V2": (_app("ResNet50V2", 32), (32, 32, 3), "float"),
    "DenseNet121": (_app("DenseNet121", 32), (32, 32, 3), "float"),
    "EfficientNetB0": (_app("EfficientNetB0", 32), (32, 32, 3), "pixels"),
    "EfficientNetV2B0": (_app("EfficientNetV2B0", 32), (32, 32, 3), "pixels"),
    "InceptionV3": (_app("InceptionV3", 75), (75, 75, 3), "float"),
    "Xception": (_app("Xception", 71), (71, 71, 3), "float"),
    "VGG16": (_app("VGG16", 32), (32, 32, 3), "float"),
    "NASNetMobile": (_app("NASNetMobile", 32), (32, 32, 3), "float"),
    "ConvNeXtTiny": (_app("ConvNeXtTiny", 32), (32, 32, 3), "pixels"),
    "rnn": (rnn, (12,), "int50"),
    "norms": (norms, (8,), "float"),
    "attention": (attention, (6, 16), "float"),
    "conv2d": (conv2d, (12, 12, 3), "float"),
    "conv1d": (conv1d, (20, 4), "float"),
    "nested": (nested, (5,), "float"),
    "subclassed": (subclassed, (6,), "float"),
    "shared": (shared, (8,), "float"),
    "custom": (custom, (6,), "float"),
    "renamed": (renamed, (4,), "float"),
}


def sources(model: str) -> list[str]:
    """The Keras 2 source tags saved for a model."""
    return [tag for tag in SOURCES if not (tag == "full" and model in NO_FULL_H5)]


def sample_input(model: str) -> np.ndarray:
    """The model's fixed input batch."""
    _, shape, kind = ZOO[model]
    rng = np.random.default_rng(sorted(ZOO).index(model))
    if kind.startswith("int"):
        return rng.integers(0, int(kind[3:]), size=(BATCH, *shape)).astype("int32")
    low, high = (0.0, 255.0) if kind == "pixels" else (-1.0, 1.0)
    return rng.uniform(low, high, size=(BATCH, *shape)).astype("float32")


# Kernels are N(0, gain/fan_in). The gain trades two things: the larger, the more the input (and any weight
# misplaced early) shows in a deep model's outputs, and the more float32 rounding grows through its layers, so
# that Keras 3 and tf-keras, running the same weights, drift apart. 1.5 keeps every model's input effect above
# 5e-3 and Keras 3's own legacy loader within 3e-6 of tf-keras (2 left EfficientNetV2B0 at 1e-5, 1 left
# MobileNet at 8e-5 of input effect); EfficientNetB0, its signal halved by every squeeze-excite gate, needs 2.5.
KERNEL_GAIN = {"EfficientNetB0": 2.5}
DEFAULT_GAIN = 1.5


def random_value(name: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator,
                 gain: float = DEFAULT_GAIN) -> np.ndarray:
    """Distinct random values for one variable (named as tf-keras names it), scaled so that the input still
    shows in the outputs of deep models (a weight misplaced early must change them): kernels
    N(0, gain/fan_in), scales (gamma, scale) and variances U(0.5, 1.5), embeddings N(0, 1), everything else
    N(0, 0.05); integers in [1, 10)."""
    if "int" in dtype:
        return rng.integers(1, 10, size=shape).astype(dtype)
    leaf = name.split("/")[-1].split(":")[0]
    if leaf.endswith("variance") or leaf in ("gamma", "scale"):
        value = rng.uniform(0.5, 1.5, size=shape)
    elif leaf == "embeddings":
        value = rng.normal(0.0, 1.0, size=shape)
    elif len(shape) >= 2:
        fan_in = int(np.prod(shape[:2] if leaf == "depthwise_kernel" else shape[:-1]))
        value = rng.normal(0.0, np.sqrt(gain / max(fan_in, 1)), size=shape)
    else:
        value = rng.normal(0.0, 0.05, size=shape)
    return value.astype(dtype)


def randomize(model: Any, seed: int, gain: float = DEFAULT_GAIN) -> None:
    """Every weight of every layer gets distinct random values (``layer.set_weights``, layer by layer)."""
    rng = np.random.default_rng(seed)
    done: set[int] = set()
    for layer in _leaf_layers(model):
        if id(layer) in done or not layer.weights:
            continue
        done.add(id(layer))
        layer.set_weights([random_value(w.name, tuple(w.shape), w.dtype.name if hasattr(w.dtype, "name")
                                        else str(w.dtype), rng, gain) for w in layer.weights])


def _leaf_layers(model: Any) -> list[Any]:
    """Layers holding weights, nested models flattened (a layer shared by several parents comes once)."""
    out = []
    for layer in getattr(model, "layers", []) or []:
        if getattr(layer, "layers", None):
            out.extend(_leaf_layers(layer))
        else:
            out.append(layer)
    covered = {id(w) for layer in out for w in layer.weights}
    if any(id(w) not in covered for w in model.weights):  # subclassed: layers in lists and dicts
        out.extend(m for m in _sublayers(model) if m not in out)
    return out


def _sublayers(model: Any) -> list[Any]:
    return [m for m in model.submodules if hasattr(m, "set_weights") and not getattr(m, "layers", None)]


def relative_error(got: np.ndarray, expected: np.ndarray) -> float | None:
    """max|got - expected| / max(max|expected|, tiny); None when not comparable or not finite."""
    if got.shape != expected.shape:
        return None
    err = float(np.max(np.abs(got.astype("float64") - expected.astype("float64"))))
    scale = max(float(np.max(np.abs(expected))), float(np.finfo("float32").tiny))
    return err / scale if np.isfinite(err) else None


def predict(model: Any, x: np.ndarray) -> np.ndarray:
    """The model's inference output, called eagerly (``model.predict`` would trace a graph per model)."""
    return np.asarray(model(x, training=False))


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _build(keras: Any, model: str) -> Any:
    keras.backend.clear_session()
    return ZOO[model][0](keras)


def _save_keras2(keras: Any, name: str, out: str) -> Any:
    model = _build(keras, name)
    randomize(model, 1000 + sorted(ZOO).index(name), KERNEL_GAIN.get(name, DEFAULT_GAIN))
    os.makedirs(os.path.join(out, "tf"), exist_ok=True)
    x = sample_input(name)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "pred.npy"), predict(model, x))
    model.save_weights(os.path.join(out, "w.h5"))
    model.save_weights(os.path.join(out, "tf", "ckpt"))
    if name not in NO_FULL_H5:
        model.save(os.path.join(out, "full.h5"))
    return model


def _save_keras3(keras: Any, name: str, out: str) -> Any:
    model = _build(keras, name)
    os.makedirs(out, exist_ok=True)
    model.save_weights(os.path.join(out, "t.weights.h5"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save(os.path.join(out, "t.keras"))
    return model


class Gate:
    """Whether the harness lets a builder build the model at a position yet: ``DIR/allowed`` holds how many it may
    have built; no such file, every model."""

    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, "allowed")

    def allows(self, position: int) -> bool:
        try:
            with open(self.path) as f:
                text = f.read()
        except FileNotFoundError:
            return True
        return not text.strip().isdigit() or position < int(text)

    def wait(self, position: int) -> None:
        while not self.allows(position):
            time.sleep(0.05)


def build_one(keras: Any, mode: str, root: str, name: str, status: Any) -> Any:
    """One model's files (keras2 or keras3 mode) and its line in the status file; the model, or None."""
    save, sub = (_save_keras2, "k2") if mode == "keras2" else (_save_keras3, "k3")
    start = time.perf_counter()
    model, error = None, None
    try:
        model = save(keras, name, os.path.join(root, name, sub))
    except Exception as exc:  # one model's failure is reported, the others still run
        traceback.print_exc()
        error = _first_line(exc)
    status.write(json.dumps({"model": name, "error": error, "seconds": time.perf_counter() - start}) + "\n")
    status.flush()
    return model


def build(keras: Any, mode: str, root: str, models: list[str]) -> None:
    """keras2 or keras3 mode: each model's files, and a line in ``DIR/MODE.jsonl`` as soon as they are written,
    each model once the harness allows it (``Gate``)."""
    gate = Gate(root)
    with open(os.path.join(root, f"{mode}.jsonl"), "w") as status:
        for position, name in enumerate(models):
            gate.wait(position)
            build_one(keras, mode, root, name, status)


def _fill_sentinel(model: Any) -> None:
    for v in model.weights:
        dtype = np.dtype(v.dtype if isinstance(v.dtype, str) else v.dtype.name)
        fill = INT_SENTINEL if dtype.kind in "iu" else np.nan
        v.assign(np.full(tuple(v.shape), fill, dtype=dtype))


def _unloaded(model: Any) -> list[str]:
    out = []
    for v in model.weights:
        value = np.asarray(v.numpy())
        if (value == INT_SENTINEL).all() if value.dtype.kind in "iu" else np.isnan(value).any():
            out.append(getattr(v, "path", v.name))
    return out


WAITING = object()  # what ``Jobs.next`` gives while no new job has come


class Jobs:
    """The JSON lines of a file another process is still appending to, one at a time as they come; ``None``
    for its closing ``null`` line."""

    def __init__(self, path: str) -> None:
        self.file = open(path)  # noqa: SIM115 - read as the other process writes, closed by close()
        self.pending = ""

    def next(self) -> Any:
        """The next job, ``None`` at the end, or ``WAITING`` when the line has not come yet."""
        self.pending += self.file.readline()
        if not self.pending.endswith("\n"):
            return WAITING
        job, self.pending = json.loads(self.pending), ""
        return job

    def close(self) -> None:
        self.file.close()


def load_one(keras: Any, root: str, model: Any, name: str, weights: str) -> dict[str, Any]:
    """Sentinels in every variable, ``model.load_weights(weights)``, predictions against the Keras 2 ones."""
    result: dict[str, Any] = {"error": None, "warnings": [], "unloaded": [], "n_variables": len(model.weights),
                              "rel_err": None}
    try:
        _fill_sentinel(model)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.load_weights(weights)
        result["warnings"] = [str(w.message).strip().splitlines()[0] for w in caught if str(w.message).strip()]
        result["unloaded"] = _unloaded(model)
        k2 = os.path.join(root, name, "k2")
        got = predict(model, np.load(os.path.join(k2, "x.npy")))
        result["rel_err"] = relative_error(got, np.load(os.path.join(k2, "pred.npy")))
    except Exception as exc:
        result["error"] = _first_line(exc)
    return result


def load(keras: Any, root: str, jobs_path: str, results_path: str, builds: list[str] | None = None) -> None:
    """load mode: each job of JOBS loaded as it comes, its result a line of OUT at once. With ``builds``
    (keras3+load mode), those models are built too (``DIR/keras3.jsonl``), one at a time whenever no job is
    waiting and the harness allows it, and each serves the jobs of its architecture; others are built when their
    first job comes. A model is kept only while its jobs last: jobs come grouped by model."""
    builds = list(builds or [])
    gate = Gate(root)
    built: dict[str, Any] = {}
    jobs = Jobs(jobs_path)
    status = open(os.path.join(root, "keras3.jsonl"), "w") if builds else None  # noqa: SIM115 - closed below
    try:
        with open(results_path, "w") as out:
            position, previous = 0, ""
            while True:
                job = jobs.next()
                if job is WAITING:
                    if status is not None and position < len(builds) and gate.allows(position):
                        model = build_one(keras, "keras3", root, builds[position], status)
                        if model is not None:
                            built[builds[position]] = model
                        position += 1
                    else:
                        time.sleep(0.05)
                    continue
                if job is None:
                    return
                start = time.perf_counter()
                name = job["model"]
                if previous != name:
                    built.pop(previous, None)  # its jobs are over: they come grouped by model
                    previous = name
                try:
                    if name not in built:
                        built[name] = _build(keras, name)
                    result = load_one(keras, root, built[name], name, job["weights"])
                except Exception as exc:
                    result = {"error": f"building the model: {_first_line(exc)}", "warnings": [], "unloaded": [],
                              "n_variables": None, "rel_err": None}
                result.update(id=job["id"], seconds=time.perf_counter() - start)
                out.write(json.dumps(result) + "\n")
                out.flush()
    finally:
        jobs.close()
        if status is not None:
            status.close()


def main(argv: list[str]) -> None:
    mode, root = argv[0], argv[1]
    keras = importlib.import_module("tf_keras" if mode == "keras2" else "keras")
    if mode == "load":
        load(keras, root, argv[2], argv[3])
    elif mode == "keras3+load":
        load(keras, root, argv[2], argv[3], argv[4:] or list(ZOO))
    else:
        build(keras, mode, root, argv[2:] or list(ZOO))


if __name__ == "__main__":
    main(sys.argv[1:])
