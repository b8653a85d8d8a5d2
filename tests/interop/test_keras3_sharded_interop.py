"""Ask Keras 3 itself: sharded weights ckpt writes (``convert --to keras3-h5 --max-shard-size``) load with
``model.load_weights(path.weights.json)`` and give the corpus models' outputs.

- ``keras3_tagger/tagger.weights.h5`` -> 4 shards: the tagger (rebuilt as
  ``tests/data/corpus/generators/keras_h5.py`` builds it) reproduces ``keras3_tagger/probe_outputs.npy``.
- ``keras3_more/scorer_unzipped`` (a model directory) -> 3 shards: the scorer (rebuilt from the directory's
  ``config.json``) reproduces ``keras3_more/probe_outputs.npy``.

In both, the sharded weights give outputs and variables bit-for-bit equal to those Keras gets from its own
file, loaded into a fresh model in the same process.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from formats.ops.convert.cross import convert_file

from ..conftest import CORPUS

pytestmark = pytest.mark.interop

_LOAD = """
import json, sys
import numpy as np
import keras
arch, config, inputs, out, *weights = sys.argv[1:]

def build():
    if arch == "scorer":
        return keras.models.model_from_json(open(config).read())
    inp = keras.Input((12,), name="tokens", dtype="int32")
    x = keras.layers.Embedding(50, 8, name="embed")(inp)
    x = keras.layers.LSTM(16, name="lstm")(x)
    x = keras.layers.BatchNormalization(name="bn")(x)
    sub = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)], name="head")
    return keras.Model(inp, sub(x), name="tagger")

results = {}
for i, path in enumerate(weights):
    m = build()
    m.load_weights(path)
    results[f"out{i}"] = m.predict(np.load(inputs), verbose=0)
    for j, v in enumerate(m.weights):
        results[f"w{i}_{j}"] = np.asarray(v.numpy())
np.savez(out, **results)
print(json.dumps(len(m.weights)))
"""


def _keras(arch: str, config: Path | None, inputs: Path, weights: list[Path], tmp_path: Path) -> dict[str, np.ndarray]:
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    out = tmp_path / f"{arch}_results.npz"
    done = subprocess.run([sys.executable, "-c", _LOAD, arch, str(config or ""), str(inputs), str(out),
                           *map(str, weights)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _same_as_keras_own(results: dict[str, np.ndarray]) -> None:
    """Run 0 loaded Keras' own file, run 1 ckpt's shards: identical variables and outputs."""
    own = sorted(k for k in results if k.startswith("w0_"))
    assert own and len(own) == len([k for k in results if k.startswith("w1_")])
    for key in own:
        assert results[key].tobytes() == results["w1_" + key[3:]].tobytes(), key
    assert results["out0"].tobytes() == results["out1"].tobytes()


def test_sharded_tagger_loads_in_keras3(tmp_path: Path) -> None:
    out = tmp_path / "sharded" / "tagger.weights.json"
    result = convert_file(CORPUS / "keras3_tagger/tagger.weights.h5", out, "keras3-h5", max_shard_size=3000)
    # 12 shards (the optimizer's 22 variables come along: its own layout is kept) + the index
    assert result.ok and result.written.verified and len(result.written.files) == 13
    results = _keras("tagger", None, CORPUS / "keras3_tagger/probe_inputs.npy",
                     [CORPUS / "keras3_tagger/tagger.weights.h5", out], tmp_path)
    _same_as_keras_own(results)
    expected = np.load(CORPUS / "keras3_tagger/probe_outputs.npy")
    assert results["out1"].shape == expected.shape == (8, 4)
    np.testing.assert_allclose(results["out1"], expected, rtol=0, atol=1e-6)


def test_sharded_scorer_from_a_model_directory_loads_in_keras3(tmp_path: Path) -> None:
    directory = CORPUS / "keras3_more/scorer_unzipped"
    out = tmp_path / "sharded" / "scorer.weights.json"
    result = convert_file(directory, out, "keras3-h5", max_shard_size=600)
    assert result.ok and len(result.written.files) == 8  # 7 shards (the optimizer state comes along) + the index
    index = json.loads(out.read_text())
    assert index["weight_map"]["/layers/dense/vars"] == ["scorer_00001.weights.h5", "scorer_00002.weights.h5"]
    results = _keras("scorer", directory / "config.json", CORPUS / "keras3_more/probe_inputs.npy",
                     [directory / "model.weights.h5", out], tmp_path)
    _same_as_keras_own(results)
    expected = np.load(CORPUS / "keras3_more/probe_outputs.npy")
    assert results["out1"].shape == expected.shape == (4, 3)
    np.testing.assert_allclose(results["out1"], expected, rtol=0, atol=1e-6)


def test_keras_own_shards_and_ckpt_agree(tmp_path: Path) -> None:
    """Keras' own sharded save (the corpus) loads into the scorer exactly as ckpt's shards of the same weights do."""
    directory = CORPUS / "keras3_more/scorer_unzipped"
    out = tmp_path / "again" / "scorer.weights.json"
    assert convert_file(CORPUS / "keras3_more/sharded/scorer.weights.json", out, "keras3-h5",
                        max_shard_size=1000).ok
    results = _keras("scorer", directory / "config.json", CORPUS / "keras3_more/probe_inputs.npy",
                     [CORPUS / "keras3_more/sharded/scorer.weights.json", out], tmp_path)
    _same_as_keras_own(results)
