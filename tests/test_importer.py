"""ckpt_cli/importer.py (issue 38, start-up): the launchers' finder of ckpt's own modules makes each module as
importlib's own machinery makes it, runs the code of a current ``.pyc`` and hands everything else to importlib.
The oracle is importlib itself: the same imports in a process without the finder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed import LAUNCHER, child_env, package_dir

ATTRIBUTES = """
def attributes(name):
    import importlib
    module = importlib.import_module(name)
    spec = module.__spec__
    return {"file": module.__file__, "cached": module.__cached__, "package": module.__package__,
            "path": getattr(module, "__path__", None), "origin": spec.origin, "spec_cached": spec.cached,
            "parent": spec.parent, "locations": spec.submodule_search_locations, "has_location": spec.has_location,
            "loader": type(module.__loader__).__mro__[-3].__name__, "loader_path": module.__loader__.path,
            "source_lines": len(module.__loader__.get_source(name).splitlines()),
            "value": getattr(module, "VALUE", None), "ours": type(module.__loader__).__name__ == "_CompiledLoader"}
"""


def _import(names: list[str], finder: bool, root: Path | None = None) -> dict[str, dict[str, object]]:
    """Each module's attributes, imported in a fresh process with or without the finder (``root`` first on the
    path: a package named ``formats`` of the test's own)."""
    path = f"sys.path.insert(0, {str(root)!r})" if root else ""
    code = (f"import json, sys\n{path}\n"
            f"from ckpt_cli.importer import install\n{'install()' if finder else ''}\n{ATTRIBUTES}\n"
            f"print(json.dumps({{n: attributes(n) for n in {names!r}}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), cwd=root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


REAL = ["formats.core.errors", "formats.tf_bundle", "formats.tf_bundle.checkpoint", "formats.io.sstable",
        "formats.io.sstable.table", "ckpt_cli.fast", "ckpt_cli.commands.ls", "ckpt_cli.render"]


def test_ckpts_modules_are_made_as_importlib_makes_them() -> None:
    """Modules and packages of both of ckpt's packages: the same file, compiled file, package, path, spec and
    source as importlib gives them, loaded by the finder's loader (a ``SourceFileLoader``)."""
    ours, theirs = _import(REAL, finder=True), _import(REAL, finder=False)
    assert all(m["ours"] for m in ours.values()) and not any(m["ours"] for m in theirs.values())
    for m in (*ours.values(), *theirs.values()):
        m.pop("ours")
    assert ours == theirs
    assert theirs["formats.tf_bundle"]["path"] == [str(package_dir("formats") / "tf_bundle")]


def test_the_launcher_imports_ckpts_modules_with_the_finder(tmp_path) -> None:
    """``ckpt ls`` (the installed launcher): every submodule of ckpt's packages but the finder itself is loaded by
    the finder's loader, and its output is the same as with importlib alone (``python -m ckpt_cli`` below)."""
    from tests.test_start_up_imports import NAME_BASED

    probe = tmp_path / "probe.py"
    probe.write_text("import atexit, runpy, sys\nsys.argv = ['ckpt', 'ls', sys.argv[1]]\n"
                     "def show():\n    sys.stderr.write(repr(sorted(n for n, m in sys.modules.items() if "
                     "n.startswith(('formats.', 'ckpt_cli.')) and type(m.__loader__).__name__ != '_CompiledLoader')))\n"
                     "atexit.register(show)  # (the process then ends as Python ends, running it)\n"
                     f"runpy.run_path({str(LAUNCHER)!r}, run_name='__main__')\n")
    done = subprocess.run([sys.executable, str(probe), str(NAME_BASED)], capture_output=True, text=True,
                          env=child_env())
    plain = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'ckpt'; from ckpt_cli.fast import main; "
                            "main()", "ls", str(NAME_BASED)], capture_output=True, text=True, env=child_env())
    assert done.returncode == plain.returncode == 0, done.stderr + plain.stderr
    assert done.stdout == plain.stdout and "global_step" in done.stdout
    assert done.stderr == repr(["ckpt_cli.importer", "ckpt_cli.interrupt"])  # (imported before the finder is)


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _compile(root: Path) -> None:
    """Every source's ``.pyc``, validated by timestamp, as ``pip install`` writes them."""
    import py_compile

    for source in root.rglob("*.py"):
        py_compile.compile(str(source), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)


