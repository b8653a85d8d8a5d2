"""The suite tests ckpt as users get it: the ``formats`` and ``ckpt_cli`` packages installed from a wheel
(``pip install .``), not the source tree beside these tests (issue 36 #1).

Imported first by ``tests/conftest.py``, before anything imports ``formats``: it takes the checkout off
``sys.path`` (pytest puts it there for the ``tests`` package) and imports both packages from the environment.
Every ``ckpt`` process a test starts gets :func:`child_env`, so it too imports the installed package, and
:data:`LAUNCHER` is the installed ``ckpt`` command.

``CKPT_TEST_SOURCE=1`` tests the source tree instead (a developer's quick loop without reinstalling); the test
``tests/test_installed.py::test_the_suite_imports_the_installed_package`` then fails, so a run in that mode is never
mistaken for the real one, and ``.ci/run`` never sets it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: the tests, their data, README.md and pyproject.toml (never the code under test)."""

SOURCE_MODE = os.environ.get("CKPT_TEST_SOURCE") == "1"
"""True when the tests import the checkout's sources (``CKPT_TEST_SOURCE=1``), not the installed package."""


def _is_checkout(entry: str) -> bool:
    try:
        return Path(entry or ".").resolve() == ROOT
    except OSError:
        return False


def import_installed() -> None:
    """Import ``formats`` and ``ckpt_cli`` from the installed distribution (or, in source mode, the checkout).

    Raises ImportError with what to run when the package is not installed."""
    if SOURCE_MODE:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
    else:
        sys.path[:] = [p for p in sys.path if not _is_checkout(p)]
        stale = [name for name in ("formats", "ckpt_cli") if name in sys.modules and
                 Path(sys.modules[name].__file__ or "").resolve().parent.parent == ROOT]
        if stale:
            raise ImportError(f"{', '.join(stale)} was imported from the checkout before the tests could take it off "
                              "sys.path")
    # children that inherit the environment unchanged (`subprocess.run([sys.executable, "-m", "ckpt_cli", ...])`)
    # import what this process imports, whatever their working directory
    os.environ.update({k: v for k, v in child_env().items() if k in ("PYTHONSAFEPATH", "PYTHONPATH")})
    if not SOURCE_MODE:
        os.environ.pop("PYTHONPATH", None)
    try:
        import ckpt_cli  # noqa: F401
        import formats  # noqa: F401
    except ImportError as e:
        raise ImportError(f"ckpt is not installed in {sys.prefix}: run `pip install '.[test]'` from {ROOT} "
                          f"(or set CKPT_TEST_SOURCE=1 to test the source tree): {e}") from None


def package_dir(name: str) -> Path:
    """Where the package ``name`` (``formats`` or ``ckpt_cli``) the tests import lives."""
    module = sys.modules.get(name) or __import__(name)
    return Path(module.__file__ or "").resolve().parent


LAUNCHER = Path(sys.executable).parent / "ckpt"
"""The ``ckpt`` command ``pip install .`` put beside this Python (``scripts/ckpt`` as installed)."""

if SOURCE_MODE or not LAUNCHER.exists():
    LAUNCHER = ROOT / "scripts" / "ckpt"


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a Python process a test starts (``python -m ckpt_cli``, ``python -c``): it imports
    the package the tests import. ``PYTHONSAFEPATH`` keeps the current directory (often the checkout) off the
    child's ``sys.path`` (Python 3.11+); ``PYTHONPATH`` is dropped, or names the checkout in source mode."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONSAFEPATH"] = "1"
    if SOURCE_MODE:
        env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def site_dirs() -> list[str]:
    """This Python's site-packages directories (where the installed package and its dependencies are), for a
    child run without ``site`` (``python -S``) that still imports what the tests import."""
    dirs = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    return [str(ROOT), *dirs] if SOURCE_MODE else dirs
