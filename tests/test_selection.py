"""One key selection (formats.core.selection) with one behaviour in ls, stats, extract, show, trend and diff:
exact keys or globs on the whole key; a pattern that selects nothing is exit 1 with a message, a warning in ls."""
from __future__ import annotations

import fnmatch
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.api import open_checkpoint
from formats.core.errors import NothingSelectedError, TensorNotFoundError
from formats.core.selection import is_glob, nothing_selected, select, select_keys

from .conftest import CORPUS, MANIFEST

EST1, EST200 = "tf1_estimator/model.ckpt-1", "tf1_estimator/model.ckpt-200"
KEYS200 = sorted(MANIFEST[EST200]["tensors"])
RUN = CORPUS / "seed_slots/tf_ckpts"
HINT = "patterns are exact keys or globs on the whole key"


# -- the function ----------------------------------------------------------------------------------
KEYS = ["a/kernel", "a/bias", "b/kernel", "x[0]", "kernel", "A/kernel"]


@pytest.mark.parametrize("patterns, selected, unmatched", [
    ([], KEYS, []),
    (["kernel"], ["kernel"], []),  # whole key: not a substring
    (["*kernel*"], ["a/kernel", "b/kernel", "kernel", "A/kernel"], []),
    (["*"], KEYS, []),  # * crosses /
    (["x[0]"], ["x[0]"], []),  # an exact key wins although [0] is a glob class
    (["a/*"], ["a/kernel", "a/bias"], []),  # case-sensitive
    (["a/*", "zz*", "nope", "a/*"], ["a/kernel", "a/bias"], ["zz*", "nope"]),  # repeated once, order kept
    (["?/bias"], ["a/bias"], []),
])
def test_select_keys(patterns, selected, unmatched):
    assert select_keys(KEYS, patterns) == (selected, unmatched)


def test_select_keys_agrees_with_fnmatchcase_on_the_corpus():
    for pattern in ("dnn/*", "*/kernel", "dnn/hiddenlayer_[01]/*", "*Adagrad", "global_step"):
        expected = [k for k in KEYS200 if fnmatch.fnmatchcase(k, pattern)]
        assert select_keys(KEYS200, [pattern]) == (expected, []), pattern


def test_is_glob():
    assert [is_glob(p) for p in ("a/b", "a*", "a?", "a[0]", "")] == [False, True, True, True, False]


def test_select_sorts_and_raises_naming_every_unmatched_pattern():
    with open_checkpoint(CORPUS / EST200) as ckpt:
        assert [e.key for e in select(ckpt, ["global_step", "dnn/logits/*"])] == \
            ["dnn/logits/bias", "dnn/logits/bias/Adagrad", "dnn/logits/kernel", "dnn/logits/kernel/Adagrad",
             "global_step"]
        assert [e.key for e in select(ckpt, [])] == KEYS200
        with pytest.raises(NothingSelectedError) as info:
            select(ckpt, ["dnn/*", "kernel", "nett/*"])
    exc = info.value
    assert isinstance(exc, TensorNotFoundError) and isinstance(exc, KeyError) and exc.exit_code == 1
    assert exc.patterns == ("kernel", "nett/*") and exc.path == str(CORPUS / EST200)
    assert str(exc) == f"{CORPUS / EST200}: no key matches 'kernel' or 'nett/*'"
    assert exc.hint == f"{HINT}: try '*kernel*'"


def test_nothing_selected_wording():
    exc = nothing_selected("p", ["w"], "name")
    assert (str(exc), exc.hint) == ("p: no name matches 'w'", "patterns are exact names or globs on the whole "
                                                              "name: try '*w*'")


# -- ls: a warning ---------------------------------------------------------------------------------
def test_ls_filter_matching_nothing_warns_and_exits_0(run_cli):
    result = run_cli("ls", CORPUS / EST200, "-f", "kernel")
    assert result.exit_code == 0
    assert result.stderr == (f"ckpt: warning: {CORPUS / EST200}: no key matches 'kernel' ({HINT}: try "
                             "'*kernel*')\n")
    assert "0 tensors shown of 13" in result.stdout
    tree = run_cli("ls", "--tree", CORPUS / EST200, "-f", "kernel")
    assert tree.exit_code == 0 and tree.stderr == result.stderr


def test_ls_filter_selects_whole_keys_and_warns_only_for_the_unmatched(run_cli):
    result = run_cli("ls", "--json", CORPUS / EST200, "-f", "*kernel*", "-f", "nett/*")
    assert result.exit_code == 0
    assert [t["key"] for t in json.loads(result.stdout)["tensors"]] == [k for k in KEYS200 if "kernel" in k]
    assert result.stderr == f"ckpt: warning: {CORPUS / EST200}: no key matches 'nett/*' ({HINT})\n"
    assert run_cli("ls", CORPUS / EST200, "-f", "global_step").stderr == ""


# -- commands that act on the selection: exit 1 ----------------------------------------------------
def test_stats_names_only_the_patterns_that_match_nothing(run_cli):
    result = run_cli("stats", "--json", CORPUS / EST200, "global_step", "nett/*", "kernel")
    assert result.exit_code == 1  # --json: the error as the document on stdout too (issue 24, item 8)
    assert json.loads(result.stdout)["error"] == f"{CORPUS / EST200}: no key matches 'nett/*' or 'kernel'"
    assert result.stderr.splitlines() == [f"ckpt: error: {CORPUS / EST200}: no key matches 'nett/*' or 'kernel'",
                                          f"  hint: {HINT}: try '*kernel*'"]


