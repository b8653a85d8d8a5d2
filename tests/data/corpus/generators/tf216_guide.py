"""Generate ``tests/data/corpus/tf216_guide/``: the Training-checkpoints guide's program on TensorFlow >= 2.16,
where ``tf.keras`` is Keras 3 (issue 36, section 3).

    python tests/data/corpus/generators/tf216_guide.py OUT_DIR

The program is the guide's, step by step: a ``tf.keras.Model`` subclass ``Net`` (``self.l1 = Dense(5)``; with
``LAYERS=2`` a second ``self.l2 = Dense(5)`` too), ``net.save_weights`` once, then - as the guide's "Restore and
continue training" section does - a new ``Net()`` (so Keras 3 names it ``net_1``), ``Adam(0.1)``, a dataset
iterator, ``tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net, iterator=iterator)`` and a
``CheckpointManager(..., max_to_keep=3)``, trained 50 steps twice (``train_and_checkpoint``), saving every 10.

Keras 3 names a variable ``<model>/<variable>`` (the layer's own name is not in it): every ``Dense`` kernel of
``Net`` is ``net_1/kernel``. What this writes into OUT_DIR:

- ``guide/tf_ckpts/``: the manager's directory (``checkpoint`` and ``ckpt-8``..``ckpt-10``): one Dense layer;
- ``two_dense/tf_ckpts/``: the same with two Dense layers (``l1``, ``l2``): two tensors named ``net_1/kernel``;
- ``*/easy_checkpoint.weights.h5``: the guide's ``net.save_weights`` (Keras 3: weights only, of the first Net);
- ``*/template.weights.h5``: a Keras 3 template for ``convert --to keras3-h5``: a fresh ``Net`` compiled with
  ``Adam(0.1)`` whose optimizer is built, ``save_weights`` (weights and optimizer variables);
- ``*/moved/``: a checkpoint of the same program with the layer held as ``self.dense`` rather than ``self.l1``
  (the same full names, other object paths: ``tf.train.Checkpoint.restore`` into the guide's Net binds none of
  its layer's variables);
- ``manifest_tf216.json`` (beside the folder, in the corpus root when OUT_DIR is ``corpus/tf216_guide``): what
  ``tf.train.load_checkpoint`` / ``list_variables`` and h5py see, in the schema of ``manifest.json``, plus
  ``restore``: for each manager directory (its latest checkpoint) restored into the guide's program (attribute
  ``l1``), whether ``assert_existing_objects_matched`` passes and which of the net's weights it changed.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.pop("TF_USE_LEGACY_KERAS", None)


def program(out: str, layers: int, attribute: str) -> None:
    """The guide's program in ``out`` (run in its own process: Keras numbers models per process)."""
    import tensorflow as tf

    tf.random.set_seed(0)
    os.makedirs(out, exist_ok=True)
    os.chdir(out)

    class Net(tf.keras.Model):
        """A simple linear model."""

        def __init__(self):
            super().__init__()
            setattr(self, attribute, tf.keras.layers.Dense(5))
            if layers == 2:
                self.l2 = tf.keras.layers.Dense(5)

        def call(self, x):
            y = getattr(self, attribute)(x)
            return self.l2(y) if layers == 2 else y

    def toy_dataset():
        inputs = tf.range(10.)[:, None]
        labels = inputs * 5. + tf.range(5.)[None, :]
        return tf.data.Dataset.from_tensor_slices(dict(x=inputs, y=labels)).repeat().batch(2)

    def train_step(net, example, optimizer):
        with tf.GradientTape() as tape:
            output = net(example['x'])
            loss = tf.reduce_mean(tf.abs(output - example['y']))
        variables = net.trainable_variables
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss

    net = Net()
    net(tf.zeros([1, 1]))
    net.save_weights('easy_checkpoint.weights.h5')

    opt = tf.keras.optimizers.Adam(0.1)
    net = Net()
    dataset = toy_dataset()
    iterator = iter(dataset)
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net, iterator=iterator)
    manager = tf.train.CheckpointManager(ckpt, './tf_ckpts', max_to_keep=3)

    def train_and_checkpoint(net, manager):
        ckpt.restore(manager.latest_checkpoint)
        for _ in range(50):
            example = next(iterator)
            train_step(net, example, opt)
            ckpt.step.assign_add(1)
            if int(ckpt.step) % 10 == 0:
                manager.save()

    train_and_checkpoint(net, manager)
    train_and_checkpoint(net, manager)

    template = Net()
    template(tf.zeros([1, 1]))
    template.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss="mse")
    template.optimizer.build(template.trainable_variables)
    template.save_weights('template.weights.h5')


