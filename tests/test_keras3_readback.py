"""ckpt reads back the Keras 3 files it writes, and reads Keras 3's own ``.keras`` templates by their config
(issue 36, section 4), on committed files, without any framework.

- ``convert full.h5 --to keras`` of every Keras 2 whole model of the corpus (``tests/data/keras_legacy``,
  ``tests/data/corpus/keras2_tagger``) gives an archive that ``diff --match converted`` finds identical to its
  source and that ``--to keras3-h5 --template`` takes. Its ``vars`` groups carry the names Keras 3 gives them
  (``oracle.keras``: the same architecture saved by Keras 3), and a ``Bidirectional``'s config holds the
  ``backward_layer`` Keras 3 writes.
- A ``.keras`` template compiled with ``Adam(0.01)`` (``tests/data/keras3_readback``, generator
  ``tests/data/corpus/generators/keras3_readback.py``) has its optimizer read from its ``config.json``: each of its
  optimizer variables takes the Keras 2 slot that Keras' own records (``t.json``, ``slots.npz``) tie it to.
- ``--to keras3-h5`` of a whole-model ``.h5`` without a template names ``--to keras`` as the way through.
"""
from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "keras_legacy"
READBACK = DATA / "keras3_readback"
MODELS = ("cnn", "rnn", "mha", "nested", "shared", "conv1d", "sequential", "names", "ops", "submodel", "constants")
TAGGER = DATA / "corpus" / "keras2_tagger" / "tagger_model.h5"
SOURCES = {**{m: LEGACY / m / "full.h5" for m in MODELS}, "tagger": TAGGER}


def _weights(path: Path, member: str | None = "model.weights.h5") -> dict[str, bytes]:
    """Every dataset of a Keras 3 weights file (inside a ``.keras`` archive when ``member``) -> its bytes."""
    found: dict[str, bytes] = {}
    source: Any = io.BytesIO(zipfile.ZipFile(path).read(member)) if member else path
    with h5py.File(source, "r") as h5:
        h5.visititems(lambda n, o: found.__setitem__(n, np.asarray(o).tobytes()) if isinstance(o, h5py.Dataset)
                      else None)
    return found


def _groups(path: Path) -> dict[str, tuple[str | None, int]]:
    """``vars`` group path -> (its ``name`` attribute, how many variables) of a ``.keras`` archive."""
    found: dict[str, tuple[str | None, int]] = {}
    with h5py.File(io.BytesIO(zipfile.ZipFile(path).read("model.weights.h5")), "r") as h5:
        h5.visititems(lambda n, o: found.__setitem__(n, (o.attrs.get("name"), len(o)))
                      if isinstance(o, h5py.Group) and n.split("/")[-1] == "vars" else None)
    return found


def _keras2_count(path: Path) -> int:
    """How many model weights a Keras 2 whole model holds, read with h5py."""
    with h5py.File(path, "r") as h5:
        group = h5["model_weights"]
        return sum(len(group[layer].attrs["weight_names"]) for layer in group.attrs["layer_names"])


