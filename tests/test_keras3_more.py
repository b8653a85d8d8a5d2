"""Keras 3 beyond one file: sharded weights (``*.weights.json`` + shards) and unzipped model directories,
opened as a user types them and checked against manifest_more.json; ``convert --to keras3-h5
--max-shard-size`` writes shards Keras' layout and ckpt's reader agree on."""
from __future__ import annotations

import json
import re
import os
import math
import shutil
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

import formats
from formats.core.errors import CheckpointNotFoundError, CorruptCheckpointError, InvalidOutputError, UnsupportedError
from formats.keras_h5.sharded_writer import assign_shards, shard_names, write_keras3_sharded
from formats.keras_h5.writer import Keras3Group
from formats.ops.compare.verify import verify_checkpoint
from formats.ops.convert.cross import convert_file

from .conftest import CORPUS, digest

MORE: dict = json.loads((CORPUS / "manifest_more.json").read_text())["entries"]
SHARDED = "keras3_more/sharded/scorer.weights.json"
UNZIPPED = "keras3_more/scorer_unzipped"
K3_WEIGHTS = CORPUS / "keras3_tagger/tagger.weights.h5"
SHARD_FILES = ["scorer_00000.weights.h5", "scorer_00001.weights.h5", "scorer_00002.weights.h5",
               "scorer_00003.weights.h5"]


def test_manifest_lists_both_layouts():
    assert {k: v["format"] for k, v in MORE.items() if k.startswith("keras3_more/")} == {
        SHARDED: "keras3-sharded", UNZIPPED: "keras3-dir"}
    assert MORE[SHARDED]["shards"] == SHARD_FILES


@pytest.mark.parametrize("typed", [SHARDED, UNZIPPED, UNZIPPED + "/", UNZIPPED + "/config.json"])
def test_opened_as_typed_agrees_with_the_manifest(typed):
    rel = typed.rstrip("/").removesuffix("/config.json")
    expected = MORE[rel]["tensors"]
    with formats.open_checkpoint(str(CORPUS / typed)) as ckpt:
        assert ckpt.format == MORE[rel]["format"]
        assert sorted(ckpt) == sorted(expected)
        for key, want in expected.items():
            entry = ckpt[key]
            assert (list(entry.shape), entry.dtype) == (want["shape"], want["dtype"]), key
            value = entry.read()
            assert digest(value) == want["sha256"], key
            assert entry.nbytes == value.nbytes


def test_sharded_weights_are_one_checkpoint_over_every_shard():
    directory = CORPUS / "keras3_more/sharded"
    with formats.open_checkpoint(CORPUS / SHARDED) as ckpt:
        assert ckpt.files == [str(CORPUS / SHARDED)] + [str(directory / n) for n in SHARD_FILES]
        assert ckpt.metadata["shards"] == SHARD_FILES
        assert ckpt.metadata["total_size"] == 3492.0
        assert ckpt.problems() == []
        # where each tensor is, as h5py sees the shards
        for name in SHARD_FILES:
            for key, _ in _datasets(directory / name):
                assert ckpt[key].files == (str(directory / name),)
        # the vars group's name attribute is in the first shard only; names come out the same
        assert [ckpt[f"optimizer/vars/{i}"].name for i in (0, 13)] == ["adam_w/0", "adam_w/13"]
        assert ckpt["layers/dense/vars/0"].name == "wide/kernel"
        assert ckpt["layers/dense_1/vars/1"].name == "head/bias"


def test_model_directory_has_its_config():
    directory = CORPUS / UNZIPPED
    with formats.open_checkpoint(directory) as ckpt:
        assert ckpt.files == [str(directory / n) for n in ("config.json", "metadata.json", "model.weights.h5")]
        config = json.loads((directory / "config.json").read_text())
        assert ckpt.metadata["model_config"] == config
        assert ckpt.metadata["keras_version"] == json.loads((directory / "metadata.json").read_text())["keras_version"]
        # the config names the optimizer (AdamW) and its slots, as Keras names them
        assert ckpt["optimizer/vars/0"].name == "adam_w/iteration"
        assert ckpt["optimizer/vars/2"].name == "adam_w/wide_kernel_momentum"
        assert ckpt["layers/batch_normalization/vars/3"].name == "bn/moving_variance"


