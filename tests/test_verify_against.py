"""``ckpt verify OUT --against SRC`` and the comparison behind it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import formats
from formats.core.roundtrip import compare_checkpoints, tensor_digest

from .conftest import CORPUS, MANIFEST

ADAM = CORPUS / "tf1_adam" / "model.ckpt-200"


def _copy(tmp_path: Path, src: Path, change=None) -> Path:
    out = tmp_path / "out" / "ckpt"
    with formats.open_checkpoint(src) as ckpt:
        tensors = dict(ckpt)
        if change:
            change(tensors)
        formats.write_checkpoint(out, tensors)
    return out


def test_same_checkpoint_exit_0(run_cli, tmp_path):
    out = _copy(tmp_path, ADAM)
    result = run_cli("verify", out, "--against", ADAM)
    assert result.exit_code == 0
    assert result.stdout == f"same {out} against {ADAM}: 21 tensors, 1.6 KiB compared\n"


def test_differences_listed_exit_1(run_cli, tmp_path):
    def change(t):
        t["global_step"] = np.int64(7)
        t["beta1_power"] = np.zeros((2,), np.float32)
        t["dnn/logits/bias"] = np.zeros((3,), np.float64)
        del t["dnn/logits/kernel"]
        t["extra"] = b"x"

    out = _copy(tmp_path, ADAM, change)
    result = run_cli("verify", out, "--against", ADAM)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "KEY                DIFFERENCE  DETAIL",
        "dnn/logits/kernel  missing     not in the output",
        "beta1_power        shape       shape [2], source has []",
        "dnn/logits/bias    dtype       dtype float64, source has float32",
        "extra              unexpected  not in the source",
        "global_step        value       values differ, first at element 0 of 1",
        f"5 differences {out} against {ADAM}: 20 tensors, 1.6 KiB compared",
    ]


def test_json_report(run_cli, tmp_path):
    out = _copy(tmp_path, ADAM, lambda t: t.update({"global_step": np.int64(7)}))
    result = run_cli("verify", out, "--against", ADAM, "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["same"], data["tensors"], data["path"], data["against"]) == (False, 21, str(out), str(ADAM))
    assert data["mismatches"] == [{"key": "global_step", "kind": "value",
                                   "message": "values differ, first at element 0 of 1"}]


def test_first_differing_element_is_reported(tmp_path):
    src = {"w": np.arange(1000, dtype=np.float32)}
    changed = src["w"].copy()
    changed[777] = -1
    formats.write_checkpoint(tmp_path / "a", src)
    formats.write_checkpoint(tmp_path / "b", {"w": changed})
    with formats.open_checkpoint(tmp_path / "a") as a, formats.open_checkpoint(tmp_path / "b") as b:
        report = compare_checkpoints(b, a, chunk=64)  # the difference lies in the 49th chunk
    assert [(m.key, m.kind, m.message) for m in report.mismatches] == \
        [("w", "value", "values differ, first at element 777 of 1000")]


def test_damaged_output_is_a_difference(run_cli, tmp_path):
    out = _copy(tmp_path, ADAM)
    data = Path(str(out) + ".data-00000-of-00001")
    blob = bytearray(data.read_bytes())
    blob[0] ^= 1  # beta1_power, the first tensor
    data.write_bytes(bytes(blob))
    result = run_cli("verify", out, "--against", ADAM, "--json")
    assert result.exit_code == 1
    [m] = json.loads(result.stdout)["mismatches"]
    assert (m["key"], m["kind"]) == ("beta1_power", "unreadable") and "checksum mismatch" in m["message"]


def test_unreadable_exit_3(run_cli, tmp_path):
    result = run_cli("verify", tmp_path / "nothing", "--against", ADAM)
    assert result.exit_code == 3
    assert result.stderr.startswith(f"ckpt: error: {tmp_path / 'nothing'}")
    result = run_cli("verify", ADAM, "--against", tmp_path / "nothing")
    assert result.exit_code == 3


def test_strings_variants_and_partitioned_compare_equal(tmp_path):
    for rel in ("seed_keras2/tf_ckpts/ckpt-10", "tf1_partitioned/model.ckpt-200", "tf2_mixed/all_dtypes/ckpt-1"):
        out = _copy(tmp_path / rel.replace("/", "_"), CORPUS / rel)
        with formats.open_checkpoint(out) as a, formats.open_checkpoint(CORPUS / rel) as b:
            report = compare_checkpoints(a, b)
        assert report.ok and report.tensors == len(MANIFEST[rel]["tensors"]), rel


def test_tensor_digest_is_the_manifest_sha256():
    rel = "tf2_mixed/all_dtypes/ckpt-1"
    with formats.open_checkpoint(CORPUS / rel) as ckpt:
        for key, want in MANIFEST[rel]["tensors"].items():
            assert tensor_digest(ckpt[key], chunk=7) == want["sha256"], key


def test_plain_verify_unchanged(run_cli):
    result = run_cli("verify", ADAM)
    assert result.exit_code == 0 and result.stdout.startswith(f"ok {ADAM}: tf-name, checked 21 tensors")


ESTIMATOR = CORPUS / "tf1_estimator" / "model.ckpt-200"


def test_an_object_based_conversion_against_its_name_based_source(run_cli, tmp_path):
    out = tmp_path / "conv" / "ckpt-1"
    assert run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object").exit_code == 0
    by_key = run_cli("verify", out, "--against", ESTIMATOR)
    assert by_key.exit_code == 1
    assert "ckpt: hint: no key is in both checkpoints, but 13 tensors pair by variable name: try --match name" \
        in by_key.stderr
    by_name = run_cli("verify", out, "--against", ESTIMATOR, "--match", "name", "--json")
    assert by_name.exit_code == 0, by_name.output
    doc = json.loads(by_name.stdout)
    assert (doc["same"], doc["tensors"], doc["mismatches"]) == (True, len(MANIFEST[
        "tf1_estimator/model.ckpt-200"]["tensors"]), [])


def test_rules_rename_the_source_as_the_conversion_did(run_cli, tmp_path):
    out = tmp_path / "conv" / "ckpt-1"
    rule = ["--map", "dnn/logits=head"]
    assert run_cli("convert", ESTIMATOR, "-o", out, "--to", "tf-object", *rule).exit_code == 0
    without = run_cli("verify", out, "--against", ESTIMATOR, "--match", "name", "--json")
    assert without.exit_code == 1
    assert sorted(m["kind"] for m in json.loads(without.stdout)["mismatches"]) == ["missing"] * 4 + ["unexpected"] * 4
    renamed = run_cli("verify", out, "--against", ESTIMATOR, "--match", "name", *rule, "--map", "nothing=x")
    assert renamed.exit_code == 0, renamed.output
    assert renamed.stdout.startswith("same ") and "13 tensors" in renamed.stdout
    assert "ckpt: warning: rule --map nothing=x matched nothing" in renamed.stderr


def test_pairing_options_need_against(run_cli):
    result = run_cli("verify", ESTIMATOR, "--match", "name")
    assert result.exit_code == 2 and "use them with --against" in result.stderr
