"""TF1 graph-mode training for the optimizer resume tests: ``python tf1_train.py jobs.json``.

Each job builds ``dense/kernel`` [4, 3] and ``dense/bias`` [3] (initial values from data.npz), the loss
``mean((x @ kernel + bias - y)^2)``, ``global_step`` and one ``tf.compat.v1.train`` optimizer, then:
- ``train``: N steps, ``Saver`` save at ``ckpt``, M more steps, dump every variable to ``out``;
- ``resume``: ``Saver.restore`` from ``ckpt``, M steps, dump to ``out``.
Dumps are ``.npz`` files keyed by TF1 variable name.
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
v1.disable_eager_execution()

OPTIMIZERS = {
    "momentum": lambda: v1.train.MomentumOptimizer(0.05, 0.9),
    "adam": lambda: v1.train.AdamOptimizer(0.01, epsilon=1e-7),
    "adagrad": lambda: v1.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: v1.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, epsilon=1e-7),
    "ftrl": lambda: v1.train.FtrlOptimizer(0.1),
    "adadelta": lambda: v1.train.AdadeltaOptimizer(1.0, rho=0.95, epsilon=1e-7),
}


def run(job, data):
    graph = tf.Graph()
    with graph.as_default():
        gs = v1.train.get_or_create_global_step()
        kernel = v1.get_variable("dense/kernel", initializer=data["kernel"])
        bias = v1.get_variable("dense/bias", initializer=data["bias"])
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(data["x"]), kernel) + bias - tf.constant(data["y"])))
        train = OPTIMIZERS[job["optimizer"]]().minimize(loss, global_step=gs)
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            if job["mode"] == "train":
                for _ in range(job["n"]):
                    sess.run(train)
                os.makedirs(os.path.dirname(job["ckpt"]), exist_ok=True)
                saver.save(sess, job["ckpt"], write_meta_graph=False)
            else:
                saver.restore(sess, job["ckpt"])
            for _ in range(job["m"]):
                sess.run(train)
            values = sess.run({v.op.name: v for v in v1.global_variables()})
    np.savez(job["out"], **values)


def main():
    jobs = json.load(open(sys.argv[1]))
    data = dict(np.load(jobs["data"]))
    results = {}
    for job in jobs["jobs"]:
        try:
            run(job, data)
            results[job["out"]] = "ok"
        except Exception as exc:  # reported per job: one failure must not hide the others
            results[job["out"]] = f"{type(exc).__name__}: {str(exc)[:500]}"
    print(json.dumps(results))


main()
