"""Keras 2 -> Keras 3 training resume (tests/interop/test_keras3_resume.py): ``python keras_resume.py jobs.json``.

Three models, each built the same way by both Keras versions in a fresh name scope (``clear_session``, so
layer names are what a fresh process gives): ``mlp`` (Dense 8 relu / Dense 3 on 6 inputs), ``cnn`` (two
Conv2D 4x3x3 / BatchNormalization / ReLU blocks, Flatten, Dense 3 on 8x8x2) and ``lstm`` (LSTM 4 / Dense 3
on 5x3); optimizers ``adam`` (Adam 0.01) and ``sgd`` (SGD 0.05, momentum 0.9). A step is
``mean((model(x, training=True) - y)^2)`` on the data of ``data.npz`` (``<model>:x``, ``<model>:y``),
applied with ``apply_gradients``.

Under tf-keras (``TF_USE_LEGACY_KERAS=1``), job ``train``: compile with the optimizer (so ``save_weights``
holds it too), N steps, save ``tf.train.Checkpoint(model=, optimizer=)`` at ``checkpoint`` and TF-format
``save_weights`` at ``save_weights``, dump ``state`` (the state after N steps), M more steps, dump ``after``.

Under Keras 3, job ``template``: compile (the layers ``freeze`` lists, by index, set not trainable first),
``optimizer.build(model.trainable_variables)``, then ``save_weights(weights)`` (if given) and ``save(keras)``. Job ``resume``: ``load`` ``weights.h5`` (a fresh compiled model
with its optimizer built, ``load_weights(path)``), ``keras`` (``keras.models.load_model(path)``) or ``by_hand``
(a fresh model whose weights and optimizer variables are assigned from the tf-keras dump ``path``, matched by
Keras' own variable names); ``save_weights(save)`` if given, dump ``state``, M steps, dump ``after``.

Dumps are ``.npz``: ``w:<weight name>`` for every model weight (``conv2d/kernel``), ``o:<slot>:<weight
name>`` for every slot (tf-keras names: ``m``, ``v``), ``o:iterations``, ``o:learning_rate``, plus
``warnings`` (what Keras warned while loading). The program prints one JSON line: job -> "ok" or the error.
"""
import json
import os
import sys
import warnings

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

KERAS3 = os.environ.get("TF_USE_LEGACY_KERAS") != "1"
if KERAS3:
    import keras
else:
    import tf_keras as keras

SLOTS = {"adam": {"m": "momentum", "v": "velocity"}, "sgd": {"m": "momentum"}}
"""tf-keras slot name -> Keras 3's, per optimizer (tf_keras/optimizers/adam.py, sgd.py; keras/src/optimizers)."""


def build(name):
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    L = keras.layers
    if name == "mlp":
        layers = [keras.Input((6,)), L.Dense(8, activation="relu"), L.Dense(3)]
    elif name == "cnn":
        layers = [keras.Input((8, 8, 2))]
        for _ in range(2):
            layers += [L.Conv2D(4, 3), L.BatchNormalization(), L.ReLU()]
        layers += [L.Flatten(), L.Dense(3)]
    else:
        layers = [keras.Input((5, 3)), L.LSTM(4), L.Dense(3)]
    return keras.Sequential(layers)


def optimizer(name):
    return keras.optimizers.Adam(0.01) if name == "adam" else keras.optimizers.SGD(0.05, momentum=0.9)


def compiled(job):
    model = build(job["model"])
    opt = optimizer(job["optimizer"])
    model.compile(optimizer=opt, loss="mse")
    return model, opt


def step(model, opt, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))


def weight_name(model, v):
    """``conv2d/kernel`` for tf-keras' ``conv2d/kernel:0`` and Keras 3's path ``sequential/conv2d/kernel``
    (``conv2d/kernel`` in a model ``load_model`` made): the path from the layer's name on."""
    if not KERAS3:
        return v.name.split(":")[0]
    parts = v.path.split("/")
    layers = {layer.name for layer in model.layers}
    return "/".join(parts[min(i for i, part in enumerate(parts) if part in layers):])


