"""A third-party format registered through the ``tfckpt.formats`` entry-point group works in every
reading command unchanged.

The toy format is the smallest valid entry the contract allows: an object with ``name``, ``sniff`` and
``open``, whose entries subclass ``formats.TensorEntry`` and implement only ``read()``. Its tensors live
in a small JSON file. It is installed the way pip would: a module plus a ``.dist-info`` folder with an
``entry_points.txt``, on ``sys.path``.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core import registry

from .conftest import CORPUS

SOURCE = CORPUS / "seed_slots/tf_ckpts/ckpt-5"

TOY_MODULE = textwrap.dedent('''
    """A toy checkpoint format: tensors in a JSON file ending in .toy.json."""
    import json

    import numpy as np

    import formats


    class ToyTensor(formats.TensorEntry):
        def __init__(self, key, spec):
            shape = tuple(spec["shape"])
            dtype = np.dtype(spec["dtype"])
            super().__init__(key, shape, spec["dtype"], int(np.prod(shape)) * dtype.itemsize)
            self._spec = spec

        def read(self):
            return np.asarray(self._spec["data"], dtype=self._spec["dtype"]).reshape(self.shape)


    class ToyFormat:
        name = "toy"

        def sniff(self, path):
            return str(path).endswith(".toy.json")

        def open(self, path):
            with open(path) as f:
                doc = json.load(f)
            entries = {k: ToyTensor(k, v) for k, v in doc["tensors"].items()}
            return formats.Checkpoint(path, "toy", entries)


    FORMAT = ToyFormat()
''')


@pytest.fixture
def toy_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the toy format's module and its dist-info on sys.path; return a toy file holding the
    numeric variables of SOURCE under their TF1 names."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toyfmt.py").write_text(TOY_MODULE)
    info = site / "toyfmt-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyfmt\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\ntoy = toyfmt:FORMAT\n")
    monkeypatch.syspath_prepend(str(site))
    tensors = {}
    with formats.open_checkpoint(SOURCE) as ckpt:
        for entry in ckpt.values():
            if entry.role == "variable" and entry.dtype == "float32":
                value = entry.read()
                tensors[entry.name] = {"dtype": "float32", "shape": list(value.shape), "data": value.ravel().tolist()}
    toy = tmp_path / "net.toy.json"
    toy.write_text(json.dumps({"tensors": tensors}))
    return toy


def _names(toy: Path) -> list[str]:
    return sorted(json.loads(toy.read_text())["tensors"])


def test_registry_finds_the_plugin_only_through_its_entry_point(toy_plugin: Path) -> None:
    assert "toy" not in [f.name for f in registry.builtin_formats()]
    assert registry.get_format("toy").name == "toy"
    with formats.open_checkpoint(toy_plugin) as ckpt:
        assert ckpt.format == "toy" and sorted(ckpt) == _names(toy_plugin) == ["net/dense/bias", "net/dense/kernel"]


def test_ls_and_tree_and_names(toy_plugin: Path, run_cli) -> None:
    result = run_cli("ls", "--json", toy_plugin)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["format"] == "toy"
    assert [(t["key"], t["shape"], t["dtype"]) for t in doc["tensors"]] == [
        ("net/dense/bias", [5], "float32"), ("net/dense/kernel", [1, 5], "float32")]
    tree = run_cli("ls", "--tree", toy_plugin)
    assert tree.exit_code == 0 and "dense" in tree.stdout and "kernel" in tree.stdout
    names = run_cli("ls", "--names", toy_plugin)
    assert names.exit_code == 0 and "net/dense/kernel" in names.stdout


def test_verify_show_stats(toy_plugin: Path, run_cli) -> None:
    verify = run_cli("verify", "--json", toy_plugin)
    assert verify.exit_code == 0 and json.loads(verify.stdout)["ok"] is True
    show = run_cli("show", "--json", toy_plugin, "net/dense/bias")
    with formats.open_checkpoint(SOURCE) as ckpt:
        bias = ckpt["net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE"].read()
    assert show.exit_code == 0 and np.allclose(json.loads(show.stdout)["values"], bias, rtol=0, atol=0)
    stats = run_cli("stats", "--json", toy_plugin)
    assert stats.exit_code == 0
    rows = {r["key"]: r for r in json.loads(stats.stdout)["tensors"]}
    assert rows["net/dense/bias"]["mean"] == pytest.approx(float(bias.astype(np.float64).mean()))


def test_diff_against_the_bundle_by_name(toy_plugin: Path, run_cli) -> None:
    result = run_cli("diff", "--match", "name", "--json", toy_plugin, SOURCE)
    doc = json.loads(result.stdout)
    # both variables pair by name with equal values; the bundle's optimizer state is only in B (its save_counter,
    # tf.train.Checkpoint's bookkeeping, is left out by name with the object graph)
    assert (doc["same"], doc["changed"], doc["only_in_a"]) == (2, [], [])
    assert len(doc["only_in_b"]) == 11 and result.exit_code == 1


def test_extract_and_convert(toy_plugin: Path, tmp_path: Path, run_cli) -> None:
    out = tmp_path / "x"
    assert run_cli("extract", toy_plugin, "-o", f"{out}/").exit_code == 0
    assert np.array_equal(np.load(out / "net/dense/kernel.npy"), _value(toy_plugin, "net/dense/kernel"))
    bundle = tmp_path / "conv/ckpt"
    result = run_cli("convert", toy_plugin, "--to", "tf-object", "-o", bundle)
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(bundle) as ckpt:
        assert ckpt.format == "tf-object"
        by_name = {e.name: e.read() for e in ckpt.values() if e.role == "variable"}
    assert np.array_equal(by_name["net/dense/kernel"], _value(toy_plugin, "net/dense/kernel"))
    for target, name in (("npz", "all.npz"), ("safetensors", "all.safetensors")):
        result = run_cli("convert", toy_plugin, "--to", target, "-o", tmp_path / name)
        assert result.exit_code == 0, result.output
    with np.load(tmp_path / "all.npz", allow_pickle=False) as npz:
        assert np.array_equal(npz["net/dense/bias"], _value(toy_plugin, "net/dense/bias"))


def _value(toy: Path, key: str) -> np.ndarray:
    spec = json.loads(toy.read_text())["tensors"][key]
    return np.asarray(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])


def test_a_broken_plugin_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    site = tmp_path / "site"
    info = site / "broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\nbroken = no_such_module:FORMAT\n")
    monkeypatch.syspath_prepend(str(site))
    unknown = tmp_path / "weights.bin"
    unknown.write_bytes(b"\x00" * 64)
    result = run_cli("ls", unknown)
    assert result.exit_code == 3
    assert "format plugin 'broken' failed to load: ModuleNotFoundError" in result.stderr
    assert "Traceback" not in result.stderr
