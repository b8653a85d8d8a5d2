"""An export goes back: TensorFlow restores ``ckpt convert OUT.npz|OUT.safetensors --to tf-object`` of an
object-based checkpoint into a fresh program, and training goes on exactly as from the checkpoint itself.

TensorFlow (tests/interop/programs/export_roundtrip.py) trains a model 3 steps with Adam and saves
``tf.train.Checkpoint(model=, optimizer=)``: with Keras 3 (variables keyed under the optimizer's
``_trainable_variables``, slots its ``_variables``, the model's own paths and the slot lists' only in the graph)
and with tf-keras' legacy optimizer (TensorFlow's slot variables, ``.OPTIMIZER_SLOT``). ckpt exports it to npz
and safetensors, which carry the object graph, and converts each back without a template: the bundle is the
source's, and TensorFlow restores it before any step and after one, trains 5 steps, ``assert_consumed()``
passes and every variable and slot equals training from the source; a model restored alone gets the source's
weights. An npz without the graph (as written before it was carried) goes back with a graph rebuilt from its
keys, a warning saying what that lacks: with tf-keras everything above holds; with Keras 3 a restore after the
optimizer is built does, and ``--template`` (a checkpoint of the program) gives the rest.
"""
from __future__ import annotations

import importlib.util
import zipfile
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import keras_env

pytest.importorskip("tensorflow")
pytestmark = pytest.mark.interop

PROGRAM = Path(__file__).parent / "programs" / "export_roundtrip.py"
FRAMEWORKS = ["keras3"] + (["tf-keras"] if importlib.util.find_spec("tf_keras") else [])


def _program(framework: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True,
                          env=keras_env(framework == "tf-keras"), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _ckpt(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from ckpt_cli.main import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module", params=FRAMEWORKS)
def roundtrip(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    framework = request.param
    root = tmp_path_factory.mktemp(f"export_roundtrip_{framework}")
    source = _program(framework, "write", str(root)).strip().splitlines()[-1]
    backs, outputs = {}, {}
    for suffix in ("npz", "safetensors"):
        export = str(root / f"exported.{suffix}")
        outputs[f"export-{suffix}"] = _ckpt("convert", source, "--to", suffix, "-o", export)
        backs[suffix] = str(root / f"back-{suffix}" / "ckpt")
        outputs[suffix] = _ckpt("convert", export, "--to", "tf-object", "-o", backs[suffix])
    bare = root / "bare.npz"  # the npz as written before the graph was carried
    with zipfile.ZipFile(root / "exported.npz") as whole, zipfile.ZipFile(bare, "w") as out:
        for info in whole.infolist():
            if info.filename != "__ckpt_object_graph__.npy":
                out.writestr(info, whole.read(info))
    backs["rebuilt"] = str(root / "back-rebuilt" / "ckpt")
    outputs["rebuilt"] = _ckpt("convert", str(bare), "--to", "tf-object", "-o", backs["rebuilt"])
    backs["template"] = str(root / "back-template" / "ckpt")
    outputs["template"] = _ckpt("convert", str(bare), "--to", "tf-object", "--template", source,
                                "-o", backs["template"])
    _program(framework, "resume", str(root / "resumed.npz"), source, *backs.values())
    return {"framework": framework, "source": source, "backs": backs, "outputs": outputs,
            "dump": dict(np.load(root / "resumed.npz"))}


def _values(dump: dict, kind: str, prefix: str) -> list[np.ndarray]:
    found = sorted((int(k.rsplit(":", 1)[1]), v) for k, v in dump.items() if k.startswith(f"{kind}:{prefix}:"))
    return [v for _, v in found]


def _bytes(value: np.ndarray) -> bytes:
    return b"".join(value.reshape(-1).tolist()) if value.dtype == object else value.tobytes()


def _same(dump: dict, kind: str, source: str, back: str) -> bool:
    want, got = _values(dump, kind, source), _values(dump, kind, back)
    assert len(want) == len(got) >= 4, (len(want), len(got))
    return all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(want, got))


@pytest.mark.parametrize("suffix", ["npz", "safetensors"])
def test_the_export_carries_the_object_graph_and_goes_back_byte_for_byte(roundtrip: dict, suffix: str) -> None:
    from formats import open_checkpoint

    for step in (f"export-{suffix}", suffix):
        code, out = roundtrip["outputs"][step]
        assert code == 0, out
        assert "_CHECKPOINTABLE_OBJECT_GRAPH" not in out and "warning" not in out, out
    with open_checkpoint(roundtrip["source"]) as src, open_checkpoint(roundtrip["backs"][suffix]) as back:
        assert sorted(back) == sorted(src)
        for key in src:  # (the object graph too: a string, its bytes)
            assert _bytes(back[key].read()) == _bytes(src[key].read()), key


@pytest.mark.parametrize("way", ["npz", "safetensors", "template"])
def test_training_from_the_export_goes_on_exactly(roundtrip: dict, way: str) -> None:
    code, out = roundtrip["outputs"][way]
    assert code == 0, out
    back, source, dump = roundtrip["backs"][way], roundtrip["source"], roundtrip["dump"]
    for kind in ("train", "built"):
        assert str(dump[f"status-{kind}:{source}"]) == "ok"
        assert str(dump[f"status-{kind}:{back}"]) == "ok", str(dump[f"status-{kind}:{back}"])
        assert _same(dump, kind, source, back), kind
    assert _same(dump, "model", source, back)


def test_a_graph_rebuilt_from_the_keys_says_what_it_lacks(roundtrip: dict) -> None:
    code, out = roundtrip["outputs"]["rebuilt"]
    assert code == 0, out
    assert "warning: graph: _CHECKPOINTABLE_OBJECT_GRAPH: not in the export: rebuilt from the keys" in out
    assert "--template <a checkpoint of the program>" in out
    back, source, dump = roundtrip["backs"]["rebuilt"], roundtrip["source"], roundtrip["dump"]
    assert str(dump[f"status-built:{back}"]) == "ok"
    assert _same(dump, "built", source, back)
    legacy = roundtrip["framework"] == "tf-keras"  # (keys under model/..., slots as slot variables)
    assert (str(dump[f"status-train:{back}"]) == "ok") is legacy
    assert _same(dump, "train", source, back) is legacy
    assert _same(dump, "model", source, back) is legacy
