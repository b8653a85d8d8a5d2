"""`ckpt show` (slices, print options, strings, bfloat16, JSON) and `ckpt extract` (.npy, .npz, directories,
hostile keys, strings without pickle, refusal to overwrite)."""
from __future__ import annotations

import base64
import json
import os

import ml_dtypes
import numpy as np
import pytest

from formats import open_checkpoint, write_checkpoint
from formats.ops.inspect.extract import safe_relative_path
from formats.core.values import parse_index

from .conftest import CORPUS, MANIFEST, digest
from .test_diff import read_all

EST200 = "tf1_estimator/model.ckpt-200"
DTYPES = "tf2_mixed/all_dtypes/ckpt-1"
BF16 = "typed/bfloat16/.ATTRIBUTES/VARIABLE_VALUE"
STR = "typed/string/.ATTRIBUTES/VARIABLE_VALUE"


# -- show ------------------------------------------------------------------------------------------------
def test_show_slice_as_json(run_cli):
    kernel = read_all(EST200)["dnn/logits/kernel"]
    result = run_cli("show", "--json", CORPUS / EST200, "dnn/logits/kernel[0:3, :]")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {k: doc[k] for k in ("key", "dtype", "shape", "slice", "value_shape")} == \
        {"key": "dnn/logits/kernel", "dtype": "float32", "shape": [10, 3], "slice": "0:3, :", "value_shape": [3, 3]}
    assert doc["values"] == kernel[0:3, :].tolist()


def test_show_text_uses_numpy_print_options(run_cli):
    kernel = read_all(EST200)["dnn/hiddenlayer_1/kernel"]
    result = run_cli("show", "--precision", "2", "--threshold", "10", "--edgeitems", "1",
                     CORPUS / EST200, "dnn/hiddenlayer_1/kernel[::2, 1:]")
    with np.printoptions(precision=2, threshold=10, edgeitems=1):
        body = np.array2string(kernel[::2, 1:], separator=" ")
    assert result.stdout == f"dnn/hiddenlayer_1/kernel[::2, 1:] -> [5, 9]: float32 [10, 10]\n{body}\n"
    assert "..." in body
    full = run_cli("show", "--full", "--threshold", "10", CORPUS / EST200, "dnn/hiddenlayer_1/kernel")
    rows = [line for line in full.stdout.splitlines()[1:] if line.lstrip().startswith("[")]
    assert "..." not in full.stdout and len(rows) == 10


def test_show_scalar_and_partitioned(run_cli):
    assert run_cli("show", CORPUS / EST200, "global_step").stdout == "global_step: int64 []\n200\n"
    rel = "tf1_partitioned/model.ckpt-200"
    doc = json.loads(run_cli("show", "--json", CORPUS / rel, "input_layer/embedding/weights[-1]").stdout)
    assert doc["values"] == read_all(rel)["input_layer/embedding/weights"][-1].tolist()


def test_show_bfloat16_as_numbers(run_cli):
    value = read_all(DTYPES)[BF16]
    result = run_cli("show", CORPUS / DTYPES, BF16)
    assert "bfloat16(" not in result.stdout
    with np.printoptions(precision=6):
        assert result.stdout.split("\n", 1)[1] == np.array2string(value.astype(np.float32)) + "\n"
    doc = json.loads(run_cli("show", "--json", CORPUS / DTYPES, BF16).stdout)
    assert doc["values"] == value.astype(np.float32).astype(np.float64).tolist()


def test_show_strings_safely(run_cli, tmp_path):
    prefix = tmp_path / "s" / "ckpt-1"
    hostile = np.array([b"\x1b[2J\x1b]0;pwned\x07", b"\xff\xfe", "héllo".encode()], dtype=object)
    write_checkpoint(prefix, {"s": hostile, "f": np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)})
    result = run_cli("show", prefix, "s")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    # one literal style per array: a non-UTF-8 element makes every element a bytes literal (issue 14 #15)
    assert result.stdout == "s: string [3]\n[b'\\x1b[2J\\x1b]0;pwned\\x07', b'\\xff\\xfe', b'h\\xc3\\xa9llo']\n"
    doc = json.loads(run_cli("show", "--json", prefix, "s").stdout)
    assert doc["values"] == ["\x1b[2J\x1b]0;pwned\x07", {"base64": base64.b64encode(b"\xff\xfe").decode()}, "héllo"]
    assert json.loads(run_cli("show", "--json", prefix, "f").stdout)["values"] == ["nan", "inf", "-inf", 1.5]


