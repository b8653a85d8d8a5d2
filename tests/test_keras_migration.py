"""Keras 2 -> Keras 3 with the plain command, on models tf-keras and Keras 3 wrote themselves
(``tests/data/keras_migration``, made by ``tests/data/corpus/generators/keras_migration.py``).

The expected file is ``oracle.weights.h5``: the Keras 3 model after Keras 3's own legacy loader read the
Keras 2 ``w.h5`` and reproduced the Keras 2 model's output. Every source kind (``save_weights`` ``.h5``, TF
format, ``model.save`` ``.h5``) onto either template kind must give exactly its bytes.
"""
from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np
import pytest

from formats.keras_h5.writer import Keras2Layer, write_keras2_h5

DATA = Path(__file__).parent / "data" / "keras_migration"
MODELS = ("depthwise", "attention", "unnamed")
SOURCES = ("w.h5", "tf/ckpt", "full.h5")
TEMPLATES = ("t.weights.h5", "t.keras")


def _datasets(path: Path) -> dict[str, bytes]:
    """Every dataset of a Keras 3 weights file under ``layers/`` -> its bytes (read with h5py, not ckpt)."""
    out: dict[str, bytes] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.asarray(obj).tobytes())
                     if isinstance(obj, h5py.Dataset) and name.startswith("layers/") else None)
    return out


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("model", MODELS)
def test_the_plain_command_gives_what_keras_3_loads(run_cli, tmp_path: Path, model: str, source: str,
                                                    template: str) -> None:
    out = tmp_path / "out.weights.h5"
    result = run_cli("convert", DATA / model / source, "-o", out, "--to", "keras3-h5",
                     "--template", DATA / model / template)
    assert result.exit_code == 0, result.output
    expected = _datasets(DATA / model / "oracle.weights.h5")
    assert expected and _datasets(out) == expected


def test_automatic_names_are_paired_by_creation_order_not_by_name(run_cli, tmp_path: Path) -> None:
    """tf-keras named the three Dense layers dense_3, dense_4, dense_5, Keras 3 dense_2, dense_3, dense_4 (each
    program had made other Dense layers before, tf-keras one more): Keras 3's dense_3 is tf-keras' dense_4 (both
    8 -> 8), never its dense_3 (also 8 -> 8: pairing by name would go wrong without an error)."""
    result = run_cli("convert", DATA / "unnamed" / "w.h5", "-o", tmp_path / "o.weights.h5", "--to", "keras3-h5",
                     "--template", DATA / "unnamed" / "t.weights.h5", "--dry-run")
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split()[0] for line in result.stdout.splitlines() if "/vars/" in line}
    assert rows == {"layers/dense/vars/0": "dense_3/dense_3/kernel:0", "layers/dense/vars/1": "dense_3/dense_3/bias:0",
                    "layers/dense_1/vars/0": "dense_4/dense_4/kernel:0", "layers/dense_1/vars/1": "dense_4/dense_4/bias:0",
                    "layers/dense_2/vars/0": "dense_5/dense_5/kernel:0", "layers/dense_2/vars/1": "dense_5/dense_5/bias:0"}
    assert "automatic names: 'dense_4' -> 'dense_3'" in result.stdout
    assert "warning: fallback: (pairing): 3 template layer(s) paired otherwise than by equal names " \
           "(dense_2, dense_3, dense_4); --dry-run lists how each was paired" in result.stdout  # the plan's report


def test_batch_normalization_without_scale_pairs_by_the_layers_variable_order(run_cli, tmp_path: Path) -> None:
    """A .weights.h5 template does not say which 3 of BatchNormalization's 4 variables it holds; the layer of
    the same name in the source does (beta, moving_mean, moving_variance), in the same order."""
    result = run_cli("convert", DATA / "depthwise" / "w.h5", "-o", tmp_path / "o.weights.h5", "--to", "keras3-h5",
                     "--template", DATA / "depthwise" / "t.weights.h5", "--dry-run")
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split()[0] for line in result.stdout.splitlines() if "layers/batch_norm" in line}
    assert rows == {f"layers/batch_normalization/vars/{i}": f"batch_normalization/batch_normalization/{v}:0"
                    for i, v in enumerate(("beta", "moving_mean", "moving_variance"))}
    depthwise = [line for line in result.stdout.splitlines() if line.startswith("depthwise_conv2d/")]
    assert depthwise[0].split()[:2] == ["depthwise_conv2d/depthwise_conv2d/depthwise_kernel:0",
                                        "layers/depthwise_conv2d/vars/0"]


def _dense(path: Path, names: tuple[str, ...]) -> None:
    rng = np.random.default_rng(3)
    write_keras2_h5(path, [Keras2Layer(n, [(f"{n}/kernel:0", rng.normal(size=(3, 3)).astype(np.float32))])
                           for n in names])


