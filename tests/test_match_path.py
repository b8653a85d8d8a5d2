"""``--match path`` (issue 36, section 3): object-based checkpoints paired by object path, as
``tf.train.Checkpoint.restore`` binds them, in ``diff``, ``verify --against`` and ``doctor``, on both front ends.

The checkpoints are the Training-checkpoints guide's program on TF >= 2.16 (tests/data/corpus/tf216_guide/two_dense),
whose two Keras 3 Dense layers share the full names ``net_1/kernel`` and ``net_1/bias``, and a copy renamed with
``ckpt rename --map net=model``. Expected pairs are written out or computed here from the raw keys (a key without
``/.ATTRIBUTES/VARIABLE_VALUE``) and values read key by key with numpy, never through the pairing under test.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import formats
from formats.core.errors import UsageError
from tests.conftest import CORPUS, SHIPPED

TWO = CORPUS / "tf216_guide" / "two_dense"
CKPT8, CKPT10 = TWO / "tf_ckpts" / "ckpt-8", TWO / "tf_ckpts" / "ckpt-10"
H5 = TWO / "template.weights.h5"
NAME_BASED = CORPUS / "tf1_estimator" / "model.ckpt-200"
MANIFEST = json.loads((CORPUS / "manifest_tf216.json").read_text())["entries"]
VV = "/.ATTRIBUTES/VARIABLE_VALUE"
GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
DENSE = ["net/l1/_kernel", "net/l1/bias", "net/l2/_kernel", "net/l2/bias"]
HINT = ("ckpt: hint: 2 full name(s) are shared by several tensors ('net_1/bias', 'net_1/kernel'), so pairing by name "
        "leaves 4 tensor(s) unpaired: use --match path to pair them by object path, as tf.train.Checkpoint.restore "
        "does")


def _path(key: str) -> str:
    return key[:-len(VV)] if key.endswith(VV) else key


@pytest.fixture(params=["fast", "click"])
def ckpt(request):
    """``ckpt`` through the shipped entry point (the fast path) or the click CLI alone: the same results."""
    from ckpt_cli.main import cli

    command = SHIPPED if request.param == "fast" else cli

    def run(*args: object):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)

    return run


@pytest.fixture(scope="module")
def renamed(tmp_path_factory) -> Path:
    """ckpt-10 with every ``net`` object renamed ``model`` (``ckpt rename --map net=model``)."""
    out = tmp_path_factory.mktemp("renamed") / "ckpt-10"
    result = CliRunner().invoke(SHIPPED, ["rename", str(CKPT10), "-o", str(out), "--map", "net=model"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with formats.open_checkpoint(out) as ren:
        assert sorted(k for k in ren if k.startswith("model/")) == sorted(f"model/{p[4:]}{VV}" for p in DENSE)
    return out


def _raw(path: Path) -> dict[str, np.ndarray]:
    with formats.open_checkpoint(path) as c:
        return {key: np.asarray(c[key].read()) for key in c}


def test_a_checkpoint_and_itself_are_identical_by_path(ckpt):
    result = ckpt("diff", "--match", "path", CKPT10, CKPT10, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == {"a": str(CKPT10), "b": str(CKPT10), "only_in_a": [], "only_in_b": [], "changed": [],
                   "same": len(MANIFEST["tf216_guide/two_dense/tf_ckpts/ckpt-10"]["tensors"]) - 1}  # graph left out
    result = ckpt("diff", "--match", "path", CKPT10, CKPT10)
    assert result.exit_code == 0
    assert result.stdout.strip() == f"{CKPT10} vs {CKPT10}: identical (17 tensors; compared bytewise)"


def test_ckpt8_against_ckpt10_changes_the_tensors_numpy_finds(ckpt, renamed):
    a, b = _raw(CKPT8), _raw(CKPT10)
    assert sorted(a) == sorted(b)
    changed = {}
    for key in a:
        if key == GRAPH:
            continue
        if a[key].dtype == object:  # the iterator's variant: compared as the bytes of each element
            differ = [bytes(x) for x in a[key].ravel()] != [bytes(y) for y in b[key].ravel()]
            changed[_path(key)] = None if differ else "same"
        elif not np.array_equal(a[key], b[key]):
            changed[_path(key)] = float(np.max(np.abs(a[key].astype(np.float64) - b[key].astype(np.float64))))
    changed = {k: v for k, v in changed.items() if v != "same"}
    # what TensorFlow's own reader recorded agrees: every variable but the learning rate moved
    before, after = (MANIFEST[f"tf216_guide/two_dense/tf_ckpts/{n}"]["tensors"] for n in ("ckpt-8", "ckpt-10"))
    moved = {_path(k) for k in before if before[k]["sha256"] is not None and before[k]["sha256"] != after[k]["sha256"]}
    assert moved == set(changed) - {"iterator/.ATTRIBUTES/ITERATOR_STATE"}
    assert "optimizer/_learning_rate" not in changed and set(DENSE) <= set(changed)

    for b_side, extra in ((CKPT10, ()), (renamed, ("--map", "net=model"))):
        result = ckpt("diff", "--match", "path", CKPT8, b_side, "--json", *extra)
        assert result.exit_code == 1, result.output
        doc = json.loads(result.stdout)
        assert doc["only_in_a"] == [] and doc["only_in_b"] == []
        assert doc["same"] == 17 - len(changed) == 1
        # each pair under A's object path, renamed by the rules to B's: A's key with B's key
        as_b = {(p.replace("net/", "model/", 1) if extra and p.startswith("net/") else p): p for p in changed}
        assert [c["key"] for c in doc["changed"]] == sorted(as_b)
        for c in doc["changed"]:
            path = as_b[c["key"]]
            suffix = VV if path + VV in a else ""
            assert (c["a"]["key"], c["b"]["key"]) == (path + suffix, c["key"] + suffix)
            if changed[path] is not None:
                assert c["max_abs_diff"] == pytest.approx(changed[path], rel=1e-12)


def test_a_renamed_copy_pairs_by_path_once_renamed_back(ckpt, renamed):
    result = ckpt("diff", "--match", "path", CKPT10, renamed, "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["only_in_a"] == [p + VV for p in DENSE]
    assert doc["only_in_b"] == [p.replace("net/", "model/") + VV for p in DENSE]
    assert doc["changed"] == [] and doc["same"] == 13
    same = ckpt("diff", "--match", "path", CKPT10, renamed, "--map", "net=model")
    assert same.exit_code == 0, same.output
    assert same.stdout.strip() == f"{CKPT10} vs {renamed}: identical (17 tensors; compared bytewise)"
    stripped = ckpt("diff", "--match", "path", renamed, CKPT10, "--strip-prefix-a", "model", "--strip-prefix-b", "net",
                    "--json")
    assert stripped.exit_code == 0, stripped.output
    assert json.loads(stripped.stdout)["same"] == 17
    only = ckpt("diff", "--match", "path", CKPT8, CKPT10, "-f", "net/l2/*", "--json")
    assert only.exit_code == 1
    assert [c["key"] for c in json.loads(only.stdout)["changed"]] == ["net/l2/_kernel", "net/l2/bias"]


def test_match_name_names_the_clash_and_hints_match_path(ckpt, renamed):
    result = ckpt("diff", "--match", "name", CKPT10, renamed, "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["only_in_a"] == ["net/l2/_kernel" + VV, "net/l2/bias" + VV]
    assert doc["only_in_b"] == ["model/l2/_kernel" + VV, "model/l2/bias" + VV]
    lines = result.stderr.splitlines()
    assert HINT in lines
    assert (f"ckpt: warning: A: 'net/l2/_kernel{VV}' and 'net/l1/_kernel{VV}' both match as 'net_1/kernel'; "
            f"'net/l2/_kernel{VV}' left unmatched") in lines
    verified = ckpt("verify", renamed, "--against", CKPT10, "--match", "name")
    assert HINT in verified.stderr.splitlines()
    assert "both pair as 'net_1/kernel'" in verified.stderr
    doctor = ckpt("doctor", renamed, "--against", CKPT10, "--match", "name")
    assert HINT in doctor.stderr.splitlines()
    # no shared names, no hint
    plain = ckpt("diff", "--match", "name", NAME_BASED, NAME_BASED)
    assert plain.exit_code == 0 and "--match path" not in plain.stderr


def test_verify_against_by_path(ckpt, renamed):
    result = ckpt("verify", renamed, "--against", CKPT10, "--match", "path", "--map", "net=model", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["same"] is True and doc["tensors"] == 17 and doc["mismatches"] == []
    unmapped = ckpt("verify", renamed, "--against", CKPT10, "--match", "path", "--json")
    assert unmapped.exit_code == 1
    missing = sorted(m["key"] for m in json.loads(unmapped.stdout)["mismatches"] if m["kind"] == "missing")
    assert missing == DENSE


def test_doctor_chooses_the_pairing(ckpt, renamed):
    for match in ("auto", "path"):
        result = ckpt("doctor", renamed, "--against", CKPT10, "--match", match, "--json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["matched_by"] == "object path"
        assert doc["bound"] == {p: p.replace("net/", "model/") for p in DENSE}
    by_name = ckpt("doctor", renamed, "--against", CKPT10, "--match", "name", "--json")
    assert json.loads(by_name.stdout)["matched_by"] == "name"


@pytest.mark.parametrize("argv", [
    ("diff", "--match", "path", CKPT10, H5),
    ("diff", "--match", "path", NAME_BASED, CKPT10),
    ("verify", CKPT10, "--against", H5, "--match", "path"),
    ("doctor", CKPT10, "--against", NAME_BASED, "--match", "path"),
])
def test_a_side_without_object_paths_is_refused_in_one_line(ckpt, argv):
    result = ckpt(*argv)
    assert result.exit_code == 2, result.output
    bad, fmt = (H5, "keras3-h5") if H5 in argv else (NAME_BASED, "tf-name")
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"ckpt: error: {bad}: a {fmt} checkpoint has no object graph, so its tensors have no object paths to pair by",
        "  hint: use --match name to pair by variable name"]


def test_slot_variables_pair_under_their_variables_path(ckpt):
    folder = CORPUS / "seed_slots" / "tf_ckpts"
    with formats.open_checkpoint(folder / "ckpt-5") as c:
        slots = sorted(_path(k) for k in c if "/.OPTIMIZER_SLOT/" in k)
    assert "net/l1/bias/.OPTIMIZER_SLOT/optimizer/m" in slots
    result = ckpt("diff", "--match", "path", folder / "ckpt-4", folder / "ckpt-5", "--json")
    keys = {c["key"] for c in json.loads(result.stdout)["changed"]}
    assert set(slots) <= keys


def test_library_words_and_errors():
    from formats import verbs

    with pytest.raises(UsageError) as caught:
        verbs.diff(CKPT10, H5, match="path")
    assert caught.value.hint == 'pass match="name" to pair by variable name'
    assert verbs.diff(CKPT10, CKPT10, match="path").equal
    from formats.ops.compare.keying import match_path_hint

    with formats.open_checkpoint(CKPT10) as a, formats.open_checkpoint(CKPT8) as b:
        assert 'pass match="path"' in (match_path_hint(a, b) or "")


def test_help_and_completion_offer_path():
    from ckpt_cli.main import cli

    choices = {"diff": "key|name|path|converted", "verify": "key|name|path", "doctor": "auto|path|name"}
    for command, shown in choices.items():
        out = CliRunner().invoke(cli, [command, "--help"], terminal_width=200).output
        assert f"--match [{shown}]" in out, command
    env = dict(os.environ, COMP_WORDS="ckpt diff --match ", COMP_CWORD="3", _CKPT_COMPLETE="bash_complete")
    done = subprocess.run([sys.executable, "-m", "ckpt_cli"], env=env, capture_output=True, text=True, check=True)
    assert [line.split(",", 1)[1] for line in done.stdout.splitlines()] == ["key", "name", "path", "converted"]