def _config(path: Path) -> dict[str, Any]:
    return json.loads(zipfile.ZipFile(path).read("config.json"))


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``--to keras`` of every Keras 2 whole model of the corpus."""
    from click.testing import CliRunner

    from .conftest import SHIPPED

    out = tmp_path_factory.mktemp("readback")
    done = {}
    for name, source in SOURCES.items():
        result = CliRunner().invoke(SHIPPED, ["convert", str(source), "-o", str(out / f"{name}.keras"), "--to",
                                              "keras"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        done[name] = out / f"{name}.keras"
    return done


@pytest.mark.parametrize("model", SOURCES)
def test_diff_match_converted_finds_the_output_identical_to_its_source(run_cli, converted: dict[str, Path],
                                                                       model: str) -> None:
    result = run_cli("diff", "--match", "converted", SOURCES[model], converted[model])
    assert result.exit_code == 0, result.output
    count = _keras2_count(SOURCES[model])
    assert f"identical ({count} tensors; compared bytewise)" in result.stdout
    assert "only in" not in result.output
    unplanned = [line for line in result.stderr.splitlines() if "cannot be planned" in line]
    if model == "tagger":  # its Adam state, which --to keras leaves out (the model is written uncompiled)
        assert len(unplanned) == 1 and "optimizer: " in unplanned[0] and "21 optimizer tensor(s)" in unplanned[0]
    else:
        assert not unplanned


@pytest.mark.parametrize("model", SOURCES)
def test_the_output_is_a_template_for_its_own_source(run_cli, converted: dict[str, Path], model: str,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "w.weights.h5"
    extra = ["--drop-optimizer"] if model == "tagger" else []  # the tagger holds Adam state; the output none
    result = run_cli("convert", SOURCES[model], "--to", "keras3-h5", "--template", converted[model], "-o", out, *extra)
    assert result.exit_code == 0, result.output
    assert ", verified" in result.output and "missing" not in result.output
    assert _weights(out, None) == _weights(converted[model])  # every weight where the template keeps it


def test_a_template_refuses_what_it_has_no_place_for(run_cli, converted: dict[str, Path], tmp_path: Path) -> None:
    """The tagger's Adam state has no place in an uncompiled model: refused unless --drop-optimizer."""
    out = tmp_path / "w.weights.h5"
    result = run_cli("convert", TAGGER, "--to", "keras3-h5", "--template", converted["tagger"], "-o", out)
    assert result.exit_code == 1
    assert "21 optimizer tensor(s) of the source have no place: the template has no optimizer variables" \
        in result.output
    assert not out.exists()


def _base(name: str | None) -> str | None:
    """A layer name without the number Keras appends to make automatic names unique (``dense_17`` -> ``dense``):
    Keras 3 numbered the oracle's layers in the process that built several models."""
    return re.sub(r"_\d+$", "", name) if name else name


@pytest.mark.parametrize("model", MODELS)
def test_vars_groups_are_named_as_keras_3_names_them(converted: dict[str, Path], model: str) -> None:
    ours, theirs = _groups(converted[model]), _groups(LEGACY / model / "oracle.keras")
    with_variables = {path: (_base(name), n) for path, (name, n) in theirs.items() if n}
    assert with_variables
    assert {path: (_base(name), n) for path, (name, n) in ours.items() if n} == with_variables


def test_a_bidirectional_writes_both_layers_as_keras_3_does(converted: dict[str, Path]) -> None:
    def bidirectional(config: dict[str, Any]) -> dict[str, Any]:
        return next(la for la in config["config"]["layers"] if la["class_name"] == "Bidirectional")["config"]

    ours, theirs = bidirectional(_config(converted["rnn"])), bidirectional(_config(LEGACY / "rnn" / "oracle.keras"))
    for key in ("layer", "backward_layer"):
        for arg in ("name", "go_backwards", "return_sequences", "zero_output_for_mask", "units"):
            assert ours[key]["config"][arg] == theirs[key]["config"][arg], (key, arg)
    assert (ours["layer"]["config"]["name"], ours["backward_layer"]["config"]["name"]) == ("forward_lstm",
                                                                                          "backward_lstm")
    groups = _groups(converted["rnn"])
    assert groups["layers/bidirectional/forward_layer/vars"][0] == "forward_lstm"
    assert groups["layers/bidirectional/backward_layer/cell/vars"] == ("lstm_cell", 3)


def test_build_config_where_the_keras_2_config_fixes_the_shapes(converted: dict[str, Path]) -> None:
    """As Keras 3 writes it: a MultiHeadAttention's from its recorded shapes, a layer called on a model input
    from the input's shape; none where ckpt would have to infer a shape."""
    def builds(path: Path) -> dict[str, Any]:
        return {la["name"]: la.get("build_config") for la in _config(path)["config"]["layers"]}

    mha, oracle = builds(converted["mha"]), builds(LEGACY / "mha" / "oracle.keras")
    assert mha["multi_head_attention"] == oracle["multi_head_attention"] == {
        "shapes_dict": {"query_shape": [None, 4, 6], "value_shape": [None, 4, 6]}}
    assert mha["flatten"] is None and oracle["flatten"] == {"input_shape": [None, 4, 6]}
    assert builds(converted["rnn"])["embedding"] == builds(LEGACY / "rnn" / "oracle.keras")["embedding"] == {
        "input_shape": [None, 5]}