def test_an_ambiguity_names_the_map_line_that_settles_it_and_the_line_works(run_cli, tmp_path: Path) -> None:
    src, tpl, out = tmp_path / "s.h5", tmp_path / "t.h5", tmp_path / "o.h5"
    _dense(src, ("encoder", "decoder"))
    _dense(tpl, ("first", "second"))
    result = run_cli("convert", src, "-o", out, "--to", "keras2-h5", "--template", tpl)
    assert result.exit_code == 1 and not out.exists()
    lines = [line for line in result.stderr.splitlines() if "ambiguous" in line]
    assert len(lines) == 2 and "if it is 'encoder', add: --map encoder=first" in lines[0]
    suggested = re.search(r"add: (--map \S+)", lines[0]).group(1).split(" ")  # type: ignore[union-attr]
    fixed = run_cli("convert", src, "-o", out, "--to", "keras2-h5", "--template", tpl, *suggested, "--dry-run")
    assert fixed.exit_code == 0, fixed.output
    rows = {line.split()[1]: line.split()[0] for line in fixed.stdout.splitlines() if ":0" in line}
    assert rows == {"first/first/kernel:0": "encoder/encoder/kernel:0", "second/second/kernel:0": "decoder/decoder/kernel:0"}


@pytest.mark.parametrize("source", SOURCES)
def test_diff_match_converted_passes_a_right_conversion_and_fails_a_wrong_one(run_cli, tmp_path: Path,
                                                                              source: str) -> None:
    src, out = DATA / "unnamed" / source, tmp_path / "out.weights.h5"
    made = run_cli("convert", src, "-o", out, "--to", "keras3-h5", "--template", DATA / "unnamed" / "t.weights.h5")
    assert made.exit_code == 0, made.output
    right = run_cli("diff", "--match", "converted", src, out)
    assert right.exit_code == 0, right.output
    assert right.stdout.strip().endswith("identical (6 tensors; compared bytewise)")
    if source == "tf/ckpt":  # what the conversion leaves out is named, and is no difference
        assert "A: left out by the conversion: 1 object_graph tensor(s) of the source left out (a Keras 3 " \
               "weights file has no place for it): _CHECKPOINTABLE_OBJECT_GRAPH" in right.stderr
    with h5py.File(out, "r+") as f:  # the two 8 x 8 kernels swapped: what pairing dense_3 by name would do
        first, second = f["layers/dense/vars/0"], f["layers/dense_1/vars/0"]
        a, b = np.asarray(first), np.asarray(second)
        first[...], second[...] = b, a
    wrong = run_cli("diff", "--match", "converted", "--json", src, out)
    assert wrong.exit_code == 1
    import json

    doc = json.loads(wrong.stdout)
    assert sorted(c["key"] for c in doc["changed"]) == ["layers/dense/vars/0", "layers/dense_1/vars/0"]
    assert (doc["only_in_a"], doc["only_in_b"], doc["same"]) == ([], [], 4)


def test_diff_match_converted_needs_an_output_with_a_templates_layout(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    assert run_cli("convert", DATA / "unnamed" / "w.h5", "-o", out, "--to", "npz").exit_code == 0
    result = run_cli("diff", "--match", "converted", DATA / "unnamed" / "w.h5", out)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"ckpt: error: {out}: pairing as a conversion pairs needs a conversion's output "
                                    "in a template's layout (keras2-h5, keras3-h5, tf-name, tf-object); npz is not one")


@pytest.mark.parametrize("model", MODELS)
def test_doctor_suggests_what_convert_pairs_and_its_rules_give_the_same_file(run_cli, tmp_path: Path,
                                                                             model: str) -> None:
    """doctor and convert pair with one engine: doctor's rules, given to convert, write the very bytes the plain
    command writes (and never offer an automatic name as evidence: dense_4 is not dense_4)."""
    src, tpl, fix = DATA / model / "w.h5", DATA / model / "t.weights.h5", tmp_path / "fix.json"
    doctor = run_cli("doctor", src, "--against", tpl, "--write-rules", fix)
    assert doctor.exit_code in (0, 1), doctor.output
    if model == "unnamed":
        assert [line for line in doctor.stdout.splitlines() if line.startswith("suggest")] == [
            f"suggest dense_{a}/{v} -> dense_{b}/{v} (automatic names: 'dense_{a}' -> 'dense_{b}' (as many of the "
            "class on both sides, in creation order))" for a, b in ((3, 2), (4, 3), (5, 4)) for v in ("kernel", "bias")]
        assert "mismatched" not in doctor.stdout.split("suggest")[0]
    plain, ruled = tmp_path / "plain.weights.h5", tmp_path / "ruled.weights.h5"
    assert run_cli("convert", src, "-o", plain, "--to", "keras3-h5", "--template", tpl).exit_code == 0
    extra = ["--rules", fix] if fix.exists() else []
    made = run_cli("convert", src, "-o", ruled, "--to", "keras3-h5", "--template", tpl, *extra)
    assert made.exit_code == 0, made.output
    assert ruled.read_bytes() == plain.read_bytes()
