"""The console script's click-free path for every command (ckpt_cli/fast.py): the same output, status and
errors as the click command, and none of click, rich, typing or dataclasses imported on the way."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from ckpt_cli import fast
from ckpt_cli.main import cli
from formats.core import registry
from tests.conftest import CORPUS
from tests.installed import LAUNCHER, child_env, site_dirs

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
RUN_DIR = CORPUS / "seed_slots" / "tf_ckpts"


PLAIN = [
    ["ls", "a", "--filter", "x*", "-f=y", "-fz", "--sort=size", "b", "-r", "--json"], ["ls", "--tree", "--names", "a"],
    ["verify", "-j", "2", "a", "--json", "--jobs=3"], ["verify", "--against", "a", "b"],
    ["verify", "--match", "name", "--against", "s", "a", "--map", "x=y", "--rules", "r.toml"],
    ["diff", "--atol", "1e-3", "--rtol=0.5", "a", "b"], ["diff", "--map", "x=y", "--regex", "a=b", "a", "b", "-q"],
    ["diff", "--strip-prefix-a", "m", "--equal-nan", "--keys-only", "--names", "-f", "k*", "a", "b"],
    ["rename", "a", "--map", "x=y", "-o", "o", "--all", "--dry-run", "-v", "--link", "-j", "1"],
    ["convert", "a", "-o", "b", "--to", "npz", "--hparam", "x=1", "--hparam", "y=2.5", "--learning-rate", "0.1"],
    ["convert", "a", "-o", "b", "--to", "keras3-h5", "--max-shard-size", "1.5GiB", "--template", "t"],
    ["convert", "a", "-o", "b", "--to", "tf-name", "--slot-names", "tf1", "--update-state", "--force"],
    ["stats", "p"], ["stats", "p", "k*", "j*", "--check-finite", "--names", "--json", "-j", "1"],
    ["stats", "p", "--hist", "--bins", "16", "--ascii"], ["stats", "p", "--columns", "mean,STD,nan"], ["trend", "d", "--plot", "--stat", "change", "--ascii"],
    ["diff", "--plot", "--ascii", "a", "b"],
    ["show", "p", "k[0:2]", "--precision", "3", "--threshold=0", "--edgeitems", "2", "--full", "--json"],
    ["extract", "p", "a", "b", "-o", "x.npz", "--format", "npz", "--by", "name", "--include-graph", "--allow-pickle"],
    ["graph", "p", "--format", "mermaid"], ["trend", "d"], ["trend", "d", "a*", "--check-finite", "--json"],
    ["doctor", "c", "--against", "t", "--write-rules", "r.json", "--ignore-optimizer", "--force"],
    ["edit", "s", "-o", "o", "--drop-optimizer", "--select", "a*", "--exclude", "b", "--by", "name",
     "--cast", "float32=bfloat16", "--cast-model-only", "--shards", "2", "--max-shard-size", "500MB", "--to", "npz"],
    ["average", "a", "b", "c", "-o", "o", "--drop-optimizer", "--shards", "1"], ["average", "d", "--last", "3", "-o", "o"],
    ["run", "script.py", "--tf_checkpoint_path", "x", "-q", "y"], ["completion", "zsh"],
    ["report", "a", "b", "-o", "r.html", "--kind", "diff", "-f", "k*", "--bins", "16", "--force", "--json", "-j", "1"],
]
"""Command lines of every command the fast path takes."""


@pytest.mark.parametrize("argv", PLAIN, ids=lambda a: " ".join(a))
def test_the_fast_path_parses_a_line_as_click_does(argv: list[str]) -> None:
    """One spec, two parsers: the parameters the fast path gives a line are those click gives it (the click
    command is built from the same spec; conversions such as --hparam's run in both)."""
    parsed = fast.parse(argv)
    assert parsed is not None
    spec, flags, params = parsed
    assert spec.name == argv[0] and flags == {"traceback": False, "no_color": False, "quiet": False}
    command = cli.get_command(click.Context(cli), argv[0])
    with command.make_context(argv[0], list(argv[1:])) as ctx:
        assert dict(params) == ctx.params


def test_global_flags_are_taken_before_and_after_the_command() -> None:
    spec, flags, params = fast.parse(["-q", "--no-color", "ls", "a", "--traceback"])  # type: ignore[misc]
    assert flags == {"traceback": True, "no_color": True, "quiet": True} and params.paths == ("a",)
    spec, flags, params = fast.parse(["diff", "-q", "a", "b"])  # type: ignore[misc]
    assert params.quiet and not flags["quiet"]  # diff's own -q


@pytest.mark.parametrize("argv", [
    ["ls", "-h"], ["ls"], ["ls", "--", "x"], ["ls", "-rf", "x", "p"], ["ls", "--sort", "bogus", "p"],
    ["ls", "--sort"], ["ls", "--json=1", "p"], ["ls", "--fil", "x", "p"], ["--version"],
    ["--unknown-global", "ls", "p"], ["ls", "-rq", "p"], ["ls", "-r=1", "p"], [],
    ["verify", "--jobs", "-1", "p"], ["verify", "-j", "two", "p"], ["verify", "--jobs"], ["verify"],
    ["diff", "a"], ["diff", "a", "b", "c"], ["diff", "--atol", "x", "a", "b"],
    ["rename", "a", "--map", "x=y"], ["rename", "a", "b", "-o", "c"], ["rename", "-o", "c"], ["rename", "a", "-o"],
    ["convert", "a", "-o", "b"], ["convert", "a", "--to", "tf-object"], ["convert", "a", "-o", "b", "--to", "bogus"],
    ["convert", "a", "c", "-o", "b", "--to", "npz"], ["convert", "a", "-o", "b", "--to", "npz", "--hparam", "x"],
    ["convert", "a", "-o", "b", "--to", "keras3-h5", "--max-shard-size", "1XB"],
    ["convert", "a", "-o", "b", "--to", "tf-name", "--slot-names", "tf3"],
    ["show", "p", "k", "--precision", "31"], ["show", "p"], ["edit", "s", "-o", "o", "--cast", "float32"],
    ["average", "d", "--last", "1", "-o", "o"], ["completion", "tcsh"], ["run"], ["doctor", "c"],
    ["nosuchcommand", "x"],
])
def test_lines_that_need_click_go_to_click(argv: list[str]) -> None:
    assert fast.parse(argv) is None


def run_click(*args: str):  # type: ignore[no-untyped-def]
    """The click CLI alone (``run_cli`` runs the shipped entry point, which takes these lines without click)."""
    from click.testing import CliRunner

    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


CASES = [
    ["ls", str(BUNDLE)],
    ["ls", "--json", str(BUNDLE)],
    ["ls", "--sort", "size", "--names", "-f", "*kernel*", str(BUNDLE)],
    ["ls", "--no-optimizer", "--tree", str(BUNDLE)],
    ["ls", str(RUN_DIR)],
    ["ls", "--json", str(RUN_DIR), str(BUNDLE)],
    ["ls", "-f", "no-such-key*", str(BUNDLE)],
    ["ls", str(BUNDLE) + "-missing"],
    ["-q", "ls", str(BUNDLE)],
    ["verify", str(BUNDLE)],
    ["verify", "--json", "-j", "2", str(BUNDLE), str(RUN_DIR)],
    ["verify", "--allow-loader-refusals", "--json", str(BUNDLE)],
    ["verify", str(BUNDLE) + "-missing"],
    ["verify", str(BUNDLE), str(BUNDLE) + "-missing"],
    ["diff", str(BUNDLE), str(BUNDLE)],
    ["diff", "--json", "-j", "2", str(BUNDLE), str(CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-3")],
    ["diff", "-q", str(BUNDLE), str(CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-4")],
    ["diff", "--keys-only", "--match", "name", "-f", "*", str(BUNDLE), str(CORPUS / "tf1_adam")],
    ["diff", str(BUNDLE), str(BUNDLE) + "-missing"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a).replace(str(CORPUS), "C"))
def test_same_output_and_status_as_click(argv: list[str], capsys) -> None:
    expected = run_click(*argv)
    parsed = fast.parse(argv)
    assert parsed is not None
    status = fast.run_fast(*parsed)
    out, err = capsys.readouterr()
    assert (status, out, err) == (expected.exit_code, expected.stdout, expected.stderr)


def _modules_after(argv: list[str]) -> set[str]:
    code = ("import sys\nfrom ckpt_cli.fast import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(' '.join(sorted(sys.modules)))\n")
    env = child_env()
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, check=True)
    return set(done.stderr.split())


NAME_BASED = CORPUS / "tf1_adam"
OBJECT_BASED = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"


@pytest.mark.parametrize("argv", [["ls", str(BUNDLE)], ["verify", NAME_BASED], ["verify", OBJECT_BASED],
                                  ["diff", NAME_BASED, NAME_BASED], ["ls", RUN_DIR]],
                         ids=["ls", "verify", "verify object-based", "diff", "ls DIR"])
def test_imports_nothing_it_does_not_need(argv: list[str]) -> None:
    """(A name-based bundle for diff: comparing two object-based ones compares the graphs, a string tensor,
    with numpy. Verifying one decodes its object graph from the string's bytes, without numpy: issue 24 #7.)"""
    modules = _modules_after([str(a) for a in argv])
    # `ls PREFIX` lists the index compactly without opening the bundle; the rest open it
    assert ("formats.tf_bundle.index_listing" if argv == ["ls", str(BUNDLE)] else "formats.tf_bundle.checkpoint") in modules
    assert registry._may_declare(registry.ENTRY_POINT_GROUP) is False  # no plugin installed here
    heavy = {"click", "rich", "typing", "dataclasses", "inspect", "json", "numpy", "importlib.metadata",
             "formats.keras_h5.reader", "formats.npz.reader", "formats.safetensors.reader"}
    assert modules & heavy == set()


def test_anything_else_goes_to_click() -> None:
    env = child_env()
    done = subprocess.run([sys.executable, "-m", "ckpt_cli", "ls", "--sort", "bogus", str(BUNDLE)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert "Invalid value for '--sort'" in done.stderr


@pytest.mark.parametrize("extra", [["--map", "dense=layer", "--link"], ["--add-prefix", "m", "--json"],
                                   ["--regex", "^(.*)$=x/\\1", "--dry-run"], ["--map", "nothing=matches"]])
def test_rename_writes_what_the_click_command_writes(tmp_path, capsys, extra: list[str]) -> None:
    source = CORPUS / "tf1_adam" / "model.ckpt-200"
    expected = run_click("rename", str(source), "-o", str(tmp_path / "a" / "ckpt"), *extra)
    parsed = fast.parse(["rename", str(source), "-o", str(tmp_path / "b" / "ckpt"), *extra])
    assert parsed is not None
    status = fast.run_fast(*parsed)
    out, err = capsys.readouterr()
    assert status == expected.exit_code
    assert out.replace(str(tmp_path / "b"), str(tmp_path / "a")) == expected.stdout
    assert err == expected.stderr
    written = [sorted(os.listdir(tmp_path / side)) if (tmp_path / side).exists() else [] for side in "ab"]
    assert written[0] == written[1]
    for name in written[0]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def _terminal(columns: int):  # type: ignore[no-untyped-def]
    """A pseudo-terminal ``columns`` wide, as a text stream, and the descriptor to read what was written."""
    import fcntl
    import pty
    import struct
    import termios

    main_fd, side_fd = pty.openpty()
    fcntl.ioctl(side_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    attrs = termios.tcgetattr(side_fd)
    attrs[1] &= ~termios.OPOST  # no \r added to line ends
    termios.tcsetattr(side_fd, termios.TCSANOW, attrs)
    return os.fdopen(side_fd, "w"), main_fd


def test_a_table_that_fits_the_terminal_is_written_without_rich(monkeypatch) -> None:
    from ckpt_cli.render.table import TextTable, _emit_fitting

    monkeypatch.delenv("NO_COLOR", raising=False)
    table = TextTable([("key", "left"), ("size", "right")], [["a/b", "1 B"], ["c", "20 B"]], [None, "green"])
    stream, main_fd = _terminal(40)
    assert _emit_fitting(table, [[("path", "bold"), (": 2 tensors", None)]], stream)
    stream.flush()
    assert os.read(main_fd, 4096).decode() == ("\x1b[1mkey  size\x1b[0m\na/b   1 B\n\x1b[32mc    20 B\x1b[0m\n"
                                               "\x1b[1mpath\x1b[0m: 2 tensors\n")
    narrow, _ = _terminal(8)
    assert not _emit_fitting(table, [], narrow)  # too wide: rich lays it out
    assert not _emit_fitting(TextTable([("key", "left")], [["é"]], [None]), [], stream)


@pytest.mark.parametrize("extra", [["--to", "tf-object", "--link"], ["--to", "tf-object", "--json", "--map", "dense=layer"],
                                   ["--to", "tf-object", "--dry-run", "--slot-names", "tf1"],
                                   ["--to", "tf-object", "--map", "nothing=matches", "--no-verify"],
                                   ["--to", "npz", "--force"], ["--to", "tf-name"]])
def test_convert_writes_what_the_click_command_writes(tmp_path, capsys, extra: list[str]) -> None:
    source = CORPUS / "tf1_adam" / "model.ckpt-200"
    a, b = (str(tmp_path / side / ("out.npz" if "npz" in extra else "ckpt")) for side in "ab")
    expected = run_click("convert", str(source), "-o", a, *extra)
    parsed = fast.parse(["convert", str(source), "-o", b, *extra])
    assert parsed is not None
    status = fast.run_fast(*parsed)
    out, err = capsys.readouterr()
    assert status == expected.exit_code
    assert out.replace(str(tmp_path / "b"), str(tmp_path / "a")) == expected.stdout
    assert err.replace(str(tmp_path / "b"), str(tmp_path / "a")) == expected.stderr
    written = [sorted(os.listdir(tmp_path / side)) if (tmp_path / side).exists() else [] for side in "ab"]
    assert written[0] == written[1]
    for name in written[0]:
        if not name.endswith(".npz"):  # a zip archive holds its files' times
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("argv", [["rename", "--map", "global_step=step", "--link"], ["convert", "--to", "tf-object", "--link"],
                                  ["convert", "--to", "tf-object"]], ids=["rename --link", "convert --link", "convert"])
def test_writing_a_bundle_imports_nothing_it_does_not_need(tmp_path, argv: list[str]) -> None:
    """Renaming or converting a name-based bundle to a bundle writes its object graph (a string scalar) and
    index without numpy, and takes over the data file without reading it into Python."""
    command, *options = argv
    modules = _modules_after([command, str(NAME_BASED / "model.ckpt-200"), "-o", str(tmp_path / "out" / "ckpt"),
                              *options])
    assert (tmp_path / "out" / "ckpt.index").exists()
    assert "formats.tf_bundle.writer" in modules
    heavy = {"click", "rich", "typing", "dataclasses", "inspect", "json", "numpy", "importlib.metadata", "hashlib",
             "socket", "formats.keras_h5.reader", "formats.npz.reader", "formats.safetensors.reader"}
    if command == "rename":  # a name-based rename needs no graph model, and a linked one flushes no data
        heavy |= {"formats.concepts.object_graph", "formats.concepts.roles", "threading"}
    assert modules & heavy == set()
    # the script runs with re already imported (_modules_after's own); through the launcher, none of these
    launched = _imported([command, str(NAME_BASED / "model.ckpt-200"), "-o", str(tmp_path / "again" / "ckpt"), *options],
                         [str(LAUNCHER)])
    # an object-based write flushes its data file on a thread (threading imports functools, and it collections)
    unneeded = {"re", "enum", "contextlib", *heavy} | ({"functools", "collections"} if command == "rename" else set())
    assert "formats.tf_bundle.writer" in launched and launched & unneeded == set()


@pytest.mark.parametrize("to", ["safetensors", "npz"])
def test_an_export_imports_no_other_targets_planner(tmp_path, to: str) -> None:
    """Issue 38 (start-up): ``convert --to safetensors|npz`` of a bundle loads neither the Keras nor the
    transformers planners (importing ``cross.export`` once imported every target's planner: 215 modules for a
    safetensors export, 161 now), nor ``typing``, nor the zip reader when it does not write a zip."""
    out = tmp_path / f"out.{to}"
    launched = _imported(["convert", str(NAME_BASED / "model.ckpt-200"), "-o", str(out), "--to", to], [str(LAUNCHER)])
    assert out.exists() and "formats.ops.convert.cross.export" in launched
    unneeded = {"formats.ops.convert.cross.keras_targets", "formats.ops.convert.cross.keras_model",
                "formats.ops.convert.hf.plan", "formats.orbax.format", "logging", "concurrent.futures"}
    if to == "safetensors":  # (numpy, which an npz export needs, imports typing)
        unneeded |= {"formats.io.zipped", "zipfile", "numpy", "typing"}
    assert launched & unneeded == set()


def test_ls_of_a_bundle_imports_no_stdlib_module_it_does_not_need() -> None:
    """Issue 24 #6: start-up as users run ckpt. Run without ``site`` (``-S``: no editable-install hook, which
    imports importlib itself), with the checkout and the dependencies' directories on the path: listing a
    bundle imports none of contextlib, glob, fnmatch, importlib (and warnings), nor the output-writing helpers;
    regular expressions are compiled only for names that need them."""
    code = ("import sys\nfrom ckpt_cli.fast import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "import re\nsys.stderr.write(' '.join(sorted(sys.modules)) + ' cached:%d' % len(re._cache))\n")
    env = child_env(PYTHONPATH=os.pathsep.join(site_dirs()))
    done = subprocess.run([sys.executable, "-S", "-c", code, "ls", str(BUNDLE)], capture_output=True, text=True,
                          env=env, check=True)
    modules = set(done.stderr.split())
    assert "formats.tf_bundle.index_listing" in modules
    assert {"crc32c._crc32c", "crc32c"} & modules  # the extension: a submodule from crc32c 2.5 on, before that the top
    unneeded = {"contextlib", "glob", "fnmatch", "importlib", "importlib.util", "importlib.machinery", "warnings",
                "typing", "formats.io.atomic"}
    assert modules & unneeded == set()
    assert "cached:0" in modules  # no pattern compiled (re is imported only by the check itself)


def _imported(argv: list[str], launcher: list[str]) -> set[str]:
    """The modules ``launcher ARGV`` imports (``-X importtime``), without ``site`` (``-S``: no editable-install
    hook), with the checkout and the dependencies' directories on the path."""
    env = child_env(PYTHONPATH=os.pathsep.join(site_dirs()))
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", *launcher, *argv], capture_output=True,
                          text=True, env=env, check=True)
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


START_UP_FREE = {"re", "enum", "functools", "typing", "formats.core.model", "formats.core.registry",
                 "formats.discover.resolve", "formats.api", "formats.tf_bundle.checkpoint", "ckpt_cli.main"}
"""What ``ckpt ls PREFIX`` does without (issue 24 #6): ``re`` with ``enum`` and ``functools`` cost half of
Python's own start, and resolving, registering and opening the checkpoint are not needed to list its index."""


def test_ls_of_a_prefix_through_the_launcher_imports_only_the_listing() -> None:
    """The installed ``ckpt`` (scripts/ckpt) imports no ``re`` before ckpt runs (pip's generated console
    script does), and listing a bundle by its prefix reads the index with the compact listing alone."""
    modules = _imported(["ls", str(BUNDLE)], [str(LAUNCHER)])
    assert "formats.tf_bundle.index_listing" in modules and "ckpt_cli.render.listing" in modules
    assert modules & START_UP_FREE == set()
    modules = _imported(["ls", "--json", "-f", "*kernel*", str(BUNDLE)], ["-m", "ckpt_cli"])
    assert modules & (START_UP_FREE - {"re", "enum", "functools"}) == set()  # a glob pattern compiles with re


def test_the_launcher_is_what_pip_installs() -> None:
    """``pip install .`` installs scripts/ckpt as ``bin/ckpt`` (its ``#!python`` line pointing at the
    environment's Python): pyproject names it, and no console-script entry point competes with it."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["script-files"] == ["scripts/ckpt"]
    assert "scripts" not in project["project"]
    launcher = (ROOT / "scripts" / "ckpt").read_text().splitlines()
    assert launcher[0] == "#!python" and "from ckpt_cli.fast import main  # noqa: E402" in launcher
    assert os.access(ROOT / "scripts" / "ckpt", os.X_OK)


@pytest.mark.parametrize("prefix", sorted(str(p)[:-len(".index")] for p in CORPUS.rglob("*.index")),
                         ids=lambda p: str(Path(p).relative_to(CORPUS)))
@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["table", "json"])
def test_ls_of_a_prefix_prints_what_opening_it_prints(prefix: str, extra: list[str], run_cli, monkeypatch) -> None:
    """Every corpus bundle listed by its prefix on the start-up path prints the bytes and exit status that
    resolving and opening it prints."""
    from ckpt_cli.commands import ls

    quick = run_cli("ls", *extra, prefix)
    monkeypatch.setattr(ls, "_bundle_listing", lambda path, patterns: None)
    opened = run_cli("ls", *extra, prefix)
    assert (quick.exit_code, quick.stdout, quick.stderr) == (opened.exit_code, opened.stdout, opened.stderr)


@pytest.mark.parametrize("argv", [["verify", str(BUNDLE)], ["verify", str(NAME_BASED / "model.ckpt-200")],
                                  ["diff", str(NAME_BASED / "model.ckpt-200"), str(NAME_BASED / "model.ckpt-200")]],
                         ids=["object-based", "name-based", "diff"])
def test_verify_through_the_launcher_imports_no_regular_expressions_or_enum(argv: list[str]) -> None:
    """``ckpt verify`` of a bundle (its object graph decoded too) and ``ckpt diff`` go without re, enum, functools,
    contextlib and the collections package (namedtuples are formats.core.value_tuples'): about 6 ms of their
    start-up (issue 24 #6, #7; issue 25)."""
    modules = _imported(argv, [str(LAUNCHER)])
    assert f"formats.ops.compare.{argv[0]}" in modules
    assert modules & {"re", "enum", "functools", "contextlib", "typing", "collections"} == set()


@pytest.mark.parametrize("entry", [f"runpy.run_path({str(LAUNCHER)!r}, run_name='__main__')",
                                   "runpy.run_module('ckpt_cli', run_name='__main__', alter_sys=True)"],
                         ids=["scripts/ckpt", "python -m ckpt_cli"])
def test_the_entry_points_freeze_the_start_up_objects(entry: str) -> None:
    """Both process entry points move Python's start-up objects to the permanent generation before ckpt's
    imports (the full collections those set off skip them: about 1 ms of a 20 ms ``ckpt ls``); importing
    ckpt as a library freezes nothing."""
    code = (f"import gc, runpy, sys\nsys.argv = ['ckpt', 'ls', {str(BUNDLE)!r}]\nbefore = gc.get_freeze_count()\n"
            f"try:\n    {entry}\nexcept SystemExit:\n    pass\nsys.stderr.write('%d %d' % (before, gc.get_freeze_count()))\n")
    env = child_env()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    before, after = map(int, done.stderr.split())
    assert before == 0 and after > 1000
    library = subprocess.run([sys.executable, "-c", "import gc, formats, ckpt_cli.fast; print(gc.get_freeze_count())"],
                             capture_output=True, text=True, env=env, check=True)
    assert library.stdout.strip() == "0"


def test_results_are_kept_to_the_end_only_by_the_program(capsys) -> None:
    """``keep_until_exit`` (ckpt_cli/kept.py): a command run through ``main`` with a command line given (a caller,
    a test) keeps nothing; run as the program (no command line given: the process's own) its results are held to
    the end and what is alive is left out of later collections (``gc.freeze``)."""
    import gc

    from ckpt_cli import kept

    before = len(kept._KEPT)
    with pytest.raises(SystemExit) as done:
        fast.main(["ls", "--tree", str(BUNDLE)])
    assert done.value.code == 0 and len(kept._KEPT) == before and not kept.KEEPING[0]
    assert "bias" in capsys.readouterr().out
    frozen = gc.get_freeze_count()
    kept.KEEPING[0] = True
    try:
        value = object()
        kept.keep_until_exit(value)
        assert kept._KEPT[-1] is value and gc.get_freeze_count() > frozen
    finally:
        kept.KEEPING[0] = False
        del kept._KEPT[before:]
        gc.unfreeze()


_AFTER_THE_PROGRAM = """import os, runpy, sys
sys.argv = ["ckpt", *sys.argv[1:]]
try:
    runpy.run_path({launcher!r}, run_name="__main__")
except SystemExit:
    pass
tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
sys.stderr.write(repr((os.environ.get("OPENBLAS_NUM_THREADS"), "numpy" in sys.modules, tasks)))
"""


def _after_the_program(argv: list[str], **env: str) -> tuple[str | None, bool, int]:
    """``(OPENBLAS_NUM_THREADS, whether numpy was imported, the process's threads)`` once ``ckpt ARGV`` has run as
    the program (the installed launcher, in a process of its own)."""
    import ast

    code = _AFTER_THE_PROGRAM.format(launcher=str(LAUNCHER))
    base = {k: v for k, v in child_env().items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env={**base, **env}, cwd=ROOT)
    return ast.literal_eval(done.stderr.strip().splitlines()[-1])


def test_the_program_starts_numpy_with_one_blas_thread() -> None:
    """``ckpt stats`` (numpy imported to read values) run as the program: OpenBLAS, whose threads cost half of
    ``import numpy``'s CPU and do no work for ckpt, starts none beside the main thread; a value the user set is
    kept (``ckpt_cli.boundary.one_blas_thread``)."""
    small = str(NAME_BASED / "model.ckpt-200")
    setting, imported, tasks = _after_the_program(["stats", small])
    assert (setting, imported) == ("1", True)
    if sys.platform.startswith("linux"):
        assert tasks == 1
    setting, imported, tasks = _after_the_program(["stats", small], OPENBLAS_NUM_THREADS="2")
    assert (setting, imported) == ("2", True)
    if sys.platform.startswith("linux") and (os.cpu_count() or 1) >= 2:
        assert tasks == 2  # the user's second thread: what the launcher would have started without the setting


def test_a_users_script_and_a_caller_keep_their_blas_threads(tmp_path: Path, monkeypatch) -> None:
    """``ckpt run SCRIPT`` runs the user's code (which may multiply matrices): its environment is the user's. A
    caller of the command functions (here ``fast.main`` given a command line) keeps its environment too."""
    script = tmp_path / "script.py"
    script.write_text("import os\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    base = {k: v for k, v in child_env().items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, str(LAUNCHER), "run", str(script)], capture_output=True, text=True,
                          env=base)
    assert (done.returncode, done.stdout) == (0, "None\n")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with pytest.raises(SystemExit) as ended:
        fast.main(["stats", str(NAME_BASED / "model.ckpt-200")])
    assert ended.value.code == 0 and "OPENBLAS_NUM_THREADS" not in os.environ