# -- a .keras template's optimizer, read from its config ------------------------------------------------------------
def _expected_optimizer(model: str) -> dict[str, np.ndarray]:
    """``optimizer/vars/<i>`` of the template -> the value Keras' own records give it: Keras 3's optimizer variable
    ``adam/<trainable path with _>_<momentum|velocity>`` is Keras 2's ``m``/``v`` slot of the trainable weight at
    the same place in ``trainable_variables`` (both Kerases create the same architecture's weights in one order)."""
    records = json.loads((READBACK / model / "t.json").read_text())
    slots = np.load(READBACK / model / "slots.npz")
    trainable = [p.replace("/", "_") for p in records["trainable"]]
    expected = {}
    for i, path in enumerate(records["optimizer"]):
        name = path.split("/", 1)[1]
        if name == "iteration":
            expected[f"optimizer/vars/{i}"] = np.asarray(slots["iterations"], dtype=np.int64)
        elif name == "learning_rate":
            expected[f"optimizer/vars/{i}"] = np.asarray(0.01, dtype=np.float32)
        else:
            variable, _, kind = name.rpartition("_")
            slot = {"momentum": "m", "velocity": "v"}[kind]
            expected[f"optimizer/vars/{i}"] = slots[f"{slot}/{trainable.index(variable)}"]
    return expected


@pytest.mark.parametrize("model", ["rnn", "mha"])
def test_a_keras_template_s_optimizer_is_read_from_its_config(run_cli, model: str, tmp_path: Path) -> None:
    out = tmp_path / "out.weights.h5"
    result = run_cli("convert", READBACK / model / "full.h5", "--to", "keras3-h5", "--template",
                     READBACK / model / "t.keras", "-o", out)
    assert result.exit_code == 0, result.output
    assert "config.json" not in result.output and "warning" not in result.output
    expected = _expected_optimizer(model)
    with h5py.File(out, "r") as h5:
        got = {key: np.asarray(h5[key]) for key in expected}
        assert sorted(k for k in _weights(out, None) if k.startswith("optimizer/")) == sorted(expected)
    for key, value in expected.items():
        assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
        assert got[key].tobytes() == value.tobytes(), key


def test_the_optimizer_goes_into_a_keras_output_with_the_template_s_config(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "out.keras"
    result = run_cli("convert", READBACK / "rnn" / "full.h5", "--to", "keras3-h5", "--template",
                     READBACK / "rnn" / "t.keras", "-o", out)
    assert result.exit_code == 0, result.output
    compiled = _config(out)["compile_config"]["optimizer"]
    assert (compiled["class_name"], compiled["config"]["learning_rate"]) == ("Adam", pytest.approx(0.01))
    weights = _weights(out)
    for key, value in _expected_optimizer("rnn").items():
        assert weights[key] == value.tobytes(), key


def _rewrite_config(src: Path, out: Path, change: Any) -> None:
    """A copy of the ``.keras`` archive ``src`` whose ``config.json`` is ``change(config)``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "config.json":
                config = json.loads(data)
                change(config)
                data = json.dumps(config).encode()
            zout.writestr(name, data)


def test_without_the_layers_the_config_still_names_the_optimizer(run_cli, tmp_path: Path) -> None:
    """A config that names the optimizer but not the layers holding its variables (here: the Bidirectional
    renamed away) cannot tie the slots; they are tied as the source's slots order them, and the warning says the
    config named the optimizer (not that none did)."""
    template = tmp_path / "t.keras"

    def rename(config: dict[str, Any]) -> None:
        layer = next(la for la in config["config"]["layers"] if la["class_name"] == "Bidirectional")
        layer["config"]["name"] = "renamed"

    _rewrite_config(READBACK / "rnn" / "t.keras", template, rename)
    out = tmp_path / "out.weights.h5"
    result = run_cli("convert", READBACK / "rnn" / "full.h5", "--to", "keras3-h5", "--template", template, "-o", out)
    assert result.exit_code == 0, result.output
    assert (f"warning: fallback: {template}: this Keras 3 file's config.json names its optimizer (Adam with default "
            "settings), not which model variable each of its slots belongs to: model variables tied as the other "
            "side's slots order them") in result.output
    assert "no config.json names" not in result.output
    with h5py.File(out, "r") as h5:
        for key, value in _expected_optimizer("rnn").items():
            assert np.asarray(h5[key]).tobytes() == value.tobytes(), key


def test_an_optimizer_the_config_names_is_not_read_as_the_source_s(run_cli, tmp_path: Path) -> None:
    """The template's config names SGD (whose variables differ from Adam's): its variables are not read as the
    source's Adam; the optimizer state is refused (nothing written), never filled by a guess."""
    template = tmp_path / "t.keras"

    def sgd(config: dict[str, Any]) -> None:
        config["compile_config"]["optimizer"] = {"module": "keras.optimizers", "class_name": "SGD",
                                                 "config": {"learning_rate": 0.01, "momentum": 0.0},
                                                 "registered_name": None}
        next(la for la in config["config"]["layers"] if la["class_name"] == "Bidirectional")["config"]["name"] = "x"

    _rewrite_config(READBACK / "rnn" / "t.keras", template, sgd)
    out = tmp_path / "out.weights.h5"
    result = run_cli("convert", READBACK / "rnn" / "full.h5", "--to", "keras3-h5", "--template", template, "-o", out)
    assert result.exit_code == 1, result.output
    assert "Adam with default settings like the other side's" not in result.output
    assert "the template's 26 optimizer variables cannot be tied to the source's 25 optimizer tensors" in result.output
    assert not out.exists()