def test_cli_ls_and_verify(run_cli):
    for typed in (CORPUS / SHARDED, CORPUS / UNZIPPED):
        res = run_cli("ls", "--json", typed)
        assert res.exit_code == 0, res.output
        assert len(json.loads(res.stdout)["tensors"]) == 22
        res = run_cli("verify", typed)
        assert res.exit_code == 0 and res.stdout.startswith("ok "), res.output


def test_directory_listing_names_each_checkpoint_once(run_cli):
    res = run_cli("ls", "--json", "-r", CORPUS / "keras3_more")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    rows = rows["checkpoints"] if isinstance(rows, dict) else rows
    assert sorted((Path(r["path"]).relative_to(CORPUS).as_posix(), r["format"], r["tensors"]) for r in rows) == [
        (UNZIPPED, "keras3-dir", 22), (SHARDED, "keras3-sharded", 22)]
    # a folder of shards is one checkpoint: opening the folder opens the index
    with formats.open_checkpoint(CORPUS / "keras3_more/sharded") as ckpt:
        assert ckpt.format == "keras3-sharded"


def _copy(tmp_path: Path, rel: str) -> Path:
    dst = tmp_path / Path(rel).name
    shutil.copytree(CORPUS / rel, dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst


def test_missing_shard_is_one_line_naming_it(tmp_path, run_cli):
    d = _copy(tmp_path, "keras3_more/sharded")
    (d / "scorer_00002.weights.h5").unlink()
    with pytest.raises(CheckpointNotFoundError) as err:
        formats.open_checkpoint(d / "scorer.weights.json")
    assert err.value.path == str(d / "scorer_00002.weights.h5")
    assert err.value.message == "shard named in scorer.weights.json's weight_map does not exist"
    res = run_cli("ls", d / "scorer.weights.json")
    assert res.exit_code == 3
    assert res.stderr.strip().count("\n") == 0 and "scorer_00002.weights.h5" in res.stderr


def test_shard_that_is_a_device_is_never_opened(tmp_path):
    (tmp_path / "z_00000.weights.h5").symlink_to("/dev/zero")
    (tmp_path / "z.weights.json").write_text(json.dumps({"weight_map": {"/vars": "z_00000.weights.h5"}}))
    with pytest.raises(CorruptCheckpointError) as err:
        formats.open_checkpoint(tmp_path / "z.weights.json")
    assert err.value.message == "shard named in z.weights.json's weight_map is not a regular file"


def test_empty_weight_map_is_an_empty_checkpoint(tmp_path):
    (tmp_path / "e.weights.json").write_text('{"metadata": {"total_size": 0}, "weight_map": {}}')
    with formats.open_checkpoint(tmp_path / "e.weights.json") as ckpt:
        assert (ckpt.format, len(ckpt), ckpt.files, ckpt.problems()) == (
            "keras3-sharded", 0, [str(tmp_path / "e.weights.json")], [])


def _rewrite_index(d: Path, change) -> Path:
    index = d / "scorer.weights.json"
    data = json.loads(index.read_text())
    change(data)
    index.write_text(json.dumps(data))
    return index


def test_shard_names_must_stay_beside_the_index(tmp_path):
    d = _copy(tmp_path, "keras3_more/sharded")
    index = _rewrite_index(d, lambda m: m["weight_map"].update({"/layers/dense/vars": ["../../etc/passwd"]}))
    with pytest.raises(CorruptCheckpointError, match="shards must be file names beside the JSON file"):
        formats.open_checkpoint(index)


MISPLACED = ("stored in scorer_00001.weights.h5, which the weight_map does not list for /layers/dense_1/vars: "
             "Keras will not load it")


def test_weight_map_disagreeing_with_the_shards_is_a_problem(tmp_path):
    d = _copy(tmp_path, "keras3_more/sharded")
    index = _rewrite_index(d, lambda m: m["weight_map"].update({"/layers/dense_1/vars": ["scorer_00000.weights.h5"],
                                                                "/layers/ghost/vars": "scorer_00003.weights.h5"}))
    with formats.open_checkpoint(index) as ckpt:
        report = verify_checkpoint(ckpt)
    assert [(p.where, p.message) for p in report.problems] == [
        ("layers/dense_1/vars/0", MISPLACED),
        ("layers/dense_1/vars/1", MISPLACED),
        ("/layers/ghost/vars", "the weight_map lists scorer_00003.weights.h5 for it, but no shard holds its variables"),
    ]


@pytest.mark.parametrize("text, message", [
    ("[" * 100000 + "]" * 100000, "the shard index nests deeper than 64 levels; refusing to parse it"),
    ('{"weight_map": [1, 2]}', 'not a Keras shard index: no "weight_map" object'),
    ('{"weight_map": {"/vars": 7}}', "weight_map['/vars'] names 7, not a shard file name"),
    ('{"weight_map": {"/vars": "x.h5"', "the shard index is not valid JSON (Expecting ',' delimiter"),
])
def test_damaged_index(tmp_path, text, message):
    index = tmp_path / "m.weights.json"
    index.write_text(text if text.startswith("{") else '{"weight_map": {}, "x": ' + text + "}")
    with pytest.raises(CorruptCheckpointError) as err:
        formats.open_checkpoint(index)
    assert err.value.message.startswith(message)


def test_model_directory_with_deeply_nested_config_still_opens(tmp_path):
    d = _copy(tmp_path, UNZIPPED)
    (d / "config.json").write_text("[" * 50000 + "]" * 50000)
    with formats.open_checkpoint(d) as ckpt:
        assert len(ckpt) == 22 and "model_config" not in ckpt.metadata
        assert [(p.where, p.message) for p in ckpt.problems()] == [
            ("config.json", "config.json nests deeper than 64 levels; refusing to parse it")]


def test_model_directory_with_npz_weights_is_refused(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    np.savez(d / "model.weights.npz", **{"layers/dense": np.array({"0": np.ones(2)}, dtype=object)})
    with pytest.raises(UnsupportedError, match="model.weights.npz is Keras' npz weights format .* ckpt never "
                                               "unpickles, so it is not read"):
        formats.open_checkpoint(d)


def test_keras_archive_with_pickled_npz_weights_is_refused(tmp_path):
    """Keras' weights_format="npz" pickles a dict per layer; the archive is refused, nothing unpickled."""
    inner = tmp_path / "w.npz"
    np.savez(inner, **{"layers/dense": np.array({"0": np.ones(2)}, dtype=object)})
    archive = tmp_path / "m.keras"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("config.json", "{}")
        zf.writestr("metadata.json", "{}")
        zf.write(inner, "model.weights.npz")
    with pytest.raises(UnsupportedError) as err:
        formats.open_checkpoint(archive)
    assert err.value.message.startswith("model.weights.npz holds pickled Python objects; ckpt never unpickles")


def test_zip_without_a_keras_model_is_not_claimed(tmp_path):
    plain = tmp_path / "data.zip"
    with zipfile.ZipFile(plain, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(formats.NotACheckpointError) as err:
        formats.open_checkpoint(plain)
    assert err.value.message == "is a zip archive that holds no Keras model (no model.weights.h5) and is not named .npz"


# --- writing -------------------------------------------------------------------------------------------

def _datasets(path: Path) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    with h5py.File(path) as h5:
        h5.visititems(lambda n, o: found.append((n, o.nbytes)) if isinstance(o, h5py.Dataset) else None)
    return found


def test_assign_shards_starts_a_shard_when_the_next_would_overflow():
    assert assign_shards([4, 4, 4, 10, 1, 1], 8) == [0, 0, 1, 2, 3, 3]
    assert assign_shards([], 8) == []
    assert shard_names("out/model.weights.json", 3) == ["model_00000.weights.h5", "model_00001.weights.h5",
                                                        "model_00002.weights.h5"]


# The tagger's model variables in file order with their bytes, packed greedily into 3,000-byte shards
# (worked out by hand): 4 x 64 + 1600 | 2048 | 4096 (alone: larger than a shard) | 256 + 1024 + 64 + 256 + 16
TAGGER_SHARDS = [
    [("layers/batch_normalization/vars/0", 64), ("layers/batch_normalization/vars/1", 64),
     ("layers/batch_normalization/vars/2", 64), ("layers/batch_normalization/vars/3", 64),
     ("layers/embedding/vars/0", 1600)],
    [("layers/lstm/cell/vars/0", 2048)],
    [("layers/lstm/cell/vars/1", 4096)],
    [("layers/lstm/cell/vars/2", 256), ("layers/sequential/layers/dense/vars/0", 1024),
     ("layers/sequential/layers/dense/vars/1", 64), ("layers/sequential/layers/dense_1/vars/0", 256),
     ("layers/sequential/layers/dense_1/vars/1", 16)],
]


def test_convert_writes_shards_and_reads_them_back(tmp_path, run_cli):
    out = tmp_path / "w" / "tagger.weights.json"
    res = run_cli("convert", K3_WEIGHTS, "-o", out, "--to", "keras3-h5", "--max-shard-size", "3KB", "--json",
                  "--drop-optimizer")
    assert res.exit_code == 0, res.output
    written = json.loads(res.stdout)
    shards = [os.path.basename(f) for f in written["written"]["files"][:-1]]
    assert shards == [f"tagger_{i:05}.weights.h5" for i in range(4)] and written["written"]["files"][-1] == str(out)
    assert [p["key"] for p in written["problems"] if p["kind"] == "fallback"] == ["layers/lstm/cell/vars/1"]
    assert [_datasets(out.parent / n) for n in shards] == TAGGER_SHARDS
    index = json.loads(out.read_text())
    generation = index["metadata"].pop("ckpt_generation")  # the write's id, which every shard carries too
    assert re.fullmatch(r"[0-9a-f]{16}", generation)
    import h5py

    assert [h5py.File(out.parent / n, "r").attrs["ckpt_generation"] for n in shards] == [generation] * 4
    assert index == {"metadata": {"total_size": 9616.0}, "weight_map": {
        "/layers/batch_normalization/vars": ["tagger_00000.weights.h5"],
        "/layers/embedding/vars": ["tagger_00000.weights.h5"],
        "/layers/lstm/cell/vars": ["tagger_00001.weights.h5", "tagger_00002.weights.h5", "tagger_00003.weights.h5"],
        "/layers/sequential/layers/dense/vars": ["tagger_00003.weights.h5"],
        "/layers/sequential/layers/dense_1/vars": ["tagger_00003.weights.h5"]}}
    with formats.open_checkpoint(K3_WEIGHTS) as src, formats.open_checkpoint(out) as back:
        assert back.format == "keras3-sharded" and back.problems() == []
        model = [k for k in src if not k.startswith("optimizer/")]
        assert sorted(back) == sorted(model)
        for key in model:
            assert back[key].read().tobytes() == src[key].read().tobytes()
            assert back[key].name == src[key].name
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(os.path.basename(f) for f in written["written"]["files"])
    res = run_cli("diff", K3_WEIGHTS, out)
    assert res.exit_code == 1 and "0 changed, 22 only in A, 0 only in B, 12 same" in res.stdout


def test_resharding_keeps_the_optimizer_variables(tmp_path, run_cli):
    """A Keras 3 file resharded in its own layout keeps its optimizer variables, bit for bit (they were
    left out with a warning, exit 0: training state lost)."""
    out = tmp_path / "w" / "tagger.weights.json"
    res = run_cli("convert", K3_WEIGHTS, "-o", out, "--to", "keras3-h5", "--max-shard-size", "3KB")
    assert res.exit_code == 0, res.output
    assert "left out" not in res.output
    with formats.open_checkpoint(K3_WEIGHTS) as src, formats.open_checkpoint(out) as back:
        assert sorted(back) == sorted(src) and len([k for k in src if k.startswith("optimizer/vars/")]) == 22
        for key in src:
            assert back[key].read().tobytes() == src[key].read().tobytes()
    res = run_cli("diff", K3_WEIGHTS, out)
    assert res.exit_code == 0 and "identical (34 tensors" in res.stdout, res.stdout


def test_every_shard_but_an_oversized_tensor_stays_under_the_limit(tmp_path):
    rng = np.random.default_rng(5)
    groups = [Keras3Group("layers/a", "a", [rng.normal(size=(10, 10)).astype("float32"), np.zeros(3, "float32")]),
              Keras3Group("layers/b", "b", [rng.normal(size=(100,)).astype("float64")]),
              Keras3Group("layers/c", "c", [np.arange(50, dtype="int32")])]
    report = write_keras3_sharded(tmp_path / "m.weights.json", groups, max_shard_size=500)
    # 400 + 12 fit; 800 is alone (larger than 500); 200 starts the last
    assert [os.path.basename(f) for f in report.files] == ["m_00000.weights.h5", "m_00001.weights.h5",
                                                           "m_00002.weights.h5", "m.weights.json"]
    index = json.loads((tmp_path / "m.weights.json").read_text())
    assert index["weight_map"] == {"/layers/a/vars": ["m_00000.weights.h5"], "/layers/b/vars": ["m_00001.weights.h5"],
                                   "/layers/c/vars": ["m_00002.weights.h5"]}
    with h5py.File(tmp_path / "m_00000.weights.h5") as h5:
        assert h5["layers/a/vars"].attrs["name"] == "a"
        np.testing.assert_array_equal(h5["layers/a/vars/0"][()], groups[0].variables[0])
    assert report.verified and report.tensors == 4 and report.bytes == 400 + 12 + 800 + 200


def test_a_group_split_over_shards_keeps_its_name_in_the_first(tmp_path):
    values = [np.full((25,), i, dtype="float32") for i in range(4)]  # 100 bytes each
    write_keras3_sharded(tmp_path / "m.weights.json", [Keras3Group("optimizer", "adam", values)], max_shard_size=250)
    index = json.loads((tmp_path / "m.weights.json").read_text())
    assert index["weight_map"] == {"/optimizer/vars": ["m_00000.weights.h5", "m_00001.weights.h5"]}
    with h5py.File(tmp_path / "m_00000.weights.h5") as a, h5py.File(tmp_path / "m_00001.weights.h5") as b:
        assert sorted(a["optimizer/vars"]) == ["0", "1"] and sorted(b["optimizer/vars"]) == ["2", "3"]
        assert a["optimizer/vars"].attrs["name"] == "adam" and "name" not in b["optimizer/vars"].attrs


def test_sharded_output_refuses_to_replace_existing_files(tmp_path, run_cli):
    out = tmp_path / "t.weights.json"
    assert run_cli("convert", K3_WEIGHTS, "-o", out, "--to", "keras3-h5", "--max-shard-size", "4KB").exit_code == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    res = run_cli("convert", K3_WEIGHTS, "-o", out, "--to", "keras3-h5", "--max-shard-size", "4KB")
    assert res.exit_code != 0 and "exists" in res.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert run_cli("convert", K3_WEIGHTS, "-o", out, "--to", "keras3-h5", "--max-shard-size", "4KB",
                   "--force").exit_code == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("args, message", [
    (["--to", "npz", "-o", "x.npz", "--max-shard-size", "1MB"], "--max-shard-size applies to --to hf or keras3-h5 only"),
    (["--to", "keras3-h5", "-o", "x.weights.h5", "--max-shard-size", "1MB"], "name OUT *.weights.json"),
    (["--to", "keras3-h5", "-o", "x.weights.json", "--max-shard-size", "lots"], "'lots' is not a size"),
    (["--to", "keras3-h5", "-o", "x.weights.json", "--max-shard-size", "0"], "must be more than 0 bytes"),
])
def test_shard_size_usage_errors(tmp_path, run_cli, args, message):
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    res = run_cli("convert", K3_WEIGHTS, *args)
    assert res.exit_code == 2 and message in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_a_non_json_index(tmp_path):
    with pytest.raises(InvalidOutputError, match=r"named \*.weights.json"):
        write_keras3_sharded(tmp_path / "m.weights.h5", [Keras3Group("", "m", [np.zeros(2)])], max_shard_size=10)


@pytest.mark.parametrize("size, unit_bytes", [("2GB", 2 * 10 ** 9), ("1.5GiB", int(1.5 * 2 ** 30)), ("1000", 1000),
                                              ("500kb", 500_000)])
def test_byte_sizes(size, unit_bytes):
    from ckpt_cli.build import ByteSize

    assert ByteSize().convert(size, None, None) == unit_bytes


@pytest.mark.parametrize("source", [SHARDED, UNZIPPED])
def test_sharded_and_directory_sources_convert_to_one_file(tmp_path, source):
    out = tmp_path / "one.weights.h5"
    result = convert_file(CORPUS / source, out, "keras3-h5")
    assert result.ok and result.written.verified
    with formats.open_checkpoint(out) as one, formats.open_checkpoint(CORPUS / source) as src:
        assert one.format == "keras3-h5"
        model = sorted(k for k in src if not k.startswith("optimizer/"))
        assert sorted(k for k in one if not k.startswith("optimizer/")) == model
        assert set(one) <= set(src)  # optimizer state comes along where the source names it (issue 16)
        for key in one:
            assert digest(one[key].read()) == MORE[source]["tensors"][key]["sha256"]
        total = sum(math.prod(one[k].shape) * np.dtype(one[k].dtype).itemsize for k in one)
    assert total == result.written.bytes
