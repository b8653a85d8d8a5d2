"""Issue 38 (start-up: every fast-path command within 2x ``python -c pass``): what each command, run as users run
it (the installed launcher), must not import, and the JSON writer that lets ``ls --json`` and the safetensors
writer go without :mod:`json` (whose decoder imports ``re`` and ``enum``: about 8 ms, half Python's own start)."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
import subprocess
import sys

import pytest

import formats
from formats.core import json_writer
from tests.conftest import CORPUS
from tests.installed import LAUNCHER, child_env, site_dirs

NAME_BASED = CORPUS / "tf1_adam" / "model.ckpt-200"
OBJECT_BASED = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"

JSON_STACK = {"json", "json.decoder", "json.encoder", "json.scanner", "re", "enum", "functools", "collections"}
"""What ``import json`` brings (``re`` imports ``enum`` and ``functools``, and it ``collections``)."""


def _imported(argv: list[str]) -> set[str]:
    """The modules the installed launcher imports running ``ckpt ARGV`` (``-X importtime``; ``-S``: without
    ``site``'s own imports, the checkout and the dependencies' directories on the path)."""
    env = child_env(PYTHONPATH=os.pathsep.join(site_dirs()))
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", str(LAUNCHER), *argv], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("prefix", [NAME_BASED, OBJECT_BASED], ids=["name-based", "object-based"])
def test_ls_json_imports_no_json(prefix) -> None:
    """``ckpt ls --json PREFIX`` writes its JSON without the json package (it imported json, re and enum)."""
    modules = _imported(["ls", "--json", str(prefix)])
    assert "formats.tf_bundle.index_listing" in modules and "formats.core.json_writer" in modules
    assert modules & (JSON_STACK - {"collections"}) == set()  # (array, of the index listing, imports collections)


def test_a_safetensors_export_imports_no_json_contextlib_or_object_graph_planner(tmp_path) -> None:
    """``convert --to safetensors`` of a small bundle: its header and provenance record written without json, the
    atomic output without contextlib (which imports collections and functools), the export planned without
    functools, its read-back of checksums without the comparison engine or threads; the object-graph codec is not
    needed."""
    out = tmp_path / "x.safetensors"
    modules = _imported(["convert", str(NAME_BASED), "-o", str(out), "--to", "safetensors"])
    assert out.exists() and "formats.safetensors.writer" in modules and "formats.io.atomic" in modules
    unneeded = JSON_STACK | {"contextlib", "copyreg", "numpy", "typing", "threading", "hashlib",
                             "formats.concepts.object_graph_codec", "formats.ops.convert.name_to_object",
                             "formats.ops.convert.graph_build", "formats.core.comparison", "formats.core.values"}
    assert modules & unneeded == set()


@pytest.mark.parametrize("argv, prefix", [(["convert", "--to", "npz"], NAME_BASED), (["extract"], NAME_BASED),
                                          (["extract"], OBJECT_BASED)],
                         ids=["convert --to npz", "extract", "extract (strings and variants)"])
def test_an_npz_export_imports_no_numpy_ast_or_hashlib(tmp_path, argv, prefix) -> None:
    """An npz of fixed-width tensors is written and read back without numpy (its import was two thirds of a small
    ``convert --to npz``: 477M instructions against 161M), :mod:`ast` (a header of numpy's own form is read without
    it) or :mod:`hashlib` (a pickled member's only); the file is the one numpy's own headers made (compared byte for
    byte in tests/test_npy_text.py). String and variant tensors (the object graph, an iterator's state) are written
    as numpy's fixed-width bytes (``|S<n>``) without it too (469M instructions against 145M)."""
    out = tmp_path / "x.npz"
    modules = _imported([argv[0], str(prefix), "-o", str(out), *argv[1:]])
    assert out.exists() and "formats.npz.writer" in modules and "formats.io.npy_header" in modules
    assert modules & {"numpy", "ast", "hashlib", "ml_dtypes"} == set()


def test_reading_an_npz_imports_no_numpy(tmp_path) -> None:
    """``ls``, ``verify`` and ``diff`` of an npz of fixed-width tensors (and an export of it) read its ``.npy``
    headers without numpy (``ls``: 447M instructions against 136M)."""
    npz = tmp_path / "x.npz"
    _imported(["convert", str(NAME_BASED), "-o", str(npz), "--to", "npz"])
    for argv in (["ls", str(npz)], ["ls", "--json", str(npz)], ["verify", str(npz)], ["diff", str(npz), str(npz)],
                 ["convert", str(npz), "-o", str(tmp_path / "x.safetensors"), "--to", "safetensors"]):
        modules = _imported(argv)
        assert "formats.npz.reader" in modules and modules & {"numpy", "ast", "ml_dtypes"} == set(), argv


def test_a_rename_dry_run_imports_neither_the_convert_command_nor_the_graph_model(tmp_path) -> None:
    """``rename --dry-run`` of a name-based bundle prints its plan without the ``convert`` command's module (its
    options and help: rename printed its result through it), the object-graph model or the comparison engine."""
    modules = _imported(["rename", str(NAME_BASED), "-o", str(tmp_path / "out"), "--map", "global_step=step",
                         "--dry-run"])
    assert "formats.ops.convert.rename" in modules and "ckpt_cli.render.conversion" in modules
    unneeded = JSON_STACK | {"contextlib", "operator", "ckpt_cli.commands.convert", "formats.concepts.object_graph",
                             "formats.core.comparison", "formats.io.atomic", "numpy", "typing",
                             "formats.core.executors", "ckpt_cli.render.progress",
                             "formats.ops.convert.conversion_source"}
    assert modules & unneeded == set()


SHARED_LIBRARIES = {"math", "mmap", "struct", "_struct", "bisect"}
"""Standard modules built as shared libraries (or, ``bisect``, a Python module over one) that a small bundle's
reading never needs: each is half a million instructions or more to load (``struct``: 0.9M), the four of them 4% of
a command's start-up (``diff`` 2.03x -> 1.97x ``python -c pass``). Its data file is read whole (no map), a shape's
elements counted without ``math.prod`` below rank 3, a block's fixed-width fields read with ``int.from_bytes``."""


@pytest.mark.parametrize("argv", [["ls", "{prefix}"], ["ls", "--json", "{prefix}"], ["verify", "{prefix}"],
                                  ["diff", "{prefix}", "{prefix}"],
                                  ["rename", "{prefix}", "-o", "{out}", "--map", "global_step=step", "--dry-run"]],
                         ids=["ls", "ls --json", "verify", "diff", "rename --dry-run"])
def test_a_small_bundle_is_read_without_loading_shared_libraries_it_does_not_need(tmp_path, argv) -> None:
    modules = _imported([a.format(prefix=NAME_BASED, out=tmp_path / "out" / "ckpt") for a in argv])
    assert "formats.tf_bundle.datafile" in modules and "formats.io.sstable.block" in modules
    assert modules & SHARED_LIBRARIES == set()


GRAPH_MODULES = {"formats.concepts.object_graph", "formats.concepts.object_graph_codec",
                 "formats.concepts.object_graph_table", "formats.ops.edit.prune"}
"""The object graph's model, codec and pruning: about 6M instructions of imports (a sixteenth of an ``edit``)."""


@pytest.mark.parametrize("argv", [["edit", "{prefix}", "-o", "{out}/ckpt", "--drop-optimizer", "--dry-run"],
                                  ["edit", "{prefix}", "-o", "{out}/ckpt", "--drop-optimizer"],
                                  ["ls", "--tree", "{prefix}"], ["report", "{prefix}", "-o", "{out}/r.html"]],
                         ids=["edit --dry-run", "edit", "ls --tree", "report"])
def test_a_name_based_checkpoint_is_labelled_edited_and_drawn_without_the_object_graph(tmp_path, argv) -> None:
    """A name-based bundle's labels (:class:`~formats.concepts.entry_label.EntryLabel`), edit, tree and report need
    none of the object graph's modules; an object-based one's import them (what is asked is what it costs)."""
    for prefix, graph in ((NAME_BASED, False), (OBJECT_BASED, True)):
        out = tmp_path / prefix.parent.name
        modules = _imported([a.format(prefix=prefix, out=out) for a in argv])
        assert "formats.concepts.entry_label" in modules or argv[0] == "ls", argv
        assert (modules & GRAPH_MODULES == set()) is not graph, (prefix, sorted(modules & GRAPH_MODULES))


@pytest.mark.parametrize("argv", [["ls", "--tree"], ["ls", "--tree", "--json"], ["verify"], ["diff", "{prefix}"],
                                  ["rename", "-o", "{out}", "--map", "net=model"], ["edit", "-o", "{out}", "--drop-optimizer"]],
                         ids=["ls --tree", "ls --tree --json", "verify", "diff", "rename", "edit"])
def test_a_small_object_based_checkpoint_is_drawn_and_written_without_numpy(tmp_path, argv) -> None:
    """A small graph is held as nodes: its other paths are found, its iterator's variant state described (read as
    bytes) and the checkpoint checked and written without numpy (a tree of 15 tensors: 428M instructions, 95M
    without it)."""
    words = [a.format(prefix=OBJECT_BASED, out=tmp_path / "out" / "ckpt") for a in argv]
    modules = _imported([*words[:2], str(OBJECT_BASED), *words[2:]] if argv[0] == "ls" else
                        [words[0], str(OBJECT_BASED), *words[1:]])
    assert "formats.concepts.object_graph" in modules and "formats.concepts.variant" in modules or argv[0] != "ls"
    assert "numpy" not in modules


@pytest.mark.parametrize("argv", [["verify", str(NAME_BASED)], ["diff", str(NAME_BASED), str(NAME_BASED)]],
                         ids=["verify", "diff"])
def test_opening_a_prefix_reads_no_state_file_model(argv) -> None:
    """Opening a checkpoint by its prefix needs neither the state file's model (``checkpoint`` files name the
    latest checkpoint of a directory) nor the description of foreign files (an error's words)."""
    modules = _imported(argv)
    assert "formats.discover.resolve" in modules
    assert modules & {"formats.concepts.state", "formats.core.foreign"} == set()


def test_the_builtin_writers_table_names_the_first_format_writing_each_layout() -> None:
    """``registry.BUILTIN_WRITERS`` (what ``writer_of`` imports without asking every format before it) is what
    asking the built-in formats in order gives: each layout to the first that writes it, and no other layout."""
    from formats.core import registry

    first: dict[str, str] = {}
    for ref in registry.BUILTIN:
        for layout in getattr(registry._load(ref), "writes", ()):
            first.setdefault(layout, ref)
    assert registry.BUILTIN_WRITERS == first
    for layout, ref in first.items():
        assert registry.writer_of(layout) is registry._load(ref)


@pytest.mark.parametrize("to, written_by", [("safetensors", "formats.safetensors.format"), ("npz", "formats.npz.format")])
def test_an_export_imports_only_the_format_that_writes_it(tmp_path, to, written_by) -> None:
    """``convert --to T`` of a bundle imports the bundle's format (found by asking the formats in order) and the
    one that writes T, none of the formats between them in the registry's order."""
    out = tmp_path / f"x.{to}"
    modules = _imported(["convert", str(NAME_BASED), "-o", str(out), "--to", to])
    assert out.exists() and {"formats.tf_bundle.format", written_by} <= modules
    others = {"formats.tf_v1.format", "formats.keras_h5.format", "formats.npz.format",
              "formats.safetensors.format"} - {written_by}
    assert modules & others == set()


def test_the_safetensors_header_is_json(tmp_path) -> None:
    """The header the writer wrote parses as JSON, and holds the provenance record as a JSON string."""
    out = tmp_path / "x.safetensors"
    done = subprocess.run([sys.executable, str(LAUNCHER), "convert", str(NAME_BASED), "-o", str(out), "--to",
                           "safetensors"], capture_output=True, text=True, env=child_env())
    assert done.returncode == 0, done.stderr
    raw = out.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    record = json.loads(header["__metadata__"]["ckpt.provenance"])
    assert sorted(k for k in header if k != "__metadata__") == sorted(t["key"] for t in record["tensors"])


class _Int(int):
    def __repr__(self) -> str:
        return "not a number"


class _Float(float):
    def __repr__(self) -> str:
        return "not a number"


VALUES = [
    {}, [], (), "", "a\u00e9\u4e2d\U0001f600\n\t\"\\\x00\x1f\x7f", "\ud800", 0, -1, 2 ** 70, 0.0, -0.0, 1.5, 1e300,
    5e-324, math.nan, math.inf, -math.inf, True, False, None, _Int(7), _Float(2.5),
    {"a": [1, {}, [], {"b": (1, 2.5, None)}], 1: 2, 2.5: 3, False: [[]], None: 0, _Int(3): _Float(1.0)}, {True: "t"},
    [[[["deep", {"k": [{}]}]]]], {"\u00e9": "\u00fc", "x": {"y": {"z": []}}}, [1, [2, [3, []]], {}],
    {"path": "/tmp/x", "tensors": [{"key": "a/b", "dtype": "float32", "shape": [2, 3], "nbytes": 24}]},
]


@pytest.mark.parametrize("options", [{}, {"indent": 2}, {"indent": 2, "ensure_ascii": False},
                                     {"separators": (",", ":")}, {"ensure_ascii": False},
                                     {"indent": 0}, {"indent": "\t", "separators": (";", "=")}],
                         ids=repr)
@pytest.mark.parametrize("value", VALUES, ids=lambda v: repr(v)[:40])
def test_json_writer_writes_what_json_dumps_writes(value, options) -> None:
    assert json_writer.dumps(value, **options) == json.dumps(value, **options)


@pytest.mark.parametrize("value", [{1j: 1}, [set()], {"a": object()}, b"bytes", {(1, 2): 3}],
                         ids=["complex-key", "set", "object", "bytes", "tuple-key"])  # (repr: an address)
@pytest.mark.parametrize("options", [{}, {"indent": 2}], ids=repr)
def test_json_writer_refuses_what_json_dumps_refuses(value, options) -> None:
    with pytest.raises(TypeError) as expected:
        json.dumps(value, **options)
    with pytest.raises(TypeError) as got:
        json_writer.dumps(value, **options)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("options", [{}, {"indent": 2}], ids=repr)
def test_json_writer_refuses_a_circular_container(options) -> None:
    loop: list[object] = []
    loop.append({"again": loop})
    with pytest.raises(ValueError, match="^Circular reference detected$"):
        json_writer.dumps(loop, **options)


@pytest.mark.parametrize("options", [{"indent": 2, "ensure_ascii": False}, {"indent": "\t"}], ids=repr)
def test_an_indented_encoder_writes_each_part_as_json_dumps_writes_it_nested(options) -> None:
    """One encoder, made once, writes values one after another as json.dumps writes each ``level`` containers deep
    (a large document written a part at a time); a value it refuses leaves it writing the next ones right."""
    encode = json_writer.indented_encoder(options["indent"], options.get("ensure_ascii", True))
    step = options["indent"] if isinstance(options["indent"], str) else " " * options["indent"]
    for level in (0, 1, 3):
        for value in VALUES:
            assert encode(value, level) == json.dumps(value, **options).replace("\n", "\n" + step * level)
        loop: list[dict[str, object]] = []
        loop.append({"again": loop})
        odd: list[object] = [1, [{"a": object()}]]
        for refused, error in [(loop, ValueError), (odd, TypeError)]:
            with pytest.raises(error):
                encode(refused, level)
        loop[0]["again"] = []  # the very containers, now writable: none is still taken for open
        odd[1][0]["a"] = 2  # type: ignore[index]
        for value in (loop, odd):
            assert encode(value, level) == json.dumps(value, **options).replace("\n", "\n" + step * level)


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("value", [*VALUES, [{"key": f"k{i}", "shape": [i, 2], "name": "\u00e9"} for i in range(200)],
                                   {"path": "p", "tensors": [{"key": f"k{i}", "nested": [list(range(i % 70))]}
                                                             for i in range(150)], "more": {str(i): i for i in range(90)}},
                                   [{"tensors": [[j] * 3 for j in range(100)], "x": {"y": ["\udcff"] * 80}}] * 2,
                                   {"odd \udcfe key": [{"\udcff": 1}] * 70, "b": {"c": 2}}],
                         ids=lambda v: repr(v)[:40])
def test_json_written_a_part_at_a_time_is_json_text(value, level, capsys) -> None:
    """ckpt's --json text made whole (json_text) and written a part at a time (write_json, every print_json) is
    the same text: large containers an item at a time, undecodable bytes escaped as the whole document's were."""
    from ckpt_cli.render.common import json_text, write_json

    write_json(value, level)
    whole = json_text(value).replace("\n", "\n" + "  " * level)
    assert capsys.readouterr().out == whole


# -- the end of the process: no interpreter teardown after a command (ckpt_cli.fast.end_process) --------------
def _cleanup_lines(stderr: str) -> list[str]:
    """What ``python -v`` prints as the interpreter tears itself down (one line per module it frees)."""
    return [line for line in stderr.splitlines() if line.startswith("# cleanup")]


@pytest.mark.parametrize("entry", [[str(LAUNCHER)], ["-m", "ckpt_cli"]], ids=["scripts/ckpt", "python -m ckpt_cli"])
@pytest.mark.parametrize("argv, status, at_once", [
    (["ls", str(NAME_BASED)], 0, True), (["diff", "-q", str(NAME_BASED), str(NAME_BASED)], 0, True),
    (["ls", "/nonexistent/ckpt"], 3, True), (["ls", "--sort", "bogus", "x"], 2, False)],
    ids=["ls", "diff", "missing", "usage (click)"])
def test_a_command_ends_the_process_without_the_interpreters_teardown(entry, argv, status, at_once) -> None:
    """After a command of the fast path the process ends at once (``os._exit``): its output flushed, its exit
    status kept, none of the teardown that frees every module (``python -v`` lists each as ``# cleanup``). A
    line click handles ends as Python ends."""
    quick = subprocess.run([sys.executable, "-v", *entry, *argv], capture_output=True, text=True, env=child_env())
    plain = subprocess.run([sys.executable, *entry, *argv], capture_output=True, text=True, env=child_env())
    assert quick.returncode == plain.returncode == status
    assert quick.stdout == plain.stdout and (status != 0 or argv[0] == "diff" or "global_step" in quick.stdout)
    assert (_cleanup_lines(quick.stderr) == []) == at_once


def test_a_script_run_by_ckpt_run_ends_as_python_ends(tmp_path) -> None:
    """``ckpt run SCRIPT`` runs the user's code: what it left to the interpreter's exit (a file it never closed,
    flushed when the file object is finalised) happens as under ``python SCRIPT``."""
    out = tmp_path / "left-open.txt"
    script = tmp_path / "script.py"
    script.write_text(f"f = open({str(out)!r}, 'w')\nf.write('written at exit')\n")
    done = subprocess.run([sys.executable, str(LAUNCHER), "run", str(script)], capture_output=True, text=True,
                          env=child_env())
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "written at exit"


LAUNCHER_LIKE = """import sys
{setup}
from ckpt_cli import fast
from ckpt_cli.fast import end_process
fast._ENDS_AT_ONCE[0] = True  # as after a command of the fast path
sys.stdout.write("out;")
sys.stderr.write("err;")
end_process({status}, sys._getframe())
"""


@pytest.mark.parametrize("setup, status, stdout, code", [
    ("", "4", "out;", 4),
    ("", "None", "out;", 0),
    ("import atexit\natexit.register(lambda: sys.stdout.write('atexit ran'))", "0", "out;atexit ran", 0),
    ("import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), sys.stdout.write('thread done'))).start()",
     "0", "out;thread done", 0),
    ("", "'a message'", "out;", 1),
], ids=["status", "None", "atexit", "thread", "message"])
def test_the_process_ends_as_sys_exit_would(tmp_path, setup, status, stdout, code) -> None:
    """What ends the process is what ``sys.exit`` gives: the status (0 for None, 1 and the text on stderr for a
    message), buffered output written; and where anything may still run at exit - an ``atexit`` function, a
    thread that is not a daemon - Python's own exit, which runs it."""
    script = tmp_path / "launcher"
    script.write_text(LAUNCHER_LIKE.format(setup=setup, status=status))
    done = subprocess.run([sys.executable, "-v", str(script)], capture_output=True, text=True, env=child_env())
    assert done.returncode == code and done.stdout == stdout
    assert done.stderr.startswith("err;") or "\nerr;" in done.stderr
    assert (_cleanup_lines(done.stderr) == []) == (setup == "" and code != 1)
    if code == 1:
        assert "a message" in done.stderr


def test_a_program_running_the_launcher_gets_control_back() -> None:
    """``runpy.run_path(launcher)`` (a test, a wrapper) sees the launcher's SystemExit, as before."""
    code = (f"import runpy, sys\nsys.argv = ['ckpt', 'ls', {str(NAME_BASED)!r}]\ntry:\n"
            f"    runpy.run_path({str(LAUNCHER)!r}, run_name='__main__')\nexcept SystemExit as done:\n"
            f"    sys.stderr.write('exit %r' % (done.code,))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env())
    assert done.returncode == 0 and done.stderr == "exit 0" and "global_step" in done.stdout


@pytest.mark.parametrize("size, threads", [(1000, 1), (16 << 20, 3)], ids=["small", "large"])
def test_a_small_file_is_read_back_on_one_thread(tmp_path, monkeypatch, size, threads) -> None:
    """Reading a written file back (``check_placed``) starts no threads for less than ``PIPELINE_BYTES``: they
    cost more than the reading (two threads and their hand-overs for a few kilobytes)."""
    from formats.core import parallel
    from formats.io import placed
    from formats.io.crc import crc32c

    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    path = tmp_path / "f"
    path.write_bytes(data)
    item = placed.Placed("k", None, 0, size, "uint8")
    item.crc = crc32c(data)
    asked = []
    real = parallel.map_ordered
    monkeypatch.setattr(parallel, "map_ordered", lambda fn, items, jobs=1, **kw: asked.append(jobs) or real(fn, items, jobs, **kw))
    assert placed.check_placed(str(path), [item], jobs=3) == []
    assert asked == [threads]


def test_json_writer_writes_nesting_deeper_than_its_recursion_as_json_dumps() -> None:
    """A document nested 600 deep (ls --tree --json of a key of 600 segments): the indented writer recurses two
    frames a level and runs out first; what is printed is still json.dumps' text (it failed with RecursionError)."""
    deep: dict = {}
    node = deep
    for i in range(600):
        node["c"] = {"name": f"n{i}"}
        node = node["c"]
    assert json_writer.dumps(deep, indent=2, ensure_ascii=False) == json.dumps(deep, indent=2, ensure_ascii=False)
    encode = json_writer.indented_encoder(2, ensure_ascii=False)  # (and a part of a document written in parts)
    for level in (0, 3):
        assert encode(deep, level) == json.dumps(deep, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * level)
    assert encode({"a": [1]}, 1) == '{\n    "a": [\n      1\n    ]\n  }'  # (and it goes on as before)


def test_an_object_graph_is_encoded_as_protobuf_whatever_its_varint_table_holds() -> None:
    """The object graph's varint table grows with the graph (128 entries for a small one, 29 million instructions
    for all 16,384): a small graph, then one of 300 nodes (ids and item lengths beyond 127) and the small one again
    are each what the protobuf runtime writes for the same nodes."""
    from formats.concepts.object_graph import Attribute, ChildRef, ObjectNode
    from formats.concepts.object_graph_codec import encode_object_graph
    from tests.proto_oracle import oracle

    graph_class = oracle("TrackableObjectGraph")

    def graph(count: int) -> list[ObjectNode]:
        root = ObjectNode(0, children=[ChildRef(i, f"layer_{i}") for i in range(1, count)])
        return [root] + [ObjectNode(i, attributes=[Attribute("VARIABLE_VALUE", f"model/layer_{i}/kernel",
                                                                f"layer_{i}/.ATTRIBUTES/VARIABLE_VALUE")])
                         for i in range(1, count)]

    def expected(nodes: list[ObjectNode]) -> bytes:
        message = graph_class()
        for node in nodes:
            out = message.nodes.add()
            for child in node.children:
                out.children.add(node_id=child.node_id, local_name=child.local_name)
            for a in node.attributes:
                out.attributes.add(name=a.name, full_name=a.full_name, checkpoint_key=a.checkpoint_key)
        return message.SerializeToString(deterministic=True)

    for count in (3, 300, 3):
        nodes = graph(count)
        assert encode_object_graph(nodes, fill_has_values=False) == expected(nodes)


def test_the_exclusive_rename_is_called_without_ctypes(tmp_path) -> None:
    """``renameat2`` through ``_ctypes`` alone (:mod:`formats.io.c_library`): it refuses an existing target with
    EEXIST, leaving both files as they were, renames onto a free name, and exchanges two files - as the system
    call does (the files' contents are the oracle); ``ctypes`` itself is not imported."""
    import platform

    from formats.io import atomic

    if platform.system() != "Linux":
        pytest.skip("renameat2 is Linux's")
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("A")
    b.write_text("B")
    with pytest.raises(FileExistsError) as refused:
        atomic._renameat2(str(a), str(b), atomic._NOREPLACE)
    assert refused.value.errno == 17 and (a.read_text(), b.read_text()) == ("A", "B")
    assert atomic._renameat2(str(a), str(b), atomic._EXCHANGE) and (a.read_text(), b.read_text()) == ("B", "A")
    assert atomic._renameat2(str(a), str(tmp_path / "c"), atomic._NOREPLACE)
    assert not a.exists() and (tmp_path / "c").read_text() == "B"
    code = ("import sys; from formats.io.c_library import c_function\n"
            "assert c_function('renameat2', 'izizI') is not None and c_function('no_such_function_x', 'i') is None\n"
            "print('ctypes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env())
    assert done.returncode == 0 and done.stdout == "False\n", done.stderr


@pytest.mark.parametrize("argv", [["rename", "--map", "global_step=step"], ["convert", "--to", "safetensors"],
                                  ["convert", "--to", "tf-object"]], ids=["rename", "safetensors", "tf-object"])
def test_an_exclusive_write_imports_no_ctypes_or_threading(tmp_path, argv) -> None:
    """A write without --force puts its output in place exclusively (``renameat2``) without ``ctypes``, and flushes
    a bundle's small data file on the interpreter's own thread, without ``threading`` (and its ``functools``)."""
    out = tmp_path / ("x.safetensors" if "safetensors" in argv else "out")
    modules = _imported([argv[0], str(NAME_BASED), "-o", str(out), *argv[1:]])
    assert "formats.io.c_library" in modules and {"ctypes", "types", "threading", "functools"} & modules == set()


@pytest.mark.parametrize("size", [0, 1, 1000, (1 << 16) - 1, 1 << 16, 1 << 20], ids=str)
def test_same_bytes_loads_ctypes_only_for_large_buffers(size) -> None:
    """``same_bytes`` answers as ``bytes == bytes`` for buffers of every size, each byte position changed in turn
    at the ends and the middle; under :data:`~formats.core.memcmp.SMALL` bytes (the first buffer: one of them is
    ``size + 1`` bytes long) without importing ``ctypes``."""
    code = f"""import mmap, sys
from formats.core.memcmp import same_bytes
data = bytes(i * 7 % 251 for i in range({size}))
m = mmap.mmap(-1, max(1, len(data))); m.write(data)
answers = [same_bytes(data, bytearray(data)), same_bytes(memoryview(m)[:len(data)], data),
           same_bytes(data, data + b"x"), same_bytes(data + b"x", data)]
for at in sorted({{0, len(data) // 2, len(data) - 1}} if data else set()):
    changed = bytearray(data); changed[at] ^= 1
    answers.append(same_bytes(memoryview(m)[:len(data)], changed))
print(answers, "ctypes" in sys.modules)"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env())
    assert done.returncode == 0, done.stderr
    changes = 0 if size == 0 else len({0, size // 2, size - 1})
    assert done.stdout == f"{[True, True, False, False] + [False] * changes} {size + 1 >= 1 << 16}\n"


HEAVY_STDLIB = JSON_STACK | {"typing", "contextlib", "threading", "ctypes", "types", "concurrent.futures", "importlib",
                             "importlib.metadata", "numpy", "hashlib"}
"""What no command of the fast path needs on a small bundle (each a millisecond or more of start-up)."""
OTHER_FORMATS = {"formats.tf_v1.format", "formats.keras_h5.format", "formats.npz.format", "formats.orbax.format",
                 "formats.openai_npy.format"}
"""The formats after the bundle's in the registry's order: asked only about a path no earlier format claims."""
GRAPH_MODEL = {"formats.concepts.object_graph", "formats.ops.convert.graph_build"}
"""The object graph's model (nodes as objects): a name-based checkpoint's new graph is planned and encoded as columns."""
SAVED_MODEL = {"formats.saved_model", "formats.saved_model.names", "formats.saved_model.format"}
"""The format before the bundle's, which claims a file only by its name (``registry.BUILTIN_FILE_NAMES``)."""


@pytest.mark.parametrize("argv, needed, unneeded", [
    (["verify", "{src}"], {"formats.ops.compare.verify"}, set()),
    (["diff", "{src}", "{src}"], {"formats.ops.compare.diff"},
     {"formats.core.comparison", "formats.core.values", "formats.core.sources"}),  # no pair differs
    (["rename", "{src}", "-o", "{out}", "--map", "global_step=step"], {"formats.tf_bundle.writer"},
     {"formats.ops.edit.on_cluster"}),
    (["rename", "{src}", "-o", "{out}", "--map", "global_step=step", "--dry-run"], {"formats.ops.convert.rename"},
     {"formats.tf_bundle.writer", "formats.core.sources"}),
    (["convert", "{src}", "-o", "{out}", "--to", "tf-object", "--dry-run"], {"formats.ops.convert.name_to_object"},
     {"formats.tf_bundle.writer", *GRAPH_MODEL, "math", "formats.core.executors"}),
    (["convert", "{src}", "-o", "{out}", "--to", "tf-object"], {"formats.tf_bundle.writer"}, GRAPH_MODEL),
    (["edit", "{src}", "-o", "{out}", "--drop-optimizer", "--dry-run"], {"formats.ops.edit.build"},
     {"formats.ops.edit.on_cluster", "formats.discover.units", "formats.safetensors.format", "formats.core.executors",
      "math"}),
    (["edit", "{src}", "-o", "{out}", "--drop-optimizer"], {"formats.tf_bundle.writer"},
     {"formats.ops.edit.on_cluster", "formats.discover.units", "formats.safetensors.format"}),
], ids=["verify", "diff", "rename", "rename-dry-run", "convert-dry-run", "convert", "edit-dry-run", "edit"])
def test_a_command_of_a_small_bundle_imports_only_what_it_needs(tmp_path, argv, needed, unneeded) -> None:
    """Each command of the fast path on a small name-based bundle (issue 38: start-up within 2x ``python -c pass``)
    imports none of the standard library's heavy modules, none of the formats after the bundle's (an edit
    listed every write target: every format, and a scan of every installed package for plugins), and not the
    cluster's machinery on local threads."""
    words = [w.format(src=NAME_BASED, out=tmp_path / "out") for w in argv]
    modules = _imported(words)
    assert needed <= modules
    assert modules & (HEAVY_STDLIB | OTHER_FORMATS | SAVED_MODEL | unneeded) == set()


@pytest.mark.parametrize("argv", [
    ["rename", "{src}", "-o", "{out}", "--map", "net=model"],
    ["convert", "{src}", "-o", "{out}", "--to", "tf-name"],
    ["edit", "{src}", "-o", "{out}", "--drop-optimizer"],
], ids=["rename", "convert", "edit"])
def test_a_command_of_a_small_object_based_bundle_imports_no_numpy(tmp_path, argv) -> None:
    """The writing commands on a small object-based bundle (TensorFlow's, with an optimizer's slots) work its graph
    out in plain Python: a rename once imported numpy for the nodes owning slots and the attributes' owners, a
    convert and an edit for the optimizer of each node, an edit to tell that the kept graph keeps its paths and
    to size the graph's string, a convert ``collections`` for a vote (each about 300M instructions, 8x ``python
    -c pass``, where the rest of the command takes 2-3x)."""
    words = [w.format(src=OBJECT_BASED, out=tmp_path / "out") for w in argv]
    modules = _imported(words)
    assert "formats.tf_bundle.writer" in modules
    assert modules & (HEAVY_STDLIB | OTHER_FORMATS | SAVED_MODEL) == set()


def test_no_two_builtin_formats_share_a_name_or_a_layout() -> None:
    """What lets ``get_format`` and ``format_of`` look at the formats imported already first."""
    from formats.core import registry
    from formats.core.format import layouts_of

    specs = registry.builtin_formats()
    names = [spec.name for spec in specs]
    layouts = [layout for spec in specs for layout in layouts_of(spec)]
    assert len(set(names)) == len(names) and len(set(layouts)) == len(layouts), (names, layouts)


def test_a_format_skipped_by_file_name_claims_no_file_of_another_name(tmp_path, monkeypatch) -> None:
    """``registry.BUILTIN_FILE_NAMES`` holds the SavedModel format's own file names, and skipping it for other
    files changes no claim: every file of the test data and files named almost so are claimed as before."""
    from formats.core import registry
    from formats.discover import resolve
    from formats.saved_model.names import GRAPH_FILE, TEXT_GRAPH_FILE

    assert registry.BUILTIN_FILE_NAMES == {"formats.saved_model.format:FORMAT": (GRAPH_FILE, TEXT_GRAPH_FILE)}
    saved_model = registry._load("formats.saved_model.format:FORMAT")
    names = ["saved_model.pb.bak", "saved_model", "x.pb", "saved_model.pbtxt~", GRAPH_FILE, TEXT_GRAPH_FILE]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    data = Path(__file__).parent / "data"
    files = [str(p) for p in sorted(data.rglob("*")) if p.is_file()][:3000] + [str(tmp_path / n) for n in names]
    files += [str(tmp_path / "gone" / GRAPH_FILE), str(tmp_path / "prefix-only")]
    for path in files:
        skipped = os.path.basename(path) not in (GRAPH_FILE, TEXT_GRAPH_FILE)
        assert (saved_model.resolve(path) is None) == skipped or not os.path.lexists(path), path
    with_skip = [resolve.claim(p, plugins=False) for p in files]
    monkeypatch.setattr(registry, "BUILTIN_FILE_NAMES", {})
    assert [resolve.claim(p, plugins=False) for p in files] == with_skip
    assert [t.format if t else None for t in with_skip[-8:-2]] == [None, None, None, None, "saved-model",
                                                                   "saved-model"]


@pytest.mark.parametrize("what", ["convert an object-based bundle", "ls a safetensors file", "ls an npz file"])
def test_an_executor_in_an_annotation_imports_no_concurrent_futures(tmp_path, what) -> None:
    """Readers and transforms name ``concurrent.futures.Executor`` in annotations only: importing the package at
    module level brought ``logging`` (with ``traceback``, ``string``, ``threading``: about 8 ms of start-up)."""
    import numpy as np
    from safetensors.numpy import save_file

    if what.startswith("convert"):
        argv = ["convert", str(CORPUS / "seed_keras2" / "tf_ckpts" / "ckpt-8"), "-o", str(tmp_path / "out" / "ckpt"),
                "--to", "tf-name"]
    elif "safetensors" in what:
        save_file({"w": np.ones(3, np.float32)}, str(tmp_path / "a.safetensors"))
        argv = ["ls", str(tmp_path / "a.safetensors")]
    else:
        np.savez(tmp_path / "a.npz", w=np.ones(3, np.float32))
        argv = ["ls", str(tmp_path / "a.npz")]
    modules = _imported(argv)
    assert {"formats.ops.convert.transforms"} <= modules or not what.startswith("convert")
    assert modules & {"concurrent.futures", "logging"} == set()


def test_ls_of_a_small_safetensors_file_imports_neither_numpy_nor_glob(tmp_path) -> None:
    """Its header's nesting is measured without numpy (a header up to 1 MiB), and telling that it is no V1
    checkpoint needs no ``glob``: 400M -> 108M instructions, 10x -> 2.8x ``python -c pass``."""
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"w": np.ones(3, np.float32)}, str(tmp_path / "a.safetensors"))
    modules = _imported(["ls", str(tmp_path / "a.safetensors")])
    assert "formats.safetensors.reader" in modules
    assert modules & {"numpy", "glob", "concurrent.futures", "logging"} == set()



def test_the_edit_packages_functions_are_not_shadowed_by_their_modules() -> None:
    """``formats.ops.edit.edit`` and ``.average`` are the functions, though modules of the same names are imported
    (a package imported its names lazily for a while: the import of a submodule then set the package's name to the
    module, and ``formats.edit`` was a module)."""
    import importlib

    import formats

    for name in ("edit", "average"):
        module = importlib.import_module(f"formats.ops.edit.{name}")
        function = getattr(module, name)
        assert callable(function) and type(function).__name__ == "function"
        assert getattr(importlib.import_module("formats.ops.edit"), name) is function
        assert getattr(formats, name) is function


@pytest.fixture(scope="module")
def graph_in_columns(tmp_path_factory) -> str:
    """An object-based bundle whose graph is decoded into columns (above ``SMALL_GRAPH_BYTES``)."""
    from formats.concepts.object_graph_codec import SMALL_GRAPH_BYTES
    from tests.scale_bundles import name_based, object_based

    prefix = object_based(name_based(tmp_path_factory.mktemp("columns"), 2000))
    with formats.open_checkpoint(prefix) as ckpt:
        assert ckpt["_CHECKPOINTABLE_OBJECT_GRAPH"].raw.size > SMALL_GRAPH_BYTES
    return prefix


@pytest.mark.parametrize("argv", [["ls", "--tree"], ["extract", "-o", "{out}.npz"],
                                  ["edit", "-o", "{out}", "--exclude", "model/layer_0/*"],
                                  ["convert", "-o", "{out}", "--to", "tf-name"]],
                         ids=["ls --tree", "extract", "edit", "convert --to tf-name"])
def test_a_graph_in_columns_is_read_without_numpys_masked_arrays(graph_in_columns, tmp_path, argv) -> None:
    """A graph decoded into columns asks for each value once (``sorted_unique``), not with ``numpy.unique``, which
    in numpy 2 imports :mod:`numpy.ma` to ask whether the array is masked (1.3 MiB and 8 ms of a command)."""
    modules = _imported([argv[0], graph_in_columns, *[a.replace("{out}", str(tmp_path / "out")) for a in argv[1:]]])
    assert "formats.concepts.object_graph_columns" in modules and "numpy" in modules
    if "numpy.ma" in _numpys_own_imports():
        pytest.skip("this numpy imports numpy.ma itself (numpy 1)")
    assert "numpy.ma" not in modules


def _numpys_own_imports() -> set[str]:
    """The modules ``import numpy`` alone imports (numpy 1 imports :mod:`numpy.ma` itself; numpy 2 when asked)."""
    done = subprocess.run([sys.executable, "-c", "import sys, numpy; print(' '.join(sys.modules))"],
                          capture_output=True, text=True, env=child_env(PYTHONPATH=os.pathsep.join(site_dirs())))
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stdout.split())


@pytest.mark.parametrize("seed", range(40))
def test_sorted_unique_is_numpys_unique(seed) -> None:
    import numpy as np

    from formats.core.arrays import sorted_unique

    rng = np.random.default_rng(seed)
    values = rng.integers(-5, int(rng.integers(1, 50)), size=int(rng.integers(0, 60))).astype(
        rng.choice([np.int32, np.int64, np.intp]))
    found = sorted_unique(values)
    assert found.dtype == values.dtype and found.tolist() == np.unique(values).tolist()
