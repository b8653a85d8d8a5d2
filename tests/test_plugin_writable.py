"""Adding a writable format is one package plus one registry line: a toy plugin format that reads *and*
writes, installed through a temporary ``.dist-info``, is a ``ckpt convert --to`` target and ``ckpt edit``
writes it in its own format, through the shipped entry point (``python -m ckpt_cli``), with no change to
ckpt. Also: no quoted format name is left in ``formats/ops``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import formats
from formats.core import registry
from formats.core.format import layouts_of
from formats.core.model import FormatName

from .conftest import CORPUS
from .installed import child_env, site_dirs

ROOT = Path(__file__).resolve().parents[1]
SOURCE = CORPUS / "seed_slots/tf_ckpts/ckpt-5"

TOY_MODULE = textwrap.dedent('''
    """A writable toy format: tensors in a JSON file ending in .toy.json."""
    import json
    import os

    import numpy as np

    import formats
    from formats.core.sources import fixed_chunks
    from formats.io.writing import Stored, WriteReport, guard_output


    class ToyTensor(formats.TensorEntry):
        def __init__(self, key, spec):
            shape = tuple(spec["shape"])
            super().__init__(key, shape, spec["dtype"], int(np.prod(shape)) * np.dtype(spec["dtype"]).itemsize)
            self._spec = spec

        def read(self):
            return np.asarray(self._spec["data"], dtype=self._spec["dtype"]).reshape(self.shape)


    class ToyFormat:
        name = "toy"
        writes = ("toy",)
        suffixes = (".toy.json",)

        def sniff(self, path):
            return str(path).endswith(".toy.json")

        def open(self, path):
            with open(path) as f:
                doc = json.load(f)
            return formats.Checkpoint(path, "toy", {k: ToyTensor(k, v) for k, v in doc["tensors"].items()})

        def unstorable(self, entry):
            return None if entry.dtype in ("float32", "float64", "int32", "int64") else f"toy has no {entry.dtype}"

        def write(self, output, rows, *, layout, force=False, verify=True, inputs=(), progress=None, jobs=None,
                  link=False, options=None):
            guard_output(output, inputs=list(inputs), sources=[r.value for r in rows], force=force)
            report = WriteReport(output, layout, [output])
            tensors = {}
            for row in rows:
                raw = b"".join(bytes(p) for p in fixed_chunks(row.value))
                value = np.frombuffer(raw, dtype=row.dtype).reshape(row.shape)
                tensors[row.key] = {"dtype": row.dtype, "shape": list(row.shape), "data": value.ravel().tolist()}
                report.add(Stored(row.key, row.key, row.dtype, row.dtype, tuple(row.shape)), len(raw))
            os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
            with open(output, "w") as f:
                json.dump({"tensors": tensors, "provenance": (options or {}).get("provenance")}, f)
            return report


    FORMAT = ToyFormat()
''')


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy format's module and dist-info, installed as pip would (and on this process's path)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toywrite.py").write_text(TOY_MODULE)
    info = site / "toywrite-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toywrite\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\ntoy = toywrite:FORMAT\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def _ckpt(site: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = child_env(PYTHONPATH=os.pathsep.join([str(site), *site_dirs()]))
    return subprocess.run([sys.executable, "-m", "ckpt_cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=site)


def _tensors(path: Path) -> dict[str, np.ndarray]:
    doc = json.loads(path.read_text())
    return {k: np.asarray(v["data"], dtype=v["dtype"]).reshape(v["shape"]) for k, v in doc["tensors"].items()}


def test_write_targets_are_derived_from_the_registry(site: Path) -> None:
    assert registry.write_targets() == ["hf", "keras", "keras2-h5", "keras3-h5", "npz", "safetensors", "tf-name",
                                        "tf-object", "toy"]
    assert registry.writer_of("toy").name == "toy" and registry.edit_target("toy") == "toy"


def test_builtin_write_targets_in_todays_order() -> None:
    builtin = sorted({t for spec in registry.builtin_formats() for t in getattr(spec, "writes", ())})
    assert builtin == ["hf", "keras", "keras2-h5", "keras3-h5", "npz", "safetensors", "tf-name", "tf-object"]
    assert registry.writer_of(FormatName.TF_OBJECT).name == "tf-bundle"
    assert registry.edit_target(FormatName.KERAS_ZIP) == FormatName.KERAS3_H5


def test_convert_to_and_edit_a_plugin_format(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "net.toy.json"
    done = _ckpt(site, "convert", SOURCE, "--to", "toy", "-o", out, "--skip-unreadable")
    assert done.returncode == 0, done.stdout + done.stderr
    written = _tensors(out)
    with formats.open_checkpoint(SOURCE) as ckpt:
        expected = {k: e.read() for k, e in ckpt.items() if e.dtype in ("float32", "float64", "int32", "int64")}
        assert json.loads(out.read_text())["provenance"]["source"] == str(SOURCE)
    assert sorted(written) == sorted(expected)
    assert all(np.array_equal(written[k], expected[k]) for k in expected)
    with formats.open_checkpoint(out) as ckpt:  # and it reads back through the plugin, in this process
        assert ckpt.format == "toy"
    edited = tmp_path / "edited.toy.json"
    done = _ckpt(site, "edit", out, "--select", "net/*", "-o", edited)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = _tensors(edited)
    assert kept and sorted(kept) == sorted(k for k in written if k.startswith("net/"))
    assert all(np.array_equal(kept[k], written[k]) for k in kept)


def test_library_convert_to_a_plugin_format_in_process(site: Path, tmp_path: Path) -> None:
    from formats.ops.convert.cross import convert_file

    result = convert_file(SOURCE, tmp_path / "lib.toy.json", "toy", skip_unreadable=True)
    assert result.ok and result.written.format == "toy" and _tensors(tmp_path / "lib.toy.json")


FORMAT_NAMES = sorted({str(m) for m in FormatName} | {s.name for s in registry.builtin_formats()}
                      | {layout for s in registry.builtin_formats() for layout in layouts_of(s)} | {"keras"})


@pytest.mark.parametrize("where", ["formats/ops", "ckpt_cli"])
def test_no_quoted_format_name_in_ops_or_the_command_line(where: str) -> None:
    """Formats are named by ``FormatName`` members or registry attributes in ``formats/ops`` and ``ckpt_cli``,
    never quoted (in either quotes)."""
    quoted = re.compile("[\"'](" + "|".join(map(re.escape, FORMAT_NAMES)) + ")[\"']")
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in sorted((ROOT / where).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if quoted.search(line)]
    assert found == []