# -- --to keras3-h5 without a template ------------------------------------------------------------------------------
def test_keras3_h5_of_a_whole_model_without_a_template_names_to_keras(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "w.weights.h5"
    source = LEGACY / "rnn" / "full.h5"
    result = run_cli("convert", source, "--to", "keras3-h5", "-o", out)
    assert result.exit_code == 1
    assert (f"error: unsupported: {source}: --to keras3-h5 needs --template, a .weights.h5 or .keras file written "
            "by Keras 3 for the same architecture; this keras2-h5 file is a whole model (model.save), whose Keras 3 "
            "object paths --to keras derives from its config: convert it --to keras -o MODEL.keras (Keras 3 loads "
            "that model; --to keras3-h5 takes it as a source or a --template)") in result.output
    assert "cannot be derived" not in result.output
    assert not out.exists()


def test_the_way_through_works(run_cli, tmp_path: Path) -> None:
    """What the error says: --to keras, then that archive as the source of --to keras3-h5."""
    model = tmp_path / "m.keras"
    assert run_cli("convert", LEGACY / "rnn" / "full.h5", "--to", "keras", "-o", model).exit_code == 0
    out = tmp_path / "w.weights.h5"
    result = run_cli("convert", model, "--to", "keras3-h5", "-o", out)
    assert result.exit_code == 0, result.output
    assert _weights(out, None) == _weights(LEGACY / "rnn" / "oracle.keras")


def test_keras3_h5_of_a_weights_only_h5_still_says_the_paths_cannot_be_derived(run_cli, tmp_path: Path) -> None:
    source = DATA / "corpus" / "keras2_tagger" / "tagger_weights.h5"
    result = run_cli("convert", source, "--to", "keras3-h5", "-o", tmp_path / "w.weights.h5")
    assert result.exit_code == 1
    assert (f"error: unsupported: {source}: --to keras3-h5 needs --template, a .weights.h5 file written by Keras 3 "
            "for the same architecture (Keras 3 object paths cannot be derived from a keras2-h5 file)") \
        in result.output
    assert "--to keras -o" not in result.output


def test_both_front_ends_say_the_same(tmp_path: Path) -> None:
    """The click CLI (what the fast path hands over) prints the same error and exit code."""
    from click.testing import CliRunner

    from ckpt_cli.main import cli

    source = tmp_path / "full.h5"
    shutil.copy(LEGACY / "rnn" / "full.h5", source)
    result = CliRunner().invoke(cli, ["convert", str(source), "--to", "keras3-h5", "-o", str(tmp_path / "w.h5")])
    assert result.exit_code == 1
    assert "whose Keras 3 object paths --to keras derives from its config: convert it --to keras -o MODEL.keras" \
        in result.output
