"""TensorFlow / Keras 3 side of tests/interop/test_tf216_guide_tf.py: one JSON job on argv, one JSON answer on stdout.

Jobs: ``read`` (TensorFlow's reader: every value of a checkpoint), ``keras3`` (a fresh guide ``Net`` compiled
with Adam, its optimizer built, ``load_weights`` of a converted file: its weights and optimizer variables),
``restore`` (the guide's ``tf.train.Checkpoint(step, optimizer, net, iterator).restore``: whether
``assert_existing_objects_matched`` passes, and which of the net's weights changed).
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402


def net_class(layers: int):
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.l1 = tf.keras.layers.Dense(5)
            if layers == 2:
                self.l2 = tf.keras.layers.Dense(5)

        def call(self, x):
            y = self.l1(x)
            return self.l2(y) if layers == 2 else y
    return Net


def main(job: dict) -> object:
    if job["kind"] == "read":
        r = tf.train.load_checkpoint(job["path"])
        out = {}
        for k, dtype in r.get_variable_to_dtype_map().items():
            if dtype not in (tf.variant, tf.string):
                out[k] = r.get_tensor(k).tolist()
        return out
    if job["kind"] == "structure":  # a program of the checkpoint's own structure: one object per path segment
        r = tf.train.load_checkpoint(job["path"])
        root = tf.train.Checkpoint()
        for key, shape in r.get_variable_to_shape_map().items():
            if not key.endswith("/.ATTRIBUTES/VARIABLE_VALUE") or ".OPTIMIZER_SLOT" in key \
                    or key.startswith(("optimizer/", "save_counter/")):
                continue
            *scopes, name = key[:-len("/.ATTRIBUTES/VARIABLE_VALUE")].split("/")
            parent = root
            for scope in scopes:
                if getattr(parent, scope, None) is None:
                    setattr(parent, scope, tf.train.Checkpoint())
                parent = getattr(parent, scope)
            setattr(parent, name, tf.Variable(tf.zeros(shape, r.get_variable_to_dtype_map()[key])))
        status = root.restore(job["path"])
        try:
            status.assert_existing_objects_matched()
            return {"matched": True}
        except AssertionError as e:
            return {"matched": False, "why": str(e)[:200]}
    net = net_class(job["layers"])()
    net(tf.zeros([1, 1]))
    if job["kind"] == "keras3":
        net.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss="mse")
        net.optimizer.build(net.trainable_variables)
        net.load_weights(job["path"])
        return {"weights": [v.numpy().tolist() for v in net.weights],
                "optimizer": [v.numpy().tolist() for v in net.optimizer.variables]}
    opt = tf.keras.optimizers.Adam(0.1)
    opt.build(net.trainable_variables)
    inputs = tf.range(10.)[:, None]
    labels = inputs * 5. + tf.range(5.)[None, :]
    iterator = iter(tf.data.Dataset.from_tensor_slices(dict(x=inputs, y=labels)).repeat().batch(2))
    before = [v.numpy().copy() for v in net.weights]
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net, iterator=iterator)
    status = ckpt.restore(job["path"])
    try:
        status.assert_existing_objects_matched()
        matched = True
    except AssertionError:
        matched = False
    status.expect_partial()
    return {"matched": matched, "changed": [bool((b != v.numpy()).any()) for b, v in zip(before, net.weights)]}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
