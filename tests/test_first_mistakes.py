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
    result = run_cli("extract", LIST_EXAMPLE, "-o", f"{out}/", "--by", "name")  # the default names them by path
    assert result.exit_code == 4
    assert result.stderr.splitlines() == [
        f"ckpt: error: {out}/: 'listed/0/.ATTRIBUTES/VARIABLE_VALUE' and 'listed/1/.ATTRIBUTES/VARIABLE_VALUE' "
        "are both named 'Variable'",
        "  hint: use --by path to name the files by object path, or use --by key to name them by key",
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
            in result.stderr.splitlines())
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


# -- 4. ls lists numbered keys in number order -------------------------------------------------------------------
TAGGER_TF = CORPUS / "keras2_tagger" / "tagger_tf" / "ckpt"
"""tf-keras save_weights (TF format): optimizer/_variables/1 ... /20 (a bundle: listed from its index alone)."""


def _by_value(key: str) -> list:
    """Independent of formats.core.natural: digit runs as numbers (the corpus keys' numbers follow '/', '_', '-')."""
    import re

    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def _table_keys(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    assert lines[0].split()[0] == "key"
    return [line.split()[0] for line in lines[1:-1]]


def _keras3_h5_keys() -> list[str]:
    import h5py

    found: list[str] = []
    with h5py.File(KERAS3_H5, "r") as f:
        f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return found


def test_ls_of_keras3_weights_lists_optimizer_vars_in_number_order(run_cli) -> None:
    result = run_cli("ls", KERAS3_H5)
    assert result.exit_code == 0, result.stderr
    keys = _table_keys(result.stdout)
    optimizer = [k for k in keys if k.startswith("optimizer/vars/")]
    assert optimizer == [f"optimizer/vars/{i}" for i in range(22)]  # h5py: 0..21
    assert sorted(keys) == sorted(_keras3_h5_keys()) and keys == sorted(keys, key=_by_value)
    # --names, --json: the same order
    names = run_cli("ls", KERAS3_H5, "--names")
    assert _table_keys(names.stdout) == keys
    import json

    assert [t["key"] for t in json.loads(run_cli("ls", KERAS3_H5, "--json").stdout)["tensors"]] == keys


def test_ls_of_a_bundle_index_lists_in_number_order(run_cli) -> None:
    """`ls PREFIX` of a bundle reads the index alone (the compact listing, in the index's text order): the
    rows come in number order all the same, as the opened checkpoint's (--names) do."""
    from formats.tf_bundle.index_listing import compact_listing

    assert compact_listing(str(TAGGER_TF)) is not None  # the compact path is the one taken
    keys = _table_keys(run_cli("ls", TAGGER_TF).stdout)
    slots = [k for k in keys if k.startswith("optimizer/_variables/")]
    assert slots == [f"optimizer/_variables/{i}/.ATTRIBUTES/VARIABLE_VALUE" for i in range(1, 21)]
    assert keys == sorted(keys, key=_by_value)
    assert _table_keys(run_cli("ls", TAGGER_TF, "--names").stdout) == keys
    import json

    assert [t["key"] for t in json.loads(run_cli("ls", TAGGER_TF, "--json").stdout)["tensors"]] == keys
    filtered = _table_keys(run_cli("ls", TAGGER_TF, "-f", "optimizer/_variables/*").stdout)
    assert filtered == slots


def test_ls_tree_lists_numbered_children_in_number_order(run_cli) -> None:
    result = run_cli("ls", "--tree", KERAS3_H5)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("optimizer"))
    children = [line.split()[1] for line in lines[at + 2:at + 24]]
    assert children == [str(i) for i in range(22)]


def test_sort_size_breaks_ties_in_number_order(run_cli) -> None:
    keys = _table_keys(run_cli("ls", KERAS3_H5, "--sort", "size").stdout)
    sixteen = [k for k in keys if k.startswith("optimizer/vars/") and k.rsplit("/", 1)[1] in
               {"10", "11", "12", "13", "16", "17"}]  # [16] float32: 64 B each
    assert sixteen == ["optimizer/vars/10", "optimizer/vars/11", "optimizer/vars/12", "optimizer/vars/13",
                       "optimizer/vars/16", "optimizer/vars/17"]