def restore_report(original: str, moved: str, layers: int) -> dict:
    """Restore ``moved`` into the guide's program (attribute ``l1``), as the guide does; what got bound."""
    import tensorflow as tf

    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.l1 = tf.keras.layers.Dense(5)
            if layers == 2:
                self.l2 = tf.keras.layers.Dense(5)

        def call(self, x):
            y = self.l1(x)
            return self.l2(y) if layers == 2 else y

    net = Net()
    net(tf.zeros([1, 1]))
    opt = tf.keras.optimizers.Adam(0.1)
    opt.build(net.trainable_variables)
    inputs = tf.range(10.)[:, None]
    labels = inputs * 5. + tf.range(5.)[None, :]
    iterator = iter(tf.data.Dataset.from_tensor_slices(dict(x=inputs, y=labels)).repeat().batch(2))
    before = [v.numpy().copy() for v in net.weights]
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net, iterator=iterator)
    status = ckpt.restore(tf.train.latest_checkpoint(moved))
    try:
        status.assert_existing_objects_matched()
        matched = True
    except AssertionError:
        matched = False
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(moved))
    return {"checkpoint": os.path.relpath(tf.train.latest_checkpoint(moved), original),
            "assert_existing_objects_matched": matched,
            "net_weights_changed": [bool((b != v.numpy()).any()) for b, v in zip(before, net.weights)],
            "step": int(ckpt.step.numpy()), "stored_step": int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))}


def digest(arr) -> str:
    """sha256 of a value, as manifest.py computes it."""
    import numpy as np

    h = hashlib.sha256()
    a = np.asarray(arr)
    if a.dtype == object or a.dtype.kind in "SU":
        for x in a.reshape(-1):
            b = x if isinstance(x, bytes) else str(x).encode()
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    else:
        h.update(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.hexdigest()


def manifest(root: str, prefix: str) -> dict:
    """What TensorFlow's reader and h5py see under ``root`` (keys relative to ``root``'s parent as ``prefix``)."""
    import h5py
    import tensorflow as tf
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    entries: dict = {}
    for index in sorted(glob.glob(os.path.join(root, "**/*.index"), recursive=True)):
        path = index[:-len(".index")]
        r = tf.train.load_checkpoint(path)
        shapes, dtypes = r.get_variable_to_shape_map(), r.get_variable_to_dtype_map()
        assert sorted(shapes) == sorted(k for k, _ in tf.train.list_variables(path))
        tensors = {}
        for k in sorted(shapes):
            try:
                d = digest(r.get_tensor(k))
            except Exception:  # noqa: BLE001 - DT_VARIANT: TensorFlow returns no numpy value
                d = None
            tensors[k] = {"shape": list(shapes[k]), "dtype": dtypes[k].name, "sha256": d}
        g = trackable_object_graph_pb2.TrackableObjectGraph()
        g.ParseFromString(r.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
        graph = [{"children": [[c.local_name, c.node_id] for c in n.children],
                  "attributes": [[a.name, a.full_name, a.checkpoint_key] for a in n.attributes],
                  "slot_variables": [[s.original_variable_node_id, s.slot_name, s.slot_variable_node_id]
                                     for s in n.slot_variables]} for n in g.nodes]
        entries[os.path.join(prefix, os.path.relpath(path, root))] = {
            "format": "tf-bundle", "tensors": tensors, "object_graph": graph,
            "data_files": sorted(os.path.basename(p) for p in glob.glob(path + ".data-*"))}
    for h5 in sorted(glob.glob(os.path.join(root, "**/*.h5"), recursive=True)):
        tensors = {}
        with h5py.File(h5, "r") as f:
            def visit(name, obj, into=tensors):
                if isinstance(obj, h5py.Dataset):
                    into[name] = {"shape": list(obj.shape), "dtype": str(obj.dtype), "sha256": digest(obj[()])}
            f.visititems(visit)
        entries[os.path.join(prefix, os.path.relpath(h5, root))] = {"format": "hdf5", "tensors": tensors}
    for state in sorted(glob.glob(os.path.join(root, "**/checkpoint"), recursive=True)):
        st = tf.train.get_checkpoint_state(os.path.dirname(state))
        entries[os.path.join(prefix, os.path.relpath(state, root))] = {
            "format": "checkpoint-state", "latest": os.path.basename(st.model_checkpoint_path),
            "all": [os.path.basename(p) for p in st.all_model_checkpoint_paths]}
    return entries


def _child(*args: str) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, __file__, *args], check=True, env=env)


def main(out: str) -> None:
    out = os.path.abspath(out)
    shutil.rmtree(out, ignore_errors=True)
    for name, layers in (("guide", 1), ("two_dense", 2)):
        _child("--program", os.path.join(out, name), str(layers), "l1")
        _child("--program", os.path.join(out, name, "moved"), str(layers), "dense")
        for extra in ("easy_checkpoint.weights.h5", "template.weights.h5"):  # one template per family is enough
            os.remove(os.path.join(out, name, "moved", extra))
    import tensorflow as tf
    import keras

    prefix = os.path.basename(out)
    entries = manifest(out, prefix)
    restores = {}
    for name, layers in (("guide", 1), ("two_dense", 2)):
        for sub in ("tf_ckpts", "moved/tf_ckpts"):
            restores[f"{prefix}/{name}/{sub}"] = restore_report(out, os.path.join(out, name, sub), layers)
    target = os.path.join(os.path.dirname(out), "manifest_tf216.json")
    with open(target, "w") as f:
        json.dump({"generated_by": f"tensorflow {tf.__version__}, keras {keras.__version__}", "entries": entries,
                   "restore": restores}, f, indent=1, sort_keys=True)
    print(len(entries), "entries ->", target)


if __name__ == "__main__":
    if sys.argv[1] == "--program":
        program(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main(sys.argv[1])
