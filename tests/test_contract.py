"""Every registered format passes the shared suite (:class:`tests.format_suite.FormatTests`).

One small subclass per entry of ``registry.builtin_formats()`` says where its samples are (corpus files,
checked against the manifests; npz and safetensors files written by numpy and the safetensors library,
checked against them) and what it writes. :func:`test_every_registered_format_joins_the_suite` fails
when a format is registered without a subclass here.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import formats
from formats.core import registry
from formats.core.model import OBJECT_GRAPH_KEY

from .installed import child_env
from .format_suite import CORPUS, MANIFEST, REGISTERED, Expected, FormatTests, Row, digest, manifest_paths

ROOT = Path(__file__).resolve().parents[1]
ALL_DTYPES = CORPUS / "tf2_mixed/all_dtypes/ckpt-1"
ORBAX_DATA = Path(__file__).parent / "data" / "orbax"
_sources: dict[str, Any] = {}


class TestBundle(FormatTests):
    """TensorFlow bundles: object-based and name-based corpus checkpoints (every dtype, 7 data files,
    slots, partitioned variables, a Keras ``save_weights``), typed as a prefix, an ``.index`` and a data file.

    ``tf-name`` is written from the suite's rows (plus a string tensor). ``tf-object`` needs an object
    graph in ``options``: its rows and options are what ``ckpt rename`` plans for the corpus's all-dtypes
    checkpoint (bfloat16, strings, a scalar, an empty ``[0,7]``; ``formats.ops.convert.rename.plan_rename``)
    and ``write_plan`` passes to the writer, here passed to ``spec.write`` directly."""

    format_name = "tf-bundle"
    corpus = (*manifest_paths("tf-bundle"), "tf1_estimator/model.ckpt-200.index",
              "seed_keras2/easy_checkpoint.data-00000-of-00001")
    outputs = {"tf-name": ("out/ckpt",), "tf-object": ("obj/ckpt-1",)}

    def expected(self, path: Path) -> dict[str, Expected]:
        text = str(path)
        prefix = text[:-len(".index")] if text.endswith(".index") else text.split(".data-")[0]
        return super().expected(Path(prefix))

    def key(self, layout: str, name: str) -> str:
        return f"model/{name}"

    def rows(self, layout: str, output: str) -> tuple[list[Row], dict[str, Any]]:
        if layout == "tf-name":
            rows, options = super().rows(layout, output)
            words = np.array([b"a", b"", b"\0tail\0", "\u00e9".encode()], dtype=object)
            return rows + [Row("model/words", formats.TensorValue(words, "string"), (4,), "string")], options
        from formats.ops.convert.plan import ConvertOptions
        from formats.ops.convert.rename import plan_rename
        from formats.ops.rules import build_rules

        if "all_dtypes" not in _sources:
            _sources["all_dtypes"] = formats.open_checkpoint(ALL_DTYPES)  # stays open: rows stream from it
        plan = plan_rename(_sources["all_dtypes"], ConvertOptions(rules=build_rules(("typed/=kinds/",), (), None)))
        assert plan.ok and plan.target == layout, plan.problems
        return list(plan.rows), {**plan.write_options, "object_graph": plan.object_graph}

    def extra_keys(self, layout: str) -> set[str]:
        return {OBJECT_GRAPH_KEY} if layout == "tf-object" else set()


class TestV1(FormatTests):
    """TensorFlow 1 V1 checkpoints: one file, a sharded save's pattern and one of its shards. Reads only."""

    format_name = "tf-v1"
    corpus = (*manifest_paths("tf-v1"), "tf1_v1_sharded/model.ckpt-00001-of-00003")

    def expected(self, path: Path) -> dict[str, Expected]:
        import re

        return super().expected(Path(re.sub(r"-\d{5}-of-", "-?????-of-", str(path))))


class TestSavedModel(FormatTests):
    """SavedModel directories (TF2 module, TF1 builder, tf-keras), and one typed as its ``saved_model.pb``.
    Reads only (an edit writes its variables as a bundle)."""

    format_name = "saved-model"
    corpus = (*manifest_paths("saved-model"), "saved_models/module/1/saved_model.pb")

    def expected(self, path: Path) -> dict[str, Expected]:
        return super().expected(path.parent if path.name == "saved_model.pb" else path)