def slots(model, opt, job):
    """``(tf-keras slot name, weight name, optimizer variable)`` for every slot, tied by Keras' own names
    (tf-keras ``Adam/m/conv2d/kernel``, Keras 3 ``adam/sequential_conv2d_kernel_momentum``)."""
    variables = list(opt.variables)
    found = []
    for v in model.trainable_variables:
        for k2, k3 in SLOTS[job["optimizer"]].items():
            if KERAS3:
                want = f"{opt.name}/{v.path.replace('/', '_')}_{k3}"
                hits = [o for o in variables if o.path == want]
            else:
                want = f"/{k2}/{v.name}"
                hits = [o for o in variables if o.name.endswith(want)]
            assert len(hits) == 1, (want, [getattr(o, "path", o.name) for o in variables])
            found.append((k2, weight_name(model, v), hits[0]))
    return found


def dump(model, opt, job, path, caught=()):
    values = {f"w:{weight_name(model, v)}": v.numpy() for v in model.weights}
    values.update({f"o:{k2}:{name}": var.numpy() for k2, name, var in slots(model, opt, job)})
    values["o:iterations"] = np.asarray(opt.iterations.numpy())
    values["o:learning_rate"] = np.asarray(opt.learning_rate.numpy())
    values["warnings"] = np.asarray([str(w.message) for w in caught] or [""])
    values["optimizer_variables"] = np.asarray(len(opt.variables))
    np.savez(path, **values)


def train(job, data):
    model, opt = compiled(job)
    x, y = data[f"{job['model']}:x"], data[f"{job['model']}:y"]
    for _ in range(job["n"]):
        step(model, opt, x, y)
    tf.train.Checkpoint(model=model, optimizer=opt).write(job["checkpoint"])
    model.save_weights(job["save_weights"])
    dump(model, opt, job, job["state"])
    for _ in range(job["m"]):
        step(model, opt, x, y)
    dump(model, opt, job, job["after"])


def template(job, data):
    model = build(job["model"])
    for index in job.get("freeze", ()):
        model.layers[index].trainable = False
    opt = optimizer(job["optimizer"])
    model.compile(optimizer=opt, loss="mse")
    opt.build(model.trainable_variables)
    if job.get("weights"):
        model.save_weights(job["weights"])
    model.save(job["keras"])


def by_hand(job, model, opt):
    """Every weight and optimizer variable assigned from the tf-keras dump, matched by Keras' names."""
    state = np.load(job["path"])
    for v in model.weights:
        v.assign(state[f"w:{weight_name(model, v)}"])
    opt.build(model.trainable_variables)
    for k2, name, var in slots(model, opt, job):
        var.assign(state[f"o:{k2}:{name}"])
    opt.iterations.assign(state["o:iterations"])


def resume(job, data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if job["load"] == "keras":
            keras.backend.clear_session()
            model = keras.models.load_model(job["path"])
            opt = model.optimizer
        else:
            model, opt = compiled(job)
            if job["load"] == "weights.h5":
                opt.build(model.trainable_variables)
                model.load_weights(job["path"])
            else:
                by_hand(job, model, opt)
    if job.get("save"):
        model.save_weights(job["save"])
    dump(model, opt, job, job["state"], caught)
    x, y = data[f"{job['model']}:x"], data[f"{job['model']}:y"]
    for _ in range(job["m"]):
        step(model, opt, x, y)
    dump(model, opt, job, job["after"])


def main():
    spec = json.load(open(sys.argv[1]))
    data = dict(np.load(spec["data"]))
    results = {}
    for job in spec["jobs"]:
        try:
            {"train": train, "template": template, "resume": resume}[job["mode"]](job, data)
            results[job["id"]] = "ok"
        except Exception as exc:  # reported per job: one failure must not hide the others
            results[job["id"]] = f"{type(exc).__name__}: {str(exc)[:500]}"
    print(json.dumps(results))


main()