def test_show_strings_of_the_corpus(run_cli):
    result = run_cli("show", "--json", CORPUS / DTYPES, f"{STR}[0]")
    values = read_all(DTYPES)[STR][0]
    assert json.loads(result.stdout)["values"][:3] == [v.decode() for v in values[:3]]


@pytest.mark.parametrize("arg, message, code", [
    ("dnn/logits/kernel[0:3, x]", "bad slice item 'x' in [0:3, x]", 2),
    ("dnn/logits/kernel[11]", "bad slice for shape [10, 3]: index 11 is out of bounds for axis 0 with size 10", 2),
    ("dnn/logits/kernel[::0]", "bad slice for shape [10, 3]: slice step cannot be zero", 2),
    ("no/such", "no tensor named 'no/such'", 1),
])
def test_show_bad_keys_and_slices(run_cli, arg, message, code):
    result = run_cli("show", CORPUS / EST200, arg)
    assert result.exit_code == code
    assert message in result.stderr.splitlines()[0]


def test_parse_index_never_evaluates():
    assert parse_index("0:3, :") == (slice(0, 3), slice(None))
    assert parse_index("..., -1") == (Ellipsis, -1)
    assert parse_index(" 1 : 9 : 2 ") == (slice(1, 9, 2),)
    for bad in ("__import__('os')", "1 2", "1:2:3:4", "", "a"):
        if bad:
            with pytest.raises(ValueError):
                parse_index(bad)
    assert parse_index("") == ()