def test_extract_of_nothing_writes_nothing(run_cli, tmp_path):
    result = run_cli("extract", CORPUS / EST200, "kernel", "-o", tmp_path / "out.npz")
    assert result.exit_code == 1 and list(tmp_path.iterdir()) == []
    assert result.stderr.splitlines()[0] == f"ckpt: error: {CORPUS / EST200}: no key matches 'kernel'"


def test_show_of_a_missing_key_is_1(run_cli):
    result = run_cli("show", CORPUS / EST200, "kernel")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"ckpt: error: {CORPUS / EST200}: no tensor named 'kernel'",
                                          "  hint: did you mean 'dnn/logits/kernel' or 'dnn/hiddenlayer_0/kernel' or "
                                          "'dnn/hiddenlayer_1/kernel'?"]


def test_trend_selection_matching_nothing_is_1(run_cli):
    result = run_cli("trend", RUN, "nomatch")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"ckpt: error: {RUN}: no key matches 'nomatch'",
                                          f"  hint: {HINT}: try '*nomatch*'"]


def test_trend_pattern_needs_to_match_in_one_checkpoint_only(run_cli, tmp_path):
    from formats import write_checkpoint

    run = tmp_path / "run"
    write_checkpoint(run / "ckpt-1", {"a": np.array([1.0, 2.0], dtype=np.float32)})
    write_checkpoint(run / "ckpt-2", {"a": np.array([1.0, 2.0], dtype=np.float32),
                                      "b": np.array([3.0, 4.0], dtype=np.float32)})
    result = run_cli("trend", "--json", run, "b")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [v["key"] for v in doc["variables"]] == ["b"]
    assert doc["variables"][0]["norm"] == [None, pytest.approx(5.0)]


def test_diff_filter_keeps_only_selected_pairs(run_cli):
    result = run_cli("diff", "--json", "-f", "dnn/logits/*", CORPUS / EST1, CORPUS / EST200)
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    with open_checkpoint(CORPUS / EST1) as a, open_checkpoint(CORPUS / EST200) as b:
        wanted = [k for k in KEYS200 if k.startswith("dnn/logits/")]
        differ = [k for k in wanted if not np.array_equal(a[k].read(), b[k].read())]
    assert [c["key"] for c in doc["changed"]] == differ and doc["same"] == len(wanted) - len(differ)
    assert doc["only_in_a"] == doc["only_in_b"] == []


def test_diff_filter_selects_names_after_the_rules(run_cli):
    result = run_cli("diff", "--json", "--keys-only", "--map", "dnn/logits=head", "-f", "head/*",
                     CORPUS / EST200, CORPUS / EST200)
    doc = json.loads(result.stdout)
    assert doc["only_in_a"] == [k for k in KEYS200 if k.startswith("dnn/logits/")]
    assert doc["only_in_b"] == [] and doc["changed"] == [] and doc["same"] == 0 and result.exit_code == 1


def test_diff_filter_matching_nothing_is_1_not_a_difference(run_cli):
    result = run_cli("-q", "diff", "-f", "zz*", "--match", "name", CORPUS / EST200, CORPUS / EST200)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"ckpt: error: {CORPUS / EST200}, {CORPUS / EST200}: no name matches 'zz*'",
        "  hint: patterns are exact names or globs on the whole name"]
    assert run_cli("-q", "diff", "-f", "dnn/*", CORPUS / EST200, CORPUS / EST200).exit_code == 0


def _select_keys_one_by_one(keys, patterns):
    """What select_keys said when it matched each key against each pattern in turn (its definition, kept here as
    the oracle of the version that filters every key through each pattern's compiled glob)."""
    import fnmatch
    import re

    from formats.core.selection import is_glob

    if not patterns:
        return list(keys), []
    matchers = []
    for p in dict.fromkeys(patterns):
        if is_glob(p):
            glob = re.compile(fnmatch.translate(p)).match
            matchers.append((p, lambda key, p=p, glob=glob: key == p or glob(key) is not None))
        else:
            matchers.append((p, p.__eq__))
    used, selected = set(), []
    for key in keys:
        hits = [p for p, match in matchers if match(key)]
        if hits:
            selected.append(key)
            used.update(hits)
    return selected, [p for p, _ in matchers if p not in used]


_KEY_TEXT = st.text(alphabet="ab/*?[]!._0", max_size=6)


@given(st.lists(_KEY_TEXT, max_size=12), st.lists(_KEY_TEXT, max_size=4))
@settings(max_examples=400, deadline=None)
def test_select_keys_filters_as_matching_each_key_in_turn_did(keys, patterns):
    """Keys in the order given (a key given twice, twice), a glob that is also a key matching it as it is, a
    pattern given twice once, the patterns that match nothing in order."""
    from formats.core.selection import select_keys

    assert select_keys(keys, patterns) == _select_keys_one_by_one(keys, patterns)
    assert select_keys(iter(keys), patterns) == _select_keys_one_by_one(keys, patterns)
