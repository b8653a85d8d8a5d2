"""`ckpt ls` and `ckpt verify` from the outside: JSON against the manifest, tables, exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import CORPUS, MANIFEST, entries_of, numbers_by_value

BUNDLES = entries_of("tf-bundle")
GUIDE_BUNDLES = sorted(k for k, v in json.loads((CORPUS / "manifest_tf216.json").read_text())["entries"].items()
                       if v["format"] == "tf-bundle")
"""The TF 2.16 guide's checkpoints (their own manifest, tests/data/corpus/manifest_tf216.json)."""


STATES = entries_of("checkpoint-state")


@pytest.mark.parametrize("rel", BUNDLES)
def test_ls_json_lists_exactly_what_tensorflow_lists(run_cli, rel):
    result = run_cli("ls", "--json", CORPUS / rel)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["path"] == str(CORPUS / rel)
    assert doc["format"] == ("tf-object" if MANIFEST[rel]["object_graph"] else "tf-name")
    got = {t["key"]: (t["shape"], t["dtype"]) for t in doc["tensors"]}
    want = {k: (v["shape"], v["dtype"]) for k, v in MANIFEST[rel]["tensors"].items()}
    assert got == want
    assert [t["key"] for t in doc["tensors"]] == sorted(want, key=numbers_by_value)  # vars/2 before vars/10
    assert all(isinstance(t["nbytes"], int) and t["nbytes"] >= 0 for t in doc["tensors"])


@pytest.mark.parametrize("rel", STATES)
def test_ls_json_on_a_directory_lists_its_checkpoints(run_cli, rel):
    folder = CORPUS / os.path.dirname(rel)
    result = run_cli("ls", "--json", folder)
    assert result.exit_code in (0, 1), result.stderr  # 1 only if a sibling file is unreadable
    doc = json.loads(result.stdout)
    assert doc["path"] == str(folder)
    rows = {os.path.relpath(c["path"], folder): c for c in doc["checkpoints"]}
    state = MANIFEST[rel]
    latest = os.path.basename(state["latest"])  # stale absolute paths fall back to the basename
    for name in map(os.path.basename, state["all"]):
        row = rows[name]
        bundle = MANIFEST[os.path.join(os.path.dirname(rel), name)]
        assert row["tensors"] == len(bundle["tensors"])
        assert row["latest"] == (name == latest)
        assert row["format"] == ("tf-object" if bundle["object_graph"] else "tf-name")
    assert [r["path"] for r in doc["checkpoints"] if r["latest"]] == [str(folder / latest)]


def test_ls_directory_steps_and_order(run_cli):
    doc = json.loads(run_cli("ls", "--json", CORPUS / "seed_keras2/tf_ckpts").stdout)
    assert [(os.path.basename(c["path"]), c["step"]) for c in doc["checkpoints"]] == \
        [("ckpt-8", 8), ("ckpt-9", 9), ("ckpt-10", 10)]


def test_ls_recursive_walks_a_tree_of_runs(run_cli):
    doc = json.loads(run_cli("ls", "-r", "--json", CORPUS).stdout)
    bundles = {os.path.relpath(c["path"], CORPUS) for c in doc["checkpoints"] if c["format"] in ("tf-object", "tf-name")}
    assert bundles == set(BUNDLES) | set(GUIDE_BUNDLES)


def test_ls_filter_and_sort(run_cli):
    path = CORPUS / "tf1_adam/model.ckpt-200"
    doc = json.loads(run_cli("ls", "--json", "--filter", "*/Adam", "--filter", "global_step",
                             "--sort", "size", path).stdout)
    keys = [t["key"] for t in doc["tensors"]]
    assert keys == ["dnn/hiddenlayer_1/kernel/Adam", "dnn/hiddenlayer_0/kernel/Adam", "dnn/logits/kernel/Adam",
                    "dnn/hiddenlayer_0/bias/Adam", "dnn/hiddenlayer_1/bias/Adam", "dnn/logits/bias/Adam",
                    "global_step"]
    assert [t["nbytes"] for t in doc["tensors"]] == [256, 128, 96, 32, 32, 12, 8]


def test_ls_table_output(run_cli):
    result = run_cli("ls", CORPUS / "tf1_partitioned/model.ckpt-1")
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["key", "dtype", "shape", "size"]
    assert lines[-2].split() == ["input_layer/embedding/weights/Adagrad", "float32", "[97,", "8]", "3.0", "KiB"]
    assert lines[-1] == (f"{CORPUS / 'tf1_partitioned/model.ckpt-1'}: tf-name, 11 tensors, 2,071 parameters, "
                         "8.1 KiB, 1 data file")


def test_ls_accepts_index_data_meta_and_directory(run_cli):
    prefix = CORPUS / "tf1_estimator/model.ckpt-200"
    docs = [json.loads(run_cli("ls", "--json", p).stdout) for p in
            (f"{prefix}.index", f"{prefix}.data-00000-of-00001", f"{prefix}.meta")]
    assert {d["path"] for d in docs} == {str(prefix)}


def test_ls_several_paths_gives_a_json_list(run_cli):
    a, b = CORPUS / "tf1_adam/model.ckpt-1", CORPUS / "tf1_estimator/model.ckpt-1"
    docs = json.loads(run_cli("ls", "--json", a, b).stdout)
    assert [d["path"] for d in docs] == [str(a), str(b)]


@pytest.mark.parametrize("rel", BUNDLES)
def test_verify_is_clean_on_the_corpus(run_cli, rel):
    result = run_cli("verify", "--json", CORPUS / rel)
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    assert doc["tensors"] == len(MANIFEST[rel]["tensors"])
    assert sorted(doc["files"])[:-1] == sorted(MANIFEST[rel]["data_files"])


def test_verify_text_output(run_cli):
    result = run_cli("verify", CORPUS / "tf2_mixed/sharded/ckpt")
    assert result.exit_code == 0
    assert result.stdout == (f"ok {CORPUS / 'tf2_mixed/sharded/ckpt'}: tf-object, checked 9 tensors, "
                             "2.0 MiB in 8 files\n")


def test_console_script_and_module_entry_points():
    out = subprocess.run([sys.executable, "-m", "ckpt_cli", "ls", "--json", str(CORPUS / "tf1_adam/model.ckpt-200.index")],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["path"] == str(CORPUS / "tf1_adam/model.ckpt-200")


def test_ls_on_a_pipe_exits_quietly_when_the_reader_goes_away():
    cmd = f"{sys.executable} -m ckpt_cli ls -r {CORPUS} | head -1"
    out = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, text=True)
    assert out.stderr == ""
    assert out.stdout.split()[0] == "checkpoint"