# -- extract ---------------------------------------------------------------------------------------------
def test_extract_one_tensor_to_npy(run_cli, tmp_path):
    out = tmp_path / "logits"
    result = run_cli("extract", CORPUS / EST200, "dnn/logits/kernel", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"wrote {out}.npy: 1 tensor, 120 B (npy), verified\n"  # 20 x 6 float32
    value = np.load(f"{out}.npy")
    assert digest(value) == MANIFEST[EST200]["tensors"]["dnn/logits/kernel"]["sha256"]
    assert os.listdir(tmp_path) == ["logits.npy"]  # no temporary file left behind


def test_extract_many_to_npz_keeps_keys(run_cli, tmp_path):
    out = tmp_path / "all.npz"
    result = run_cli("extract", "--json", CORPUS / DTYPES, "-o", out, "--include-graph")
    report = json.loads(result.stdout)
    assert (report["path"], report["format"], report["verified"]) == (str(out), "npz", True)
    stored = {t["key"]: t["stored_dtype"] for t in report["contents"]}
    assert stored[BF16] == "uint16" and stored["typed/float16/.ATTRIBUTES/VARIABLE_VALUE"] == "float16"
    assert report["warnings"] == [f"{BF16}: bfloat16 stored as uint16 bits (the record keeps bfloat16)"]
    values = read_all(DTYPES)
    with np.load(out) as npz:  # allow_pickle is False: nothing here needs pickle
        assert sorted(npz.files) == sorted([*MANIFEST[DTYPES]["tensors"], "__ckpt_provenance__"])
        record = json.loads(str(npz["__ckpt_provenance__"]))
        assert {t["key"]: t["dtype"] for t in record["tensors"]} == {
            k: t["dtype"] for k, t in MANIFEST[DTYPES]["tensors"].items()}
        for key, want in values.items():
            got = npz[key]
            if want.dtype == object:
                assert got.dtype.kind == "S" and got.tolist() == np.array(want.tolist(), dtype=got.dtype).tolist()
                assert [bytes(x) for x in got.reshape(-1)] == list(want.reshape(-1))
            elif want.dtype == ml_dtypes.bfloat16:  # the raw bits; the record restores the dtype
                assert got.dtype == np.uint16 and got.tobytes() == want.tobytes()
                assert digest(got.view(ml_dtypes.bfloat16)) == MANIFEST[DTYPES]["tensors"][key]["sha256"]
            else:
                assert digest(got) == MANIFEST[DTYPES]["tensors"][key]["sha256"], key


def test_extract_globs_to_a_directory(run_cli, tmp_path):
    out = tmp_path / "arrays"
    result = run_cli("extract", CORPUS / EST200, "dnn/logits/*", "global_step", "-o", f"{out}/")
    assert result.exit_code == 0, result.stderr
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.npy"))
    assert files == ["dnn/logits/bias.npy", "dnn/logits/bias/Adagrad.npy", "dnn/logits/kernel.npy",
                     "dnn/logits/kernel/Adagrad.npy", "global_step.npy"]
    for f in files:
        key = f[:-4]
        assert digest(np.load(out / f)) == MANIFEST[EST200]["tensors"][key]["sha256"]


def test_hostile_keys_never_escape_the_directory(run_cli, tmp_path):
    keys = ["../../evil", "/etc/passwd", "a/./b", "..", "%2E", "x\\..\\y", "ok/../../../up", "nul\x00", "a//b"]
    src = tmp_path / "src" / "ckpt-1"
    write_checkpoint(src, {k: np.array([i], np.int32) for i, k in enumerate(keys)})
    out = tmp_path / "deep" / "out"
    result = run_cli("extract", "--json", src, "-o", f"{out}/")
    assert result.exit_code == 0, result.stderr
    files = {t["key"]: t["stored_as"] for t in json.loads(result.stdout)["contents"]}
    assert files == {"../../evil": "%2E%2E/%2E%2E/evil.npy", "/etc/passwd": "%/etc/passwd.npy",
                     "a/./b": "a/%2E/b.npy", "..": "%2E%2E.npy", "%2E": "%252E.npy", "x\\..\\y": "x%5C..%5Cy.npy",
                     "ok/../../../up": "ok/%2E%2E/%2E%2E/%2E%2E/up.npy", "nul\x00": "nul%00.npy", "a//b": "a/%/b.npy"}
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.npy"))
    assert written == sorted(f"deep/out/{f}" for f in files.values())
    for i, key in enumerate(keys):
        assert np.load(out / files[key]).tolist() == [i]
    assert (safe_relative_path("a/b"), safe_relative_path("")) == ("a/b", "%")


def test_symlinked_subdirectory_is_refused(run_cli, tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "dnn").symlink_to(outside)
    result = run_cli("extract", CORPUS / EST200, "dnn/logits/bias", "-o", out)
    assert result.exit_code == 4 and "would be written outside" in result.stderr
    assert list(outside.iterdir()) == []


def test_existing_output_refused_unless_force(run_cli, tmp_path):
    out = tmp_path / "g.npy"
    out.write_bytes(b"keep")
    result = run_cli("extract", CORPUS / EST200, "global_step", "-o", out)
    assert result.exit_code == 4 and "output file exists" in result.stderr and out.read_bytes() == b"keep"
    assert run_cli("extract", "--force", CORPUS / EST200, "global_step", "-o", out).exit_code == 0
    assert np.load(out).tolist() == 200


def test_npy_needs_exactly_one_tensor(run_cli, tmp_path):
    result = run_cli("extract", CORPUS / EST200, "dnn/*", "-o", tmp_path / "x.npy")
    assert result.exit_code == 4
    assert "a .npy file holds one tensor, 12 were selected" in result.stderr
    assert run_cli("extract", CORPUS / EST200, "zzz*", "-o", tmp_path / "x").exit_code == 1


def test_strings_with_trailing_nul_need_allow_pickle(run_cli, tmp_path):
    src = tmp_path / "s" / "ckpt-1"
    write_checkpoint(src, {"s": np.array([b"a\x00", b"b"], dtype=object)})
    result = run_cli("extract", src, "s", "-o", tmp_path / "s.npy")
    assert result.exit_code == 4 and "--allow-pickle" in result.stderr
    assert not (tmp_path / "s.npy").exists()
    assert run_cli("extract", "--allow-pickle", src, "s", "-o", tmp_path / "s.npy").exit_code == 0
    assert np.load(tmp_path / "s.npy", allow_pickle=True).tolist() == [b"a\x00", b"b"]
    with pytest.raises(ValueError):
        np.load(tmp_path / "s.npy")


def test_variants_extract_as_bytes(run_cli, tmp_path):
    rel = "seed_slots/tf_ckpts/ckpt-3"
    key = "iterator/.ATTRIBUTES/ITERATOR_STATE"
    out = tmp_path / "it.npy"
    assert run_cli("extract", CORPUS / rel, key, "-o", out).exit_code == 0
    got = np.load(out)
    assert [bytes(x) for x in got] == list(read_all(rel)[key])


def test_large_tensor_streams(tmp_path, run_cli):
    big = np.arange(3_000_000, dtype=np.float32).reshape(1000, 3000)
    src = tmp_path / "big" / "ckpt-1"
    write_checkpoint(src, {"w": big})
    assert run_cli("extract", src, "-o", tmp_path / "w.npy").exit_code == 0
    assert np.array_equal(np.load(tmp_path / "w.npy", mmap_mode="r"), big)


def test_extract_reports_progress(tmp_path):
    import formats
    from formats.ops.inspect.extract import extract

    from .conftest import CORPUS

    seen = []
    with formats.open_checkpoint(CORPUS / "tf1_adam/model.ckpt-200") as ckpt:
        extract(ckpt, ["dnn/logits/*"], tmp_path / "out.npz", progress=lambda done, n: seen.append((done, n)))
    assert [n for _, n in seen] == [1, 2, 3, 4, 5, 6]
    assert seen[-1][0] == sum(e.nbytes for k, e in formats.open_checkpoint(CORPUS / "tf1_adam/model.ckpt-200").items()
                              if k.startswith("dnn/logits/"))


def test_show_finds_a_tensor_by_object_path_or_variable_name(run_cli):
    """Issue 14 #11: an object path or a TF1-style name finds its tensor, and the output names the key used."""
    prefix = CORPUS / "seed_slots/tf_ckpts/ckpt-5"
    key = "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    with open_checkpoint(prefix) as ckpt:
        want = ckpt[key].read()
    for typed in ("net/l1/kernel", "net/dense/kernel"):
        doc = json.loads(run_cli("show", "--json", prefix, typed).stdout)
        assert doc["key"] == key and doc["values"] == want.tolist()
    sliced = json.loads(run_cli("show", "--json", prefix, "net/dense/kernel[0, 1:3]").stdout)
    assert sliced["key"] == key and sliced["values"] == want[0, 1:3].tolist()
    assert run_cli("show", prefix, "net/l1").exit_code != 0


def test_show_uses_one_literal_style_per_array():
    """Issue 14 #15: a string array mixing UTF-8 and other bytes prints every element as a bytes literal."""
    from ckpt_cli.render.values import display_array

    mixed = np.array([b"ab", b"\x00\xff"], dtype=object)
    assert display_array(mixed).tolist() == ["b'ab'", "b'\\x00\\xff'"]
    assert display_array(np.array([b"ab", "c\u00e9".encode()], dtype=object)).tolist() == ["'ab'", "'c\u00e9'"]


# -- names as paths, the object graph left out ---------------------------------------------------------
SLOTS = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"


def test_a_directory_of_an_object_based_checkpoint_is_named_by_variable_name(run_cli, tmp_path):
    out = tmp_path / "arrays"
    result = run_cli("extract", SLOTS, "-o", f"{out}/")
    assert result.exit_code == 0, result.output
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.npy"))
    with open_checkpoint(SLOTS) as ckpt:
        names = {e.name: k for k, e in ckpt.items() if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
        values = {k: ckpt[k].read() for k in names.values() if ckpt[k].dtype != "variant"}
    assert files == sorted(f"{n}.npy" for n in names)
    assert "net/dense/kernel.npy" in files and "Adam/net/dense/kernel/m.npy" in files
    for name, key in names.items():
        if key in values:
            np.testing.assert_array_equal(np.load(out / f"{name}.npy"), values[key])
    by_key = tmp_path / "keys"
    assert run_cli("extract", SLOTS, "-o", f"{by_key}/", "--by", "key").exit_code == 0
    assert (by_key / "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE.npy").is_file()


def test_npz_members_by_name(run_cli, tmp_path):
    out = tmp_path / "w.npz"
    assert run_cli("extract", SLOTS, "net/*", "-o", out, "--by", "name").exit_code == 0
    with np.load(out) as npz:
        assert sorted(npz.files) == ["Adam/net/dense/bias/m", "Adam/net/dense/bias/v", "Adam/net/dense/kernel/m",
                                     "Adam/net/dense/kernel/v", "__ckpt_provenance__", "net/dense/bias",
                                     "net/dense/kernel"]
        record = json.loads(str(npz["__ckpt_provenance__"]))
    assert {t["key"]: t["source_key"] for t in record["tensors"]}["net/dense/kernel"] == \
        "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"


def test_shared_names_are_refused_by_name(run_cli, tmp_path):
    src = tmp_path / "src" / "ckpt"
    from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode
    from formats.ops.convert.graph_build import encode_object_graph

    nodes = [ObjectNode(0, children=[ChildRef(1, "a"), ChildRef(2, "b")]),
             ObjectNode(1, attributes=[Attribute("VARIABLE_VALUE", "w", "a/.ATTRIBUTES/VARIABLE_VALUE")]),
             ObjectNode(2, attributes=[Attribute("VARIABLE_VALUE", "w", "b/.ATTRIBUTES/VARIABLE_VALUE")])]
    write_checkpoint(src, {"a/.ATTRIBUTES/VARIABLE_VALUE": np.zeros(2, np.float32),
                           "b/.ATTRIBUTES/VARIABLE_VALUE": np.ones(2, np.float32)}, encode_object_graph(nodes))
    result = run_cli("extract", src, "-o", f"{tmp_path / 'o'}/", "--by", "name")
    assert result.exit_code == 4
    assert "'a/.ATTRIBUTES/VARIABLE_VALUE' and 'b/.ATTRIBUTES/VARIABLE_VALUE' are both named 'w'" in result.stderr
    assert "hint: use --by path to name the files by object path, or use --by key to name them by key" in result.stderr
    assert not (tmp_path / "o").exists()
    result = run_cli("extract", src, "-o", f"{tmp_path / 'o'}/")  # the default: by object path, and says so
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["a.npy", "b.npy"]
    assert "named by object path, not by variable name: 1 name(s) are shared by several tensors ('w' (2 tensors))" \
        in result.output


def test_an_object_graph_ending_in_nul_is_left_out_unless_asked(run_cli, tmp_path):
    """TensorFlow's graphs often end in NUL (an empty ``has_checkpoint_values`` message last), which
    fixed-width bytes would drop: a whole-checkpoint extract must not trip on what it was not asked for."""
    from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode
    from formats.ops.convert.graph_build import encode_object_graph

    nodes = [ObjectNode(0, children=[ChildRef(1, "v"), ChildRef(2, "empty")]),
             ObjectNode(1, attributes=[Attribute("VARIABLE_VALUE", "v", "v/.ATTRIBUTES/VARIABLE_VALUE")]),
             ObjectNode(2, has_checkpoint_values=False)]
    graph = encode_object_graph(nodes)
    assert graph.endswith(b"\x00")
    src = tmp_path / "src" / "ckpt"
    write_checkpoint(src, {"v/.ATTRIBUTES/VARIABLE_VALUE": np.arange(3, dtype=np.int32)}, graph)
    for out in (tmp_path / "all.npz", f"{tmp_path / 'dir'}/"):
        result = run_cli("extract", src, "-o", out, "--json")
        assert result.exit_code == 0, result.output
        assert [t["key"] for t in json.loads(result.stdout)["contents"]] == ["v/.ATTRIBUTES/VARIABLE_VALUE"]
    asked = run_cli("extract", src, "-o", tmp_path / "g.npz", "--include-graph")
    assert asked.exit_code == 4 and "--allow-pickle" in asked.stderr
    assert run_cli("extract", src, "-o", tmp_path / "g2.npz", "--include-graph", "--allow-pickle").exit_code == 0
    only = run_cli("extract", src, "_CHECKPOINTABLE_*", "-o", tmp_path / "g3.npy")
    assert only.exit_code == 1 and "hint: use --include-graph" in only.stderr