class TestKerasH5(FormatTests):
    """Keras HDF5: Keras 2 weights and full model, Keras 3 ``.weights.h5`` (the manifest: h5py's view);
    a ``.keras`` archive, checked against h5py on its ``model.weights.h5`` member.

    ``keras2-h5`` rows are ``layer/weight``; ``keras3-h5`` rows are ``object/vars/N``, written as one
    ``.weights.h5`` and, to a ``.weights.json`` name with ``options["max_shard_size"]`` as ``ckpt convert
    --max-shard-size`` passes it, as sharded weights (which reopen as ``keras3-sharded``); ``keras`` rows are
    ``object/vars/N`` too, written as a ``.keras`` archive with the ``config.json`` and ``metadata.json`` a
    planner passes (``options["members"]``), which reopens as ``keras-zip``."""

    format_name = "keras-h5"
    corpus = (*manifest_paths("keras-h5"), "keras3_tagger/tagger.keras")
    outputs = {"keras2-h5": ("k2.h5",), "keras3-h5": ("k3.weights.h5", "k3.weights.json"), "keras": ("m.keras",)}

    def expected(self, path: Path) -> dict[str, Expected]:
        if path.suffix != ".keras":
            return super().expected(path)
        import io
        import zipfile

        import h5py

        with zipfile.ZipFile(path) as zf, h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as h5:
            return _h5py_view(h5)

    def rows(self, layout: str, output: str) -> tuple[list[Row], dict[str, Any]]:
        rows, options = super().rows(layout, output)
        if layout == "keras":
            config = {"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": []}}
            return rows, {"members": {"config.json": json.dumps(config).encode(), "metadata.json": b"{}"}}
        return rows, ({"max_shard_size": 64} if output.endswith(".json") else options)

    def key(self, layout: str, name: str) -> str:
        return f"{name}/{name}:0" if layout == "keras2-h5" else f"layers/{name}/vars/0"

    def reads_back_as(self, layout: str, output: str) -> str:
        return "keras3-sharded" if output.endswith(".json") else "keras-zip" if layout == "keras" else layout



def _h5py_view(h5: Any) -> dict[str, Expected]:
    found: dict[str, Expected] = {}

    def visit(name: str, obj: Any) -> None:
        import h5py

        if isinstance(obj, h5py.Dataset):
            value = obj[()]
            found[name] = Expected(tuple(obj.shape), obj.dtype.name if obj.dtype.kind != "S" else obj.dtype.str,
                                   digest(value))

    h5.visititems(visit)
    return found


class TestKerasSharded(FormatTests):
    """Keras 3 sharded weights: the ``.weights.json`` index (written by ``keras-h5``'s ``keras3-h5``)."""

    format_name = "keras3-sharded"
    corpus = manifest_paths("keras3-sharded")


class TestKerasDirectory(FormatTests):
    """An unzipped Keras 3 model directory, and the same typed as its ``config.json``."""

    format_name = "keras3-dir"
    corpus = (*manifest_paths("keras3-dir"), "keras3_more/scorer_unzipped/config.json")

    def expected(self, path: Path) -> dict[str, Expected]:
        return super().expected(path.parent if path.name == "config.json" else path)


