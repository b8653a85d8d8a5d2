"""``ckpt show KEY`` of a large tensor reads only what numpy's summarised printing shows (issue 38, bounded per
byte: a 2 GiB embedding printed in 31 MiB, not 4.2 GB), and prints exactly what numpy prints of the whole value
(the reference here: ``numpy.array2string`` of the full array, under the same print options)."""
from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from formats import open_checkpoint, write_checkpoint
from formats.core.values import read_summary, selected_shape


def _reference(value: np.ndarray, precision: int = 6, threshold: int = 1000, edgeitems: int = 3) -> str:
    shown = value.astype(np.float32) if value.dtype == ml_dtypes.bfloat16 else value
    with np.printoptions(precision=precision, threshold=threshold, edgeitems=edgeitems):
        return np.array2string(shown, separator=" ")


VALUES = {
    "wide": np.random.default_rng(0).standard_normal((300, 500)).astype(np.float32),
    "tall3d": np.random.default_rng(1).integers(-9, 9, size=(40, 7, 33)).astype(np.int32),
    "edge": np.arange(6 * 7 * 50, dtype=np.float64).reshape(6, 7, 50) / 7,  # axes of exactly 2e and 2e + 1
    "vector": np.linspace(-1, 1, 5000, dtype=np.float16),
    "bf16": np.random.default_rng(2).standard_normal((64, 64)).astype(ml_dtypes.bfloat16),
    "flags": np.random.default_rng(3).random((50, 50)) > 0.5,
    "waves": (np.random.default_rng(4).standard_normal((40, 40)) * 1j + 1).astype(np.complex64),
    "big": np.random.default_rng(5).standard_normal((2000, 3)).astype(np.float32) * 1e6,
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("show") / "ckpt-1"
    write_checkpoint(str(prefix), list(VALUES.items()), verify=False)
    return prefix


@pytest.mark.parametrize("key", sorted(VALUES))
@pytest.mark.parametrize("options", [(), ("--edgeitems", "2"), ("--precision", "3", "--threshold", "100")])
def test_a_summarised_tensor_prints_as_numpy_prints_the_whole(run_cli, bundle: Path, key: str,
                                                              options: tuple[str, ...]) -> None:
    result = run_cli("show", *options, bundle, key)
    assert result.exit_code == 0, result.stderr
    kw = dict(zip(("precision", "threshold", "edgeitems"), (6, 1000, 3)))
    for flag, text in zip(options[::2], options[1::2]):
        kw[flag.removeprefix("--")] = int(text)
    value = VALUES[key]
    dtype = "bfloat16" if value.dtype == ml_dtypes.bfloat16 else value.dtype.name
    assert result.stdout == f"{key}: {dtype} {list(value.shape)}\n{_reference(value, **kw)}\n"
    assert "..." in result.stdout


def test_only_the_corners_are_read(bundle: Path) -> None:
    entry = open_checkpoint(str(bundle))["wide"]
    part = read_summary(entry, 3)
    assert part.shape == (7, 7)
    rows, cols = [0, 1, 2, 3, 297, 298, 299], [0, 1, 2, 3, 497, 498, 499]
    assert np.array_equal(part, VALUES["wide"][np.ix_(rows, cols)])
    assert read_summary(open_checkpoint(str(bundle))["flags"], 30).shape == (50, 50)  # nothing to leave out


def test_selected_shape_reads_nothing_and_refuses_a_bad_index(bundle: Path) -> None:
    entry = open_checkpoint(str(bundle))["tall3d"]
    assert selected_shape(entry, None) == (40, 7, 33)
    assert selected_shape(entry, (slice(None, None, 2), 3)) == (20, 33)


def test_json_of_too_many_elements_is_refused_before_reading(run_cli, bundle: Path) -> None:
    result = run_cli("show", "--json", bundle, "vector")
    assert result.exit_code == 0 and len(json.loads(result.stdout)["values"]) == 5000
    result = run_cli("show", "--json", bundle, "big[:, 0]")
    assert result.exit_code == 0 and json.loads(result.stdout)["value_shape"] == [2000]


def test_a_slice_and_full_still_print_every_value_asked_for(run_cli, bundle: Path) -> None:
    result = run_cli("show", "--full", bundle, "vector")
    assert "..." not in result.stdout
    with np.printoptions(precision=6, threshold=2 ** 62, edgeitems=3):
        assert result.stdout.split("\n", 1)[1] == np.array2string(VALUES["vector"], separator=" ") + "\n"
    sliced = run_cli("show", bundle, "wide[10:20, :]")
    assert sliced.stdout.split("\n", 1)[1] == _reference(VALUES["wide"][10:20, :]) + "\n"
