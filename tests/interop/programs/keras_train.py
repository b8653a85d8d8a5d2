"""Keras training for the optimizer resume tests: ``python keras_train.py jobs.json``.

Runs under tf-keras (``TF_USE_LEGACY_KERAS=1``; ``flavor`` ``legacy`` for ``optimizers.legacy``,
``current`` for ``optimizers``) or Keras 3 (``flavor`` ``keras3``). Each job builds
``Sequential([Dense(3)])`` on 4 inputs (initial values from data.npz), the loss
``mean((model(x) - y)^2)`` and one optimizer with its variables created, then:
- ``template``: writes the program's checkpoint before training (``kind`` ``checkpoint``:
  ``tf.train.Checkpoint(model=, optimizer=)``; ``save_weights``: the compiled model's TF-format
  ``save_weights``; ``weights.h5``: Keras 3 ``save_weights``);
- ``train``: N steps, save at ``ckpt``, M more steps, dump; ``resume``: restore ``ckpt``, M steps, dump.
Dumps are ``.npz``: ``var:<layer>/<weight>``, ``slot:<weight>:<slot>`` (legacy), ``opt:<optimizer
variable name>`` (current, Keras 3) and ``step``.
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

KERAS3 = os.environ.get("TF_USE_LEGACY_KERAS") != "1"
if KERAS3:
    import keras
else:
    import tf_keras as keras

SETTINGS = {
    "momentum": ("SGD", dict(learning_rate=0.05, momentum=0.9)),
    "adam": ("Adam", dict(learning_rate=0.01, epsilon=1e-7)),
    "adagrad": ("Adagrad", dict(learning_rate=0.1, initial_accumulator_value=0.1, epsilon=1e-7)),
    "rmsprop": ("RMSprop", dict(learning_rate=0.01, rho=0.9, momentum=0.5, epsilon=1e-7)),
    "ftrl": ("Ftrl", dict(learning_rate=0.1)),
    "adadelta": ("Adadelta", dict(learning_rate=1.0, rho=0.95, epsilon=1e-7)),
    "nadam": ("Nadam", dict(learning_rate=0.01)),
}


def optimizer(job):
    cls, kwargs = SETTINGS[job["optimizer"]]
    module = keras.optimizers.legacy if job["flavor"] == "legacy" else keras.optimizers
    return getattr(module, cls)(**kwargs)


def build(job, data):
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(3, kernel_initializer=keras.initializers.Constant(data["kernel"]),
                                                 bias_initializer=keras.initializers.Constant(data["bias"]))])
    model.build((None, 4))
    opt = optimizer(job)
    if job["kind"] != "checkpoint":
        model.compile(optimizer=opt, loss="mse")
    if job["flavor"] == "legacy":
        opt._create_all_weights(model.trainable_variables)
    else:
        opt.build(model.trainable_variables)
    return model, opt


def step(model, opt, data):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(data["x"]) - data["y"]))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))


def save(job, model, opt, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if job["kind"] == "checkpoint":
        tf.train.Checkpoint(model=model, optimizer=opt).write(path)
    else:
        model.save_weights(path)


def restore(job, model, opt, path):
    if job["kind"] == "checkpoint":
        tf.train.Checkpoint(model=model, optimizer=opt).read(path).assert_existing_objects_matched()
    elif KERAS3:
        model.load_weights(path)
    else:
        model.load_weights(path).assert_existing_objects_matched()


def weight_name(model, v):
    name = v.name.split(":")[0]
    return f"{model.layers[0].name}/{name}" if KERAS3 else name


def dump(job, model, opt, out):
    values = {"step": np.asarray(opt.iterations.numpy())}
    for v in model.trainable_variables:
        values[f"var:{weight_name(model, v)}"] = v.numpy()
    if job["flavor"] == "legacy":
        for v in model.trainable_variables:
            for slot in opt.get_slot_names():
                values[f"slot:{weight_name(model, v)}:{slot}"] = opt.get_slot(v, slot).numpy()
    else:
        for v in opt.variables if KERAS3 else opt.variables():
            name = (v.path if KERAS3 else v.name).split(":")[0]
            values[f"opt:{name}"] = np.asarray(v.numpy())
    np.savez(out, **values)


def run(job, data):
    model, opt = build(job, data)
    if job["mode"] == "template":
        save(job, model, opt, job["path"])
        return
    if job["mode"] == "train":
        for _ in range(job["n"]):
            step(model, opt, data)
        save(job, model, opt, job["ckpt"])
    else:
        restore(job, model, opt, job["ckpt"])
    for _ in range(job["m"]):
        step(model, opt, data)
    dump(job, model, opt, job["out"])


def main():
    jobs = json.load(open(sys.argv[1]))
    data = dict(np.load(jobs["data"]))
    results = {}
    for job in jobs["jobs"]:
        try:
            run(job, data)
            results[job.get("out") or job.get("path")] = "ok"
        except Exception as exc:  # reported per job: one failure must not hide the others
            results[job.get("out") or job.get("path")] = f"{type(exc).__name__}: {str(exc)[:500]}"
    print(json.dumps(results))


main()
