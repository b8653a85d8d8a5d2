"""Run a script with :mod:`formats.tf` installed as ``tensorflow``: ``ckpt run`` and ``python -m formats.tf``.

:func:`install` puts the stand-in into ``sys.modules`` under TensorFlow's module names
(``tensorflow``, ``tensorflow.compat.v1``, ``tensorflow.train``, ``tensorflow.io.gfile``,
``tensorflow.python.pywrap_tensorflow``, ...) and a finder that answers any other
``tensorflow.*`` import with :class:`~formats.tf._missing.NeedsTensorFlowImportError`. The
distribution metadata is left alone, so libraries that check for TensorFlow by its installed
version (transformers, keras) still see that it is absent. :func:`run_script` runs a file as
``__main__`` the way ``python script.py`` does.
"""
from __future__ import annotations

import importlib
import importlib.abc
import os
import runpy
import sys
import traceback
from collections.abc import Sequence

from formats.tf._missing import NeedsTensorFlowError, NeedsTensorFlowImportError, needs_tensorflow

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MODULES", "install", "uninstall", "run_script"]

MODULES = {
    "tensorflow": "formats.tf",
    "tensorflow.compat": "formats.tf.compat",
    "tensorflow.compat.v1": "formats.tf.compat.v1",
    "tensorflow.compat.v2": "formats.tf",
    "tensorflow.train": "formats.tf.train",
    "tensorflow.errors": "formats.tf.errors",
    "tensorflow.io": "formats.tf.io",
    "tensorflow.io.gfile": "formats.tf.io.gfile",
    "tensorflow.dtypes": "formats.tf.dtypes",
    "tensorflow.python": "formats.tf.python",
    "tensorflow.python.pywrap_tensorflow": "formats.tf.python.pywrap_tensorflow",
}
"""TensorFlow module name -> the stand-in module installed under it."""


class _MissingTensorFlowModules(importlib.abc.MetaPathFinder):
    """Answers ``import tensorflow.<anything the stand-in lacks>`` with one clear error."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        """Raise for ``tensorflow.<missing>``; None (not mine) for every other module."""
        if fullname.startswith("tensorflow.") and fullname not in MODULES:
            raise NeedsTensorFlowImportError(needs_tensorflow(f"module {fullname}"), name=fullname)


_FINDER = _MissingTensorFlowModules()


def install() -> None:
    """Make ``import tensorflow`` (and its submodules above) give the stand-in."""
    for name, module in MODULES.items():
        sys.modules[name] = importlib.import_module(module)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo :func:`install` (for tests)."""
    for name, module in MODULES.items():
        if getattr(sys.modules.get(name), "__name__", None) == module:
            del sys.modules[name]
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def run_script(argv: Sequence[str]) -> int:
    """Run ``argv[0]`` as ``__main__`` with ``sys.argv = argv`` and the stand-in installed.

    Returns the exit status: the script's ``SystemExit`` code, 0 when it ends normally, 1 after
    an uncaught exception (its traceback printed as Python prints it, plus one line when Python's
    message does not say that the script reached for a part of TensorFlow the stand-in lacks).
    """
    script = argv[0]
    if not os.path.isfile(script):
        sys.stderr.write(f"can't open file {script!r}: no such file\n")
        return 2
    install()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException as exc:  # noqa: BLE001 - reported like Python reports it
        _report(exc)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _report(exc: BaseException) -> None:
    """The traceback without the runner's own frames, then what TensorFlow was needed for."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__, "<frozen runpy>"):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)
    hint = _hint(exc)
    if hint:
        sys.stderr.write(f"ckpt run: {hint}\n")


def _hint(exc: BaseException) -> str | None:
    """For ``from tensorflow import keras``: Python's own message does not say why."""
    if isinstance(exc, (NeedsTensorFlowError, NeedsTensorFlowImportError)):
        return None  # the message says it already
    module = _TF_NAMES.get(getattr(exc, "name", None) or "")
    if isinstance(exc, ImportError) and module is not None and str(exc).count("'") >= 2:
        return needs_tensorflow(f"{module}.{str(exc).split(chr(39))[1]}")
    return None


_TF_NAMES = {module: name for name, module in reversed(MODULES.items())}
"""Stand-in module name -> the TensorFlow name it is installed under (the first, for formats.tf)."""