class TestNpz(FormatTests):
    """npz archives written by ``numpy.savez`` and ``numpy.savez_compressed``, checked against ``numpy.load``.
    Rows are written through ``spec.write`` without a provenance record (``options={}``), bfloat16 included
    (stored as its bits; the writer records the dtype)."""

    format_name = "npz"
    made = ("savez.npz", "compressed.npz")
    outputs = {"npz": ("out.npz",)}

    def make_sample(self, name: str, directory: Path) -> Path:
        values = {"matrix": np.arange(12, dtype=np.float32).reshape(3, 4), "scalar": np.float64(2.5),
                  "empty": np.zeros((0, 7), np.float32), "counts": np.array([1, -2, 3], ">i8"),
                  "flags": np.array([True, False]), "half": np.ones((2, 1), np.float16),
                  "names": np.array([b"ab", b"c"]), "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                  "nested/key": np.arange(3, dtype=np.uint16), "complex": np.array([1 + 2j], np.complex64)}
        path = directory / name
        (np.savez_compressed if name.startswith("compressed") else np.savez)(path, **values)
        return path

    def expected(self, path: Path) -> dict[str, Expected]:
        with np.load(path, allow_pickle=False) as npz:
            return {k: Expected(npz[k].shape, npz[k].dtype.newbyteorder("=").name if npz[k].dtype.kind != "S"
                                else npz[k].dtype.str, digest(npz[k])) for k in npz.files}


class TestSafetensors(FormatTests):
    """safetensors files written by the ``safetensors`` library (bfloat16 included), checked against it."""

    format_name = "safetensors"
    made = ("lib.safetensors",)
    outputs = {"safetensors": ("out.safetensors",)}

    def make_sample(self, name: str, directory: Path) -> Path:
        import ml_dtypes
        from safetensors.numpy import save_file

        values = {"matrix": np.arange(12, dtype=np.float32).reshape(3, 4), "scalar": np.array(2.5),
                  "empty": np.zeros((0, 7), np.float32), "counts": np.array([1, -2, 3], np.int64),
                  "flags": np.array([True, False]), "half": np.ones((2, 1), np.float16),
                  "brain": np.array([1.5, -2], ml_dtypes.bfloat16), "bytes": np.array([0, 255], np.uint8)}
        path = directory / name
        save_file(values, str(path), metadata={"source": "safetensors.numpy"})
        return path

    def expected(self, path: Path) -> dict[str, Expected]:
        from safetensors import safe_open

        found = {}
        with safe_open(str(path), framework="numpy") as f:
            for key in f.keys():  # noqa: SIM118 - safe_open is no mapping
                value = f.get_tensor(key)
                found[key] = Expected(value.shape, value.dtype.name, digest(value))
        return found


class TestModelDir(FormatTests):
    """transformers model directories: config.json and model.safetensors written by the ``safetensors`` library,
    or shards and their index; read back with it."""

    format_name = "hf"
    made = ("single", "sharded")
    outputs = {"hf": ("model-dir",)}
    skip_values = {"hf": frozenset()}

    def make_sample(self, name: str, directory: Path) -> Path:
        from safetensors.numpy import save_file

        values = {"encoder.weight": np.arange(12, dtype=np.float32).reshape(3, 4), "encoder.bias": np.ones(3, np.float32),
                  "head.weight": np.full((2, 3), -1.5, np.float16), "steps": np.array([1, 2], np.int64)}
        folder = directory / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"model_type": "toy"}))
        if name == "single":
            save_file(values, str(folder / "model.safetensors"), metadata={"format": "pt"})
            return folder
        keys = sorted(values)
        parts = {"model-00001-of-00002.safetensors": keys[:2], "model-00002-of-00002.safetensors": keys[2:]}
        for file, names in parts.items():
            save_file({k: values[k] for k in names}, str(folder / file), metadata={"format": "pt"})
        index = {"metadata": {"total_size": sum(v.nbytes for v in values.values())},
                 "weight_map": {k: f for f, names in parts.items() for k in names}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        return folder

    def expected(self, path: Path) -> dict[str, Expected]:
        from safetensors import safe_open

        found = {}
        for file in sorted(path.glob("*.safetensors")):
            with safe_open(str(file), framework="numpy") as f:
                for key in f.keys():  # noqa: SIM118 - safe_open is no mapping
                    value = f.get_tensor(key)
                    found[key] = Expected(value.shape, value.dtype.name, digest(value))
        return found


class TestOrbax(FormatTests):
    """Orbax and T5X checkpoints written by orbax-checkpoint and tensorstore (``tests/data/orbax``), checked against
    the goldens of Orbax's own ``restore()`` there. Reads only. Needs tensorstore (the ``orbax`` extra)."""

    format_name = "orbax"
    made = ("pytree_zarr", "standard", "pytree_zarr3", "run/2", "t5x/checkpoint_3")

    def make_sample(self, name: str, directory: Path) -> Path:
        import shutil

        if name != "pytree_zarr":  # listed from its JSON alone: the sample every format's `ls` is run on
            pytest.importorskip("tensorstore")
        out = directory / name.replace("/", "_")
        shutil.copytree(ORBAX_DATA / name, out)
        return out

    def test_no_problems_in_a_good_file(self, sample: Path) -> None:
        pytest.importorskip("tensorstore")
        super().test_no_problems_in_a_good_file(sample)

    def expected(self, path: Path) -> dict[str, Expected]:
        pytest.importorskip("tensorstore")
        name = next(n for n in self.made if n.replace("/", "_") == path.name)
        restored = json.loads((ORBAX_DATA / "goldens.json").read_text())[name]["restore"]
        return {k: Expected(tuple(v["shape"]), v["dtype"], v["sha256"]) for k, v in restored.items()}


class TestOpenAINpy(FormatTests):
    """OpenAI's GPT-1 release layout (``tests/data/hf/openai_gpt``: ``params_shapes.json`` + ten ``params_N.npy``,
    written by numpy), opened from the directory and from its ``params_shapes.json``, checked against the arrays numpy
    cuts out of the shards as transformers 4.x's ``load_tf_weights_in_openai_gpt`` does, named in GPT-1's order.
    Reads only."""

    format_name = "openai-npy"
    made = ("release", "release/params_shapes.json")

    def make_sample(self, name: str, directory: Path) -> Path:
        import shutil

        out = directory / name.split("/")[0]
        if not out.exists():
            shutil.copytree(Path(__file__).parent / "data" / "hf" / "openai_gpt", out)
        return directory / name

    def expected(self, path: Path) -> dict[str, Expected]:
        folder = path if path.is_dir() else path.parent
        shapes = json.loads((folder / "params_shapes.json").read_text())
        flat = np.concatenate([np.load(folder / f"params_{n}.npy") for n in range(10)])
        arrays = np.split(flat, np.cumsum([int(np.prod(s)) for s in shapes]))[:-1]
        block = ("attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b", "mlp/c_fc/w",
                 "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b")
        names = ["model/we/positions", "model/we/tokens"] + [f"model/h{i}/{p}" for i in range((len(shapes) - 2) // 12)
                                                              for p in block]
        return {n: Expected(tuple(s), "float32", digest(a.reshape(s))) for n, s, a in zip(names, shapes, arrays)}


def test_every_registered_format_joins_the_suite() -> None:
    """A new built-in format cannot be registered without a FormatTests subclass here."""
    suites = {cls.format_name for cls in FormatTests.__subclasses__() if cls.__module__ == __name__}
    assert suites == {spec.name for spec in registry.builtin_formats()}
    for cls in FormatTests.__subclasses__():
        assert cls.corpus or cls.made, f"{cls.__name__} has no reader sample"


def test_every_corpus_entry_is_a_sample() -> None:
    """Every manifest entry a registered format reads is a sample of that format's suite."""
    samples = {(cls.format_name, rel) for cls in FormatTests.__subclasses__() for rel in cls.corpus}
    entries = {(REGISTERED[v["format"]], k) for k, v in MANIFEST.items() if v["format"] in REGISTERED}
    assert entries and entries <= samples, sorted(entries - samples)


def _one_sample_each(tmp_path_factory: Any) -> list[Path]:
    out = []
    for cls in FormatTests.__subclasses__():
        suite = cls()
        if suite.corpus:
            out.append(CORPUS / suite.corpus[0])
        else:
            out.append(suite.make_sample(suite.made[0], tmp_path_factory.mktemp(suite.format_name)))
    return out


def test_python_m_ckpt_cli_ls_is_run_cli(run_cli: Any, tmp_path_factory: Any) -> None:
    """The CLI tests' ``run_cli`` runs the shipped entry point: ``python -m ckpt_cli ls`` (a subprocess) prints
    what ``run_cli("ls", ...)`` prints, with the same exit status, on one sample of every format."""
    env = child_env(NO_COLOR="1", COLUMNS="200")
    for sample in _one_sample_each(tmp_path_factory):
        shipped = subprocess.run([sys.executable, "-m", "ckpt_cli", "ls", str(sample)], capture_output=True,
                                 text=True, env=env, cwd=ROOT)
        in_process = run_cli("ls", str(sample))
        assert shipped.returncode == in_process.exit_code == 0, (sample, shipped.stderr)
        assert shipped.stdout == in_process.stdout, sample
        assert shipped.stdout.strip(), sample
