"""The first mistakes a user makes (issue 36): the hint names the flag that helps, a mistyped key gets the
nearest keys, numbered keys list in number order. On checkpoints written by real TensorFlow/Keras (the corpus).
(Missing required options: tests/test_required_options.py.)"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import CORPUS

LIST_EXAMPLE = CORPUS / "seed_keras2" / "tf_list_example-1"
"""TF2 list/dict tracking: `listed/0` and `listed/1` are both variables named 'Variable'."""


# -- 2. extract's hint on shared names says the flag -------------------------------------------------------------
def test_extract_of_shared_names_names_the_by_key_flag(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "arrays"
    result = run_cli("extract", LIST_EXAMPLE, "-o", f"{out}/")
    assert result.exit_code == 4
    assert result.stderr.splitlines() == [
        f"ckpt: error: {out}/: 'listed/0/.ATTRIBUTES/VARIABLE_VALUE' and 'listed/1/.ATTRIBUTES/VARIABLE_VALUE' "
        "are both named 'Variable'",
        "  hint: use --by key to name each output by its key",
    ]
    assert not out.exists()
    # ... and the flag it names does it
    result = run_cli("extract", LIST_EXAMPLE, "-o", f"{out}/", "--by", "key")
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(out / "listed")) == ["0", "1"]


def test_library_hints_read_as_flags() -> None:
    """The library says `pass by="key"` (its keyword); the command line says `--by key`."""
    from ckpt_cli.boundary import cli_hint
    from formats.core.errors import CheckpointError

    def hinted(text: str) -> str | None:
        return cli_hint(CheckpointError("x", "y", hint=text))

    assert hinted("pass force=True to replace it") == "use --force to replace it"
    assert hinted('pass by="key" to name each output by its key') == "use --by key to name each output by its key"
    assert hinted("pass include_graph=True or by='name'") == "use --include-graph or by='name'"
    assert hinted("pass allow_pickle='x y' now") == "use --allow-pickle x y now"


# -- 3. a mistyped key: the nearest keys, Keras 3's `_kernel` first ---------------------------------------------
KERAS3 = CORPUS.parent / "keras3_tf_checkpoint" / "tf_ckpts"
"""A Keras 3 model under tf.train.Checkpoint (TF 2.21): `net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE`, ..."""
KERAS3_CKPT = KERAS3 / "ckpt-1"
KERAS3_H5 = CORPUS / "keras3_tagger" / "tagger.weights.h5"
"""Keras 3 weights: keys `layers/sequential/layers/dense/vars/0`, variable names `dense/kernel`."""
L1_KERNEL = "net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE"


@pytest.mark.parametrize(("typed", "hint"), [
    ("net/l1/kernel", "did you mean 'net/l1/_kernel'?"),  # Keras 2's spelling of Keras 3's object path
    ("net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE", f"did you mean {L1_KERNEL!r}?"),  # ... and key
    ("net/l1/kernel[0]", "did you mean 'net/l1/_kernel[0]'?"),  # a slice is kept
    ("l1/kernel", "did you mean 'net/l1/_kernel'?"),  # a partial path
    ("net/l2/kernal", "did you mean 'net/l2/_kernel' or 'net/l1/_kernel' or 'net/l2/bias'?"),  # a typo
    ("optimizer/iterations", "did you mean 'optimizer/_iterations'?"),
])
def test_show_of_a_mistyped_key_says_the_nearest(run_cli, typed: str, hint: str) -> None:
    result = run_cli("show", KERAS3_CKPT, typed)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"ckpt: error: {KERAS3_CKPT}: no tensor named {typed!r}", f"  hint: {hint}"]
    assert result.stdout == ""


def test_the_suggested_spelling_works(run_cli) -> None:
    """What the hint suggests is what `show` takes, and it is the tensor TensorFlow wrote (shape [1, 5])."""
    result = run_cli("show", KERAS3_CKPT, "net/l1/_kernel")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"{L1_KERNEL}: float32 [1, 5]")


def test_a_key_nothing_is_near_keeps_the_glob_hint(run_cli) -> None:
    result = run_cli("show", KERAS3_CKPT, "zzzz")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"ckpt: error: {KERAS3_CKPT}: no tensor named 'zzzz'",
                                          f"  hint: `ckpt ls {KERAS3_CKPT}` lists the keys"]
    result = run_cli("stats", KERAS3_CKPT, "zzzz")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"ckpt: error: {KERAS3_CKPT}: no key matches 'zzzz'",
        "  hint: patterns are exact keys or globs on the whole key: try '*zzzz*'"]


@pytest.mark.parametrize("command", [
    ["stats", KERAS3_CKPT, "net/l1/kernel"],
    ["extract", KERAS3_CKPT, "net/l1/kernel", "-o", "{tmp}/x.npy"],
    ["report", KERAS3_CKPT, "-f", "net/l1/kernel", "-o", "{tmp}/r.html"],
    ["diff", KERAS3_CKPT, KERAS3_CKPT, "-f", "net/l1/kernel"],
    ["trend", KERAS3, "net/l1/kernel"],
], ids=lambda c: c[0])
def test_a_pattern_matching_no_key_says_the_nearest_key(run_cli, tmp_path: Path, command: list) -> None:
    """Patterns match whole keys: the hint names the key (what the pattern must be)."""
    argv = [str(a).replace("{tmp}", str(tmp_path)) for a in command]
    result = run_cli(*argv)
    where = f"{KERAS3_CKPT}, {KERAS3_CKPT}" if command[0] == "diff" else argv[1]
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"ckpt: error: {where}: no key matches 'net/l1/kernel'",
                                          f"  hint: did you mean {L1_KERNEL!r}?"]
    assert os.listdir(tmp_path) == []


def test_several_patterns_each_get_their_nearest(run_cli) -> None:
    result = run_cli("stats", KERAS3_CKPT, "net/l1/kernel", "net/l2/biass", "net/*")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"ckpt: error: {KERAS3_CKPT}: no key matches 'net/l1/kernel' or 'net/l2/biass'",
        f"  hint: did you mean {L1_KERNEL!r} for 'net/l1/kernel', "
        "'net/l2/bias/.ATTRIBUTES/VARIABLE_VALUE' for 'net/l2/biass'?"]


def test_edit_select_of_a_mistyped_key(run_cli, tmp_path: Path) -> None:
    result = run_cli("edit", KERAS3_CKPT, "--select", "net/l1/kernel", "-o", tmp_path / "out")
    assert result.exit_code == 1
    assert (f"error: selection: net/l1/kernel: no key matches 'net/l1/kernel' (did you mean {L1_KERNEL!r}?)"
            in result.stdout.splitlines())
    assert os.listdir(tmp_path) == []


def test_a_variable_name_typed_as_a_pattern_gets_its_key(run_cli, tmp_path: Path) -> None:
    """Keras 3 weights: `dense/kernel` is a variable name (show takes it), patterns match keys: the hint
    gives the key of that name first."""
    result = run_cli("extract", KERAS3_H5, "dense/kernel", "-o", tmp_path / "k.npy")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1] == "  hint: did you mean 'layers/sequential/layers/dense/vars/0'?"
    result = run_cli("show", KERAS3_H5, "dense/kernal")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1] == "  hint: did you mean 'dense/kernel' or 'dense_1/kernel' or 'dense/bias'?"


def test_nearest_ranks() -> None:
    from formats.core.nearest import nearest

    spellings = {"net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE": ("net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE",
                                                               "net/l1/_kernel", "net/kernel"),
                 "net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE": ("net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/bias"),
                 "x/_kernel": ("x/_kernel",)}
    # another spelling equal to the word (a variable name): that one only
    assert nearest("net/kernel", spellings) == [("net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE", "net/kernel")]
    # equal but for a leading underscore (Keras 3): that one only, not the similar `bias`
    assert nearest("net/l1/kernel", spellings) == [("net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/_kernel")]
    # the word's segments in order, underscores aside: by similarity ("kernel"~"x/_kernel" 0.8 > "net/kernel" 0.75)
    assert nearest("kernel", spellings) == [("x/_kernel", "x/_kernel"),
                                            ("net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE", "net/kernel")]
    # else similar: at least 0.6 (difflib's ratio), best first, at most n
    assert nearest("net/l1/biass", spellings) == [("net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/bias")]
    assert nearest("net/l1/kernal", spellings) == [("net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/_kernel"),
                                                   ("net/l1/bias/.ATTRIBUTES/VARIABLE_VALUE", "net/l1/bias")]
    assert nearest("net/l1/kernal", spellings, n=1) == [("net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE",
                                                         "net/l1/_kernel")]
    assert nearest("qqqqqqqq", spellings) == []
