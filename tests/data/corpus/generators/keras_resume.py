"""Generate ``tests/data/keras_resume/``: a Keras 2 training checkpoint of a CNN with BatchNormalization, Keras 3
templates for it, and what Keras 3 itself holds when it resumes that training.

    python tests/data/corpus/generators/keras_resume.py [OUT_DIR]

The model is ``cnn`` of ``tests/interop/programs/keras_resume.py`` (two Conv2D / BatchNormalization / ReLU
blocks, Flatten, Dense: 10 trainable variables and 4 batch statistics), with Adam (``adam/``) and with
SGD(momentum=0.9) (``sgd/``); that program runs both frameworks, each in its own process:

- tf-keras trains 5 steps and saves ``ckpt/ckpt`` (``tf.train.Checkpoint(model=, optimizer=)``) and ``tf/ckpt``
  (the compiled model's TF-format ``save_weights``, which holds the optimizer too);
- Keras 3 saves the templates ``t.weights.h5`` and ``t.keras`` (compiled, ``optimizer.build``), and, for Adam,
  ``frozen.keras``: the same with the first Conv2D not trainable (its optimizer has no slots for it);
- Keras 3 builds the model, assigns every weight and optimizer variable by hand from tf-keras' values (slots
  tied by Keras' own variable names) and saves ``oracle.weights.h5``: what a conversion must hold, down to the
  numbering of the optimizer's variables, decided by Keras, not by ckpt.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

PROGRAM = Path(__file__).resolve().parents[3] / "interop" / "programs" / "keras_resume.py"
OPTIMIZERS = ("adam", "sgd")


def _run(jobs: list[dict], data: Path, work: Path, legacy: bool) -> None:
    spec = work / f"jobs-{legacy}.json"
    spec.write_text(json.dumps({"data": str(data), "jobs": jobs}))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    done = subprocess.run([sys.executable, str(PROGRAM), str(spec)], check=True, env=env, capture_output=True,
                          text=True)
    status = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(status.values()) == {"ok"}, status


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rng = np.random.default_rng(26)
        data = work / "data.npz"
        np.savez(data, **{"cnn:x": rng.normal(size=(16, 8, 8, 2)).astype("float32"),
                          "cnn:y": rng.normal(size=(16, 3)).astype("float32")})
        train, keras3 = [], []
        for opt in OPTIMIZERS:
            d = out / opt
            shutil.rmtree(d, ignore_errors=True)
            (d / "ckpt").mkdir(parents=True)
            base = dict(model="cnn", optimizer=opt)
            train.append(dict(base, id=f"train-{opt}", mode="train", n=5, m=0, checkpoint=str(d / "ckpt" / "ckpt"),
                              save_weights=str(d / "tf" / "ckpt"), state=str(work / f"{opt}.npz"),
                              after=str(work / f"{opt}-after.npz")))
            keras3.append(dict(base, id=f"template-{opt}", mode="template", weights=str(d / "t.weights.h5"),
                               keras=str(d / "t.keras")))
            keras3.append(dict(base, id=f"oracle-{opt}", mode="resume", load="by_hand", m=0, path=str(work / f"{opt}.npz"),
                               save=str(d / "oracle.weights.h5"), state=str(work / f"{opt}-oracle.npz"),
                               after=str(work / f"{opt}-oracle-after.npz")))
        keras3.append(dict(model="cnn", optimizer="adam", id="frozen", mode="template", freeze=[0],
                           keras=str(out / "adam" / "frozen.keras")))
        _run(train, data, work, legacy=True)
        _run(keras3, data, work, legacy=False)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "keras_resume")
