"""What ships is what is tested (issue 36 #1): the suite imports ckpt from the installed package, that package is
this checkout's code, and the wheel ``pip install .`` builds holds every file the code opens.

``pip install .`` once left out the ``--to hf`` family maps (``formats/ops/convert/hf/families/*.toml``): every
``ckpt convert --to hf`` of an installed ckpt failed while the suite, importing the source tree, passed.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from .installed import LAUNCHER, ROOT, SOURCE_MODE, child_env, package_dir

PACKAGES = ("formats", "ckpt_cli")
HF_BERT = ROOT / "tests" / "data" / "hf" / "bert" / "bert_model.ckpt"
CORPUS = ROOT / "tests" / "data" / "corpus"


def _source_files() -> dict[str, Path]:
    """Every file of the two packages in the checkout, by its path in a wheel (``formats/py.typed``); tracked by
    git where the checkout is a git work tree, else every file but caches."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", *PACKAGES], cwd=ROOT, capture_output=True, check=True)
        names = [n for n in listed.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*") if p.is_file()]
    return {n: ROOT / n for n in names if "__pycache__" not in n and (ROOT / n).is_file()}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_suite_imports_the_installed_package() -> None:
    """``formats`` and ``ckpt_cli`` come from the installed distribution ``tfckpt``, not from the checkout (an
    editable install, or the source tree on ``sys.path``, fails here)."""
    assert not SOURCE_MODE, "CKPT_TEST_SOURCE=1: the source tree was tested, not the installed package"
    for name in PACKAGES:
        where = package_dir(name)
        assert where != ROOT / name, f"{name} imported from the checkout ({where}): pip install . (not -e)"
        # the distribution installed beside it (not the egg-info a build leaves in the checkout) lists its files
        (dist,) = [d for d in metadata.distributions(path=[str(where.parent)]) if d.metadata["Name"] == "tfckpt"]
        assert f"{name}/__init__.py" in {str(f) for f in dist.files or ()}, (name, where)


def test_children_import_the_installed_package() -> None:
    """A ``python -m ckpt_cli`` a test starts from the checkout (its working directory) and the ``ckpt`` command
    the tests run import the same installed package as the tests."""
    code = "import formats, ckpt_cli; print(formats.__file__); print(ckpt_cli.__file__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert [Path(line).parent for line in done.stdout.split()] == [package_dir(n) for n in PACKAGES]
    assert LAUNCHER.parent == Path(sys.executable).parent, LAUNCHER
    shown = subprocess.run([str(LAUNCHER), "--version"], cwd=ROOT, capture_output=True, text=True, check=True)
    (dist,) = [d for d in metadata.distributions(path=[str(package_dir("formats").parent)])
               if d.metadata["Name"] == "tfckpt"]
    assert shown.stdout.split()[-1] == dist.version


def test_the_installed_package_is_this_checkout() -> None:
    """Every file of the installed package is the checkout's, byte for byte, and the installed package has no
    module the checkout lacks: a stale install (changed sources, no ``pip install .`` since) fails here."""
    sources = _source_files()
    installed = {n: package_dir(n.split("/", 1)[0]).parent / n for n in sources}
    stale = sorted(n for n, p in installed.items() if not p.is_file() or _sha256(p) != _sha256(sources[n]))
    assert stale == [], f"the installed package differs from the checkout in {stale[:10]}: run pip install ."
    extra = sorted(str(p.relative_to(package_dir(pkg).parent)) for pkg in PACKAGES
                   for p in package_dir(pkg).rglob("*.py") if str(p.relative_to(package_dir(pkg).parent)) not in sources)
    assert extra == [], f"the installed package has modules the checkout lacks: {extra[:10]}"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The files of the wheel ``pip wheel .`` builds from this checkout (what ``pip install .`` installs)."""
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy of what the build reads: an in-tree build writes build/ in the checkout, which another
    # build at the same time (.ci/run's other tier) would share
    src = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("scripts", *PACKAGES):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
                          capture_output=True, text=True, env=child_env(PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = out.glob("tfckpt-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_the_wheel_holds_every_file_of_the_packages(wheel_names: set[str]) -> None:
    """Every file under formats/ and ckpt_cli/ in the checkout (modules, family maps, protos, py.typed) is in the
    wheel, and the ``ckpt`` launcher with it."""
    missing = sorted(set(_source_files()) - wheel_names)
    assert missing == [], f"pip install . leaves out {missing}: add them to [tool.setuptools.package-data]"
    assert any(n.endswith(".data/scripts/ckpt") for n in wheel_names)


AUDIT = r"""
import json, os, sys
roots = tuple(os.path.dirname(__import__(n).__file__) + os.sep for n in ("formats", "ckpt_cli"))
opened = set()
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if path.startswith(roots) and not path.endswith((".py", ".pyc")) and "__pycache__" not in path:
            opened.add(path)
sys.addaudithook(hook)
import atexit
atexit.register(lambda: sys.stderr.write("\nOPENED " + json.dumps(sorted(opened)) + "\n"))
from ckpt_cli.fast import main
main(sys.argv[1:])
"""


def _opened_by(argv: list[str], cwd: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", AUDIT, *argv], cwd=cwd, capture_output=True, text=True,
                          env=child_env(NO_COLOR="1"))
    assert done.returncode == 0, (argv, done.stderr[-2000:])
    line = next(x for x in done.stderr.splitlines() if x.startswith("OPENED "))
    return set(json.loads(line[len("OPENED "):]))


def test_every_file_the_code_opens_is_in_the_wheel(wheel_names: set[str], tmp_path: Path) -> None:
    """The non-Python files the installed package opens while running the commands that read data files of their
    own (``convert --to hf``'s family maps, ``report``'s page, completion scripts, ``ls``, ``verify``), watched with
    an audit hook, are each in the wheel."""
    bundle = CORPUS / "seed_slots" / "tf_ckpts" / "ckpt-5"
    runs = [["convert", str(HF_BERT), "-o", str(tmp_path / "hf"), "--to", "hf"],
            ["report", str(bundle), "-o", str(tmp_path / "r.html")],
            ["completion", "bash"], ["completion", "zsh"], ["completion", "fish"],
            ["ls", str(bundle)], ["verify", str(bundle)], ["stats", str(bundle)],
            ["convert", str(ROOT / "tests" / "data" / "hf_h5" / "bert"), "-o", str(tmp_path / "h5"), "--to", "hf"]]
    opened: set[str] = set()
    for argv in runs:
        opened |= _opened_by(argv, tmp_path)
    site = package_dir("formats").parent  # both packages are installed side by side
    names = {str(Path(p).relative_to(site)) for p in opened}
    assert "formats/ops/convert/hf/families/bert.toml" in names  # the hook sees what it should
    assert "formats/ops/convert/hf/tf_h5.toml" in names
    assert sorted(names - wheel_names) == []
    assert os.path.getsize(tmp_path / "hf" / "model.safetensors") > 0
