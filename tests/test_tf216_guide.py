"""The Training-checkpoints guide's program on TensorFlow >= 2.16 (Keras 3), from tests/data/corpus/tf216_guide
(issue 36, section 3): its Dense layers share one full name (``net_1/kernel``), and every command pairs by
object path where names cannot. Expected values come from manifest_tf216.json (TensorFlow's own reader and
h5py) and from TensorFlow's restore as the generator recorded it; tests/interop/test_tf216_guide_tf.py asks
TensorFlow and Keras themselves."""
from __future__ import annotations

import json

import numpy as np

import formats
from tests.conftest import CORPUS, digest

GUIDE = CORPUS / "tf216_guide"
TWO = GUIDE / "two_dense"
MANIFEST = json.loads((CORPUS / "manifest_tf216.json").read_text())
ENTRIES = MANIFEST["entries"]
VV = "/.ATTRIBUTES/VARIABLE_VALUE"


def test_the_corpus_is_what_tensorflow_read():
    bundles = {k: v for k, v in ENTRIES.items() if v["format"] == "tf-bundle"}
    assert len(bundles) == 12
    for rel, want in bundles.items():
        with formats.open_checkpoint(CORPUS / rel) as ckpt:
            assert sorted(ckpt) == sorted(want["tensors"]), rel
            for key, t in want["tensors"].items():
                assert list(ckpt[key].shape) == t["shape"], (rel, key)
                if t["sha256"] is not None:
                    assert digest(ckpt[key].read()) == t["sha256"], (rel, key)
    names = {a[2]: a[1] for n in ENTRIES["tf216_guide/two_dense/tf_ckpts/ckpt-10"]["object_graph"] for a in n["attributes"]}
    assert names["net/l1/_kernel" + VV] == names["net/l2/_kernel" + VV] == "net_1/kernel"


def test_extract_to_a_directory_names_files_by_object_path(run_cli, tmp_path):
    out = tmp_path / "arrays"
    result = run_cli("extract", TWO / "tf_ckpts", "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    assert ("note named by object path, not by variable name: 2 name(s) are shared by several tensors "
            "('net_1/bias' (2 tensors), 'net_1/kernel' (2 tensors))") in result.output
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.npy"))
    want = ENTRIES["tf216_guide/two_dense/tf_ckpts/ckpt-10"]["tensors"]
    keys = [k for k in want if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert files == sorted((k[:-len(VV)] if k.endswith(VV) else k) + ".npy" for k in keys)
    for key in keys:
        if want[key]["sha256"] is not None:
            rel = (key[:-len(VV)] if key.endswith(VV) else key) + ".npy"
            assert digest(np.load(out / rel)) == want[key]["sha256"], key
    refused = run_cli("extract", TWO / "tf_ckpts", "-o", f"{tmp_path / 'named'}/", "--by", "name")
    assert refused.exit_code == 4
    assert ("'net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE' and 'net/l2/_kernel/.ATTRIBUTES/VARIABLE_VALUE' are both "
            "named 'net_1/kernel'") in refused.stderr
    assert "--by path" in refused.stderr


def test_convert_onto_a_keras3_template_pairs_by_object_path_and_keeps_adam(run_cli, tmp_path):
    out = tmp_path / "net.weights.h5"
    result = run_cli("convert", TWO / "tf_ckpts", "--to", "keras3-h5", "--template", TWO / "template.weights.h5",
                     "-o", out)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}: 14 tensors" in result.stdout and "0 errors" in result.stdout
    source = ENTRIES["tf216_guide/two_dense/tf_ckpts/ckpt-10"]["tensors"]
    expected = {"l1/vars/0": "net/l1/_kernel", "l1/vars/1": "net/l1/bias", "l2/vars/0": "net/l2/_kernel",
                "l2/vars/1": "net/l2/bias", "optimizer/vars/0": "optimizer/_iterations",
                **{f"optimizer/vars/{i}": f"optimizer/_variables/{i}" for i in range(2, 10)}}
    with formats.open_checkpoint(out) as ckpt:
        assert sorted(ckpt) == sorted([*expected, "optimizer/vars/1"])
        for key, src in expected.items():
            assert digest(ckpt[key].read()) == source[src + VV]["sha256"], key
        assert ckpt["optimizer/vars/0"].read().tolist() == 99  # ckpt.step starts at 1: saved at 100 after 99 steps


def test_doctor_binds_by_object_path_as_tensorflow_restores(run_cli, tmp_path):
    moved = run_cli("doctor", TWO / "moved" / "tf_ckpts", "--against", TWO / "tf_ckpts", "--json")
    report = json.loads(moved.stdout)
    # TensorFlow restored the moved layer (through the optimizer's _trainable_variables) and matched every object
    assert MANIFEST["restore"]["tf216_guide/two_dense/moved/tf_ckpts"]["assert_existing_objects_matched"] is True
    assert moved.exit_code == 0 and report["would_load"] is True and report["matched_by"] == "object path"
    assert report["bound"] == {"net/l1/_kernel": "net/dense/_kernel", "net/l1/bias": "net/dense/bias"}
    assert report["duplicate_names"]["target"] == {
        "net_1/bias": ["net/l1/bias" + VV, "net/l2/bias" + VV],
        "net_1/kernel": ["net/l1/_kernel" + VV, "net/l2/_kernel" + VV]}
    renamed = tmp_path / "renamed" / "ckpt-10"
    assert run_cli("rename", TWO / "tf_ckpts" / "ckpt-10", "--add-prefix", "model", "-o", renamed).exit_code == 0
    result = run_cli("doctor", renamed, "--against", TWO / "tf_ckpts")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == (f"{renamed} would NOT load into {TWO / 'tf_ckpts' / 'ckpt-10'} (by object "
                                              "path): 17 missing, 0 mismatched, 17 unexpected")


def test_ls_names_flags_shared_full_names(run_cli):
    result = run_cli("ls", TWO / "tf_ckpts" / "ckpt-10", "--names")
    assert result.exit_code == 0
    assert (f"warning: {TWO / 'tf_ckpts' / 'ckpt-10'}: 2 name(s) are shared by several variables ('net_1/bias' "
            "(2 variables), 'net_1/kernel' (2 variables)); their keys (object paths) tell them apart, as "
            "tf.train.Checkpoint.restore does") in result.stderr
    single = run_cli("ls", GUIDE / "guide" / "tf_ckpts" / "ckpt-10", "--names")
    assert single.exit_code == 0 and "shared" not in single.stderr