def _pyc(root: Path, module: str) -> Path:
    return root / "formats" / "__pycache__" / f"{module}.{sys.implementation.cache_tag}.pyc"


def test_a_current_pyc_is_run_a_stale_or_missing_one_goes_to_importlib(tmp_path) -> None:
    """A package named ``formats`` of the test's own: without a ``.pyc`` importlib's loader compiles the source; with
    a current one the finder's loader runs it; after the source changes (its size, or only its mtime)
    the source's new value, as importlib gives it, and a package's ``__path__`` as importlib's."""
    _package(tmp_path, {"formats/__init__.py": "", "formats/m.py": "VALUE = 1\n", "formats/p/__init__.py": "VALUE = 'p'\n",
                        "formats/p/q.py": "VALUE = 'q'\n"})
    names = ["formats.m", "formats.p", "formats.p.q"]
    first = _import(names, finder=True, root=tmp_path)
    assert [first[n]["value"] for n in names] == [1, "p", "q"]  # (PYTHONDONTWRITEBYTECODE: no .pyc written)
    _compile(tmp_path)
    again, plain = _import(names, finder=True, root=tmp_path), _import(names, finder=False, root=tmp_path)
    assert all(again[n]["ours"] for n in names)
    for m in (*again.values(), *plain.values()):
        m.pop("ours")
    assert again == plain and again["formats.p"]["path"] == [str(tmp_path / "formats" / "p")]
    (tmp_path / "formats" / "m.py").write_text("VALUE = 22\n")  # another size
    assert _import(["formats.m"], finder=True, root=tmp_path)["formats.m"]["value"] == 22
    _compile(tmp_path)
    assert _import(["formats.m"], finder=True, root=tmp_path)["formats.m"]["value"] == 22
    source = tmp_path / "formats" / "m.py"
    source.write_text("VALUE = 33\n")  # the size of the .pyc's source: only the mtime says it changed
    stat = source.stat()
    os.utime(source, (stat.st_atime, stat.st_mtime + 10))
    assert _import(["formats.m"], finder=True, root=tmp_path)["formats.m"]["value"] == 33


@pytest.mark.parametrize("damage", [b"", b"\x00" * 3, b"not marshal data", None], ids=["empty", "short", "garbage",
                                                                                          "not code"])
def test_a_damaged_pyc_with_a_current_header_fails_as_under_importlib(tmp_path, damage) -> None:
    """A ``.pyc`` whose header matches the source but whose body is damaged (or holds no code object): the same
    exception type as importlib raises for it."""
    import marshal

    _package(tmp_path, {"formats/__init__.py": "", "formats/m.py": "VALUE = 1\n"})
    _compile(tmp_path)
    pyc = _pyc(tmp_path, "m")
    header = pyc.read_bytes()[:16]
    pyc.write_bytes(header + (marshal.dumps(7) if damage is None else damage))
    outcomes = []
    for finder in (True, False):
        code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r})\nfrom ckpt_cli.importer import install\n"
                f"{'install()' if finder else ''}\ntry:\n    import formats.m\nexcept Exception as exc:\n"
                f"    print(type(exc).__name__)\nelse:\n    print('imported', formats.m.VALUE)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env())
        outcomes.append(done.stdout)
    assert outcomes[0] == outcomes[1] and outcomes[0] != ""


def test_no_module_and_package_share_a_name() -> None:
    """The finder looks for ``name.py`` before ``name/__init__.py`` (importlib the other way round): no directory of
    ckpt's packages holds both."""
    for top in ("formats", "ckpt_cli"):
        for directory, dirs, files in os.walk(package_dir(top)):
            both = {d for d in dirs if (Path(directory) / d / "__init__.py").exists()} & {f[:-3] for f in files
                                                                                           if f.endswith(".py")}
            assert not both, directory


def test_an_optimizing_python_goes_to_importlib() -> None:
    """Under ``python -O`` importlib runs the ``.opt-1.pyc`` (asserts stripped): the finder leaves every module to
    it, so no module of ckpt's is run from the unoptimized ``.pyc``."""
    code = ("import importlib, sys\nfrom ckpt_cli.importer import install\ninstall()\n"
            "m = importlib.import_module('formats.core.errors')\n"
            "print(type(m.__loader__).__name__, m.__cached__.endswith('.opt-1.pyc'))")
    done = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, env=child_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SourceFileLoader", "True"]
