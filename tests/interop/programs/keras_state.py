"""Keras programs for tests/interop/test_keras_training_state_tf.py: ``python keras_state.py MODE DIR OPT``.

The model is Dense(16, relu) / BatchNormalization / Dense(1) on 8 inputs; OPT ``adam`` (Adam 0.01) or
``sgd`` (SGD 0.05, momentum 0.9). Under tf-keras (``TF_USE_LEGACY_KERAS=1``):
- ``train``: 4 steps of fit, then ``tf.train.Checkpoint(model=, optimizer=)`` saved by a CheckpointManager
  at ``DIR/k2run/tf_ckpts/ckpt-4``; dumps ``DIR/k2.npz``: ``x``, ``pred``, ``opt`` (the optimizer's
  variables in order: iterations, then the slots).
- ``load_h5``: a fresh model loads ``DIR/k2.h5`` (``load_weights``); dumps ``DIR/k2_h5.npz`` (``pred``).
Under Keras 3:
- ``template``: builds the model and its optimizer, writes ``DIR/k3/model.weights.h5`` and ``model.keras``.
- ``load``: a fresh compiled model with a built optimizer loads ``DIR/k3.weights.h5`` (``load_weights``),
  and ``keras.models.load_model`` reads ``DIR/resume.keras``; dumps ``DIR/k3.npz``: ``pred``, ``opt``
  (iteration, learning_rate, slots), ``pred_keras``, ``opt_keras``.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODE, DIR, OPT = sys.argv[1:4]
if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tensorflow as tf
    import tf_keras as keras
else:
    import keras


def model_and_optimizer():
    layers = [keras.layers.Dense(16, activation="relu"), keras.layers.BatchNormalization(), keras.layers.Dense(1)]
    model = keras.Sequential([keras.Input((8,))] + layers)
    opt = keras.optimizers.Adam(0.01) if OPT == "adam" else keras.optimizers.SGD(0.05, momentum=0.9)
    model.compile(optimizer=opt, loss="mse")
    opt.build(model.trainable_variables)
    return model, opt


def values(opt):
    return np.array([np.asarray(v.numpy()) for v in opt.variables], dtype=object)


keras.utils.set_random_seed(0)
model, opt = model_and_optimizer()
if MODE == "train":
    x = np.random.RandomState(0).rand(64, 8).astype("float32")
    model.fit(x, x.sum(1, keepdims=True), batch_size=16, epochs=1, verbose=0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model, optimizer=opt),
                                         os.path.join(DIR, "k2run", "tf_ckpts"), max_to_keep=1)
    manager.save(checkpoint_number=4)
    np.savez(os.path.join(DIR, "k2.npz"), x=x, pred=model.predict(x, verbose=0), opt=values(opt))
elif MODE == "load_h5":
    x = np.load(os.path.join(DIR, "k2.npz"), allow_pickle=True)["x"]
    model.load_weights(os.path.join(DIR, "k2.h5"))
    np.savez(os.path.join(DIR, "k2_h5.npz"), pred=model.predict(x, verbose=0))
elif MODE == "template":
    os.makedirs(os.path.join(DIR, "k3"), exist_ok=True)
    model.save_weights(os.path.join(DIR, "k3", "model.weights.h5"))
    model.save(os.path.join(DIR, "k3", "model.keras"))
elif MODE == "load":
    x = np.load(os.path.join(DIR, "k2.npz"), allow_pickle=True)["x"]
    model.load_weights(os.path.join(DIR, "k3.weights.h5"))
    whole = keras.models.load_model(os.path.join(DIR, "resume.keras"))
    np.savez(os.path.join(DIR, "k3.npz"), pred=model.predict(x, verbose=0), opt=values(opt),
             pred_keras=whole.predict(x, verbose=0), opt_keras=values(whole.optimizer))