def test_the_index_listing_in_blocks(tmp_path: Path) -> None:
    """A large index (many blocks, as it streams): rows in number order across blocks, in blocks of the
    index's sizes; an index whose numbers all have one digit, or are zero-padded, keeps its blocks as read."""
    from formats.tf_bundle.encode import encode_entry
    from formats.tf_bundle.index_listing import compact_listing
    from tests.bundle_index import write_bundle

    keys = sorted(f"optimizer/vars/{i}" for i in range(3000))
    pairs = [(k.encode(), encode_entry(1, (4,), 16 * i, 16, 0, 0)) for i, k in enumerate(keys)]
    listing = compact_listing(write_bundle(tmp_path / "many", pairs, shards=1), [])
    assert listing is not None and len(listing.blocks) > 5
    assert [k for k, _ in listing.rows()] == [f"optimizer/vars/{i}" for i in range(3000)]
    padded = sorted(f"layer_{i:05d}/kernel" for i in range(3000))
    pairs = [(k.encode(), encode_entry(1, (4,), 16 * i, 16, 0, 0)) for i, k in enumerate(padded)]
    listing = compact_listing(write_bundle(tmp_path / "padded", pairs, shards=1), [])
    assert [k for k, _ in listing.rows()] == padded


def test_natural_order() -> None:
    from formats.core.natural import natural_order

    keys = ["v10", "v9", "v1", "v01", "v0", "a/b", "a1", "a/", "x1234567890", "x999999999", "x9z", "dense_10/k",
            "dense_2/k", "dense/k"]
    assert sorted(keys, key=natural_order) == ["a/", "a/b", "a1", "dense/k", "dense_2/k", "dense_10/k", "v0", "v01",
                                               "v1", "v9", "v10", "x9z", "x999999999", "x1234567890"]


def test_sort_naturally_is_sorting_by_natural_order() -> None:
    """In place, one rewritten key an item: the order of ``sorted(key=natural_order)`` from any order (keys equal but
    for leading zeros in text order), whether the keys come in text order or not, as items' keys."""
    import random

    from formats.core.natural import natural_order, sort_naturally

    rng = random.Random(3)
    parts = ["v", "v0", "v00", "v1", "v01", "v001", "v10", "v010", "/", "_", "a", "9", "09", "123", "x", "é", "\n", "//"]
    for n in range(600):  # (a key holding a newline in half of them; keys of one-digit numbers only in some)
        keys = list({"".join(rng.choice(parts[:-2] if n % 2 else parts) for _ in range(rng.randint(1, 4)))
                     for _ in range(rng.randint(0, 40))})
        if n % 5 == 0:
            keys = [k for k in keys if "00" not in "".join(c if not c.isdigit() else "0" for c in k)]
        for start in (sorted(keys), rng.sample(keys, len(keys))):
            items = [(k, i) for i, k in enumerate(start)]
            sort_naturally(items, lambda item: item[0])
            assert [k for k, _ in items] == sorted(keys, key=natural_order)


def test_a_refused_plan_puts_its_errors_on_stderr_and_its_warnings_on_stdout(tmp_path, run_cli):
    """A plan that cannot be written is an error as any other of ckpt's: its error lines and the closing "nothing
    written" on stderr (a script's `2>` sees why), the warnings - part of the report - on stdout (issue 37)."""
    src = CORPUS / "tf1_adam" / "model.ckpt-200"
    result = run_cli("convert", src, "-o", tmp_path / "x.h5", "--to", "keras2-h5")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: unsupported: {src}: a tf-name source has no Keras 2 layer names; give --template, a Keras 2 "
        "weights file of the same architecture",
        "1 error, 2 warnings; nothing written"]
    assert result.stdout.splitlines() == [
        "warning: unused: optimizer: 3 optimizer tensor(s) of the source left out (Keras 2 .h5 weights files hold "
        "model weights only)",
        "warning: unused: slot: 12 slot tensor(s) of the source left out (Keras 2 .h5 weights files hold model "
        "weights only)",
        "--verbose (or --json) lists every problem and the keys behind each"]
    assert list(tmp_path.iterdir()) == []
