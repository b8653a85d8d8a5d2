"""Hostile HDF5 files and ``.keras`` archives through every command, each run in a child process with an
address-space limit and a timeout: the exit code a user is promised, one line on stderr naming the file,
no traceback - and no crash, hang or allocation beyond what the file justifies taking pytest down."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from . import craft_hdf5 as craft
from .cli_child import run_limited

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")

MiB = 1 << 20
OK, PROBLEMS, INPUT = 0, 1, 3


def _commands(path: Path, key: str, out: Path, codes: dict[str, int | None]) -> list[tuple[list[str], int | None]]:
    """Every command family over ``path`` (a copy beside it for diff, its folder for trend), with the
    exit code expected of each (``codes``; commands not named are not run; None: any, naming the file)."""
    twin = path.with_name("twin_" + path.name)
    shutil.copyfile(path, twin)
    every = {
        "ls": ["ls", str(path)],
        "verify": ["verify", str(path)],
        "show": ["show", str(path), key],
        "stats": ["stats", str(path)],
        "diff": ["diff", str(path), str(twin)],
        "extract": ["extract", str(path), "-o", f"{out / 'extracted'}/"],
        "convert": ["convert", str(path), "-o", str(out / "converted.npz"), "--to", "npz"],
        "trend": ["trend", str(path.parent)],
    }
    return [(every[name], code) for name, code in codes.items()]


def _check(results: list[dict], expected: list[tuple[list[str], int | None]], name: str) -> None:
    for result, (args, code) in zip(results, expected):
        said = result["stdout"] + result["stderr"]
        assert result["exception"] is None, (args, result["exception"])
        assert "Traceback" not in said and "internal error" not in said, (args, said)
        if code is None:  # whatever the command's policy (trend skips what it cannot read): the file is named
            assert name in said, (args, said)
            continue
        assert result["exit_code"] == code, (args, result["exit_code"], said)
        if code == INPUT:
            line = result["stderr"].strip()
            assert "\n" not in line and name in line and line.startswith("ckpt: error: "), (args, line)
        if code == PROBLEMS:
            assert name in result["stdout"], (args, result["stdout"])


def _run(path: Path, key: str, tmp_path: Path, codes: dict[str, int | None], stall: float = 2.0,
         max_growth: int = 256 * MiB) -> list[dict]:
    """Run the commands named in ``codes`` under a 512 MiB address-space headroom; check each result and
    that resident memory never grew by more than ``max_growth``."""
    out = tmp_path / "out"
    out.mkdir()
    expected = _commands(path, key, out, codes)
    results = run_limited([args for args, _ in expected], headroom=512 * MiB, stall=stall)
    _check(results, expected, path.name)
    assert [r["args"][0] for r in results if r["grown"] > max_growth] == [], [r["grown"] for r in results]
    return results


def test_chunk_inflating_to_less_than_its_size(tmp_path):
    """libhdf5 dies with SIGSEGV reading this chunk; ckpt inflates it itself and says so."""
    path = craft.short_chunk(tmp_path / _folder(tmp_path))
    results = _run(path, "w", tmp_path, {"ls": OK, "verify": PROBLEMS, "show": INPUT, "stats": INPUT, "diff": INPUT,
                                         "extract": INPUT, "convert": INPUT, "trend": INPUT})
    assert "w: chunk at offset [0] inflates to 1 bytes, the chunk size is 400,000" in results[2]["stderr"]
    assert "problem w: w: chunk at offset [0] inflates to 1 bytes" in results[1]["stdout"]


def test_zeroed_global_heap_behind_a_string_attribute(tmp_path):
    """libhdf5 loops forever reading ``layer_names``; the isolated reader is stopped and says why."""
    path = craft.zeroed_heap(tmp_path / _folder(tmp_path))
    results = _run(path, "dense/dense/kernel:0", tmp_path, {"ls": INPUT, "verify": INPUT, "show": INPUT,
                                                           "trend": None}, stall=1.0)
    assert results[0]["stderr"].strip() == (f"ckpt: error: {path}: reading the HDF5 structure: no progress for 1 s; "
                                            "stopped (damaged file?)")


def test_gzip_chunks_inflating_far_beyond_the_file_stream_in_bounded_memory(tmp_path):
    """A 140 KB file holding 128 MiB of valid gzip chunks: every command works, its memory growing by less
    than half the tensor."""
    path = craft.gzip_bomb(tmp_path / _folder(tmp_path), total=128 * MiB)
    assert path.stat().st_size < 150_000
    results = _run(path, "zeros[1:3, -2:]", tmp_path, {"ls": OK, "verify": OK, "show": OK, "stats": OK, "diff": OK,
                                                        "extract": OK, "convert": OK, "trend": OK}, max_growth=64 * MiB)
    assert "zeros[1:3, -2:] -> [2, 2]" in results[2]["stdout"]
    assert (tmp_path / "out/extracted/zeros.npy").stat().st_size > 128 * MiB


def test_a_gibibyte_of_gzip_chunks_is_listed_and_sliced_without_reading_it(tmp_path):
    path = craft.gzip_bomb(tmp_path / _folder(tmp_path))
    assert path.stat().st_size < 1_200_000
    results = _run(path, "zeros[-1, :3]", tmp_path, {"ls": OK, "show": OK}, max_growth=32 * MiB)
    assert "zeros  float32  [262144, 1024]  1.0 GiB" in results[0]["stdout"]
    assert "[0. 0. 0.]" in results[1]["stdout"]


def test_never_written_string_dataset_of_200m_elements(tmp_path):
    path = craft.unwritten_strings(tmp_path / _folder(tmp_path))
    assert path.stat().st_size < 4096
    results = _run(path, "s", tmp_path, {"ls": OK, "verify": PROBLEMS, "show": INPUT, "extract": INPUT,
                                         "convert": INPUT})
    assert results[2]["stderr"].strip().endswith("s: declares 200,000,000 strings but stores only 0 bytes; "
                                                 "refusing to read them")


def test_keras_archive_inflating_to_a_gibibyte_is_listed_without_inflating_it_whole(tmp_path):
    path = craft.keras_bomb(tmp_path / _folder(tmp_path))
    assert path.stat().st_size < 1_200_000
    results = _run(path, "layers/dense/vars/0[7:10]", tmp_path, {"ls": OK, "show": OK}, max_growth=32 * MiB)
    assert "bomb.keras: keras-zip, 1 tensors, 268,435,456 parameters, 1.0 GiB" in results[0]["stdout"]


def test_keras_archive_inflating_far_beyond_its_size_is_verified_in_bounded_memory(tmp_path):
    path = craft.keras_bomb(tmp_path / _folder(tmp_path), total=128 * MiB)
    _run(path, "layers/dense/vars/0[7:10]", tmp_path, {"verify": OK, "stats": OK, "diff": OK}, max_growth=64 * MiB)


def test_keras_archive_whose_directory_says_deflated_for_a_stored_member(tmp_path):
    path = craft.stored_said_deflated(tmp_path / _folder(tmp_path))
    results = _run(path, "vars/0", tmp_path, {"ls": INPUT, "verify": INPUT, "show": INPUT})
    assert results[0]["stderr"].strip() == (f"ckpt: error: {path}: cannot inflate model.weights.h5 (Error -3 while "
                                            "decompressing data: invalid stored block lengths)")


def test_deeply_nested_json(tmp_path):
    folder = tmp_path / _folder(tmp_path)
    for path, where in ((craft.nested_config(folder), "config.json"), (craft.nested_model_config(folder), "@model_config")):
        results = run_limited([["ls", str(path)], ["verify", str(path)]])
        assert [r["exit_code"] for r in results] == [OK, PROBLEMS]
        assert f"problem {where}: " in results[1]["stdout"] and "nests deeper than 64 levels" in results[1]["stdout"]


@pytest.mark.parametrize("variant", sorted(craft.CONFUSED_CONFIGS))
def test_type_confused_config_json_is_ignored_where_it_does_not_fit(tmp_path, variant):
    path = craft.confused_config(tmp_path / _folder(tmp_path), variant)
    results = _run(path, "layers/embedding/vars/0", tmp_path, {"ls": OK, "verify": OK, "show": OK})
    assert "keras-zip, 34 tensors" in results[0]["stdout"]


def test_keras2_layer_listed_twice_is_a_problem_and_converts_once(tmp_path):
    path = craft.duplicate_layer(tmp_path / _folder(tmp_path))
    out = tmp_path / "k2" / "model.h5"
    results = run_limited([["verify", str(path)], ["convert", str(path), "-o", str(out), "--to", "keras2-h5"],
                           ["verify", str(out)]])
    assert [r["exit_code"] for r in results] == [PROBLEMS, OK, OK], results
    assert "problem embed: layer_names lists this layer 2 times" in results[0]["stdout"]


def _folder(tmp_path: Path) -> str:
    (tmp_path / "in").mkdir()
    return "in"
