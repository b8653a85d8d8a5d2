"""ckpt's own modules imported from their compiled files without importlib's general search (start-up).

Before a module's own code runs, ``import`` costs importlib about 300,000 instructions of Python code: it asks
every finder on ``sys.meta_path`` in turn, stats the package's directory and tries every file suffix, builds the
spec (computing the compiled file's name twice), stats the source, reads the ``.pyc`` and validates its header.
A command imports 70 to 140 of ckpt's modules: that search and loading alone cost about a quarter of Python's
own start-up (``python -c pass``). :class:`OwnModules`, put first on ``sys.meta_path`` by the launchers
(``scripts/ckpt``, ``python -m ckpt_cli``), finds a submodule of ``formats`` or ``ckpt_cli`` in its package's
directory with one ``stat`` and runs the code of its ``.pyc`` where the header matches the source (the magic
number, a timestamp ``.pyc`` of the source's mtime and size: what importlib checks). Anything else - no ``.pyc``
yet or a stale one, a hash-based one, ``sys.pycache_prefix`` set, a package that is not one directory - goes to
importlib's own finders and loader as before, which compile the source and write the ``.pyc``. The module is
the one importlib would make: the same spec, ``__file__``, ``__cached__`` and ``__path__``, and a
``SourceFileLoader`` (source, resources and reloading work as before).
"""
from __future__ import annotations

import marshal
import os
import sys
from _frozen_importlib import ModuleSpec  # importlib's own classes, without importing importlib
from _frozen_importlib_external import MAGIC_NUMBER, SourceFileLoader
from _imp import _fix_co_filename  # type: ignore[attr-defined]
from io import open_code

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import CodeType, ModuleType

__all__ = ["OwnModules", "install"]

PACKAGES = ("formats.", "ckpt_cli.")
"""The submodules :class:`OwnModules` finds: ckpt's two packages' (their own ``__init__`` is found as usual)."""
_CODE = type((lambda: None).__code__)  # types.CodeType, without importing types
_TIMESTAMP_PYC = b"\0\0\0\0"  # a .pyc's flags field: validated by the source's mtime and size (not a hash)


class _CompiledLoader(SourceFileLoader):
    """importlib's loader of a source file, which takes the ``.pyc`` (already found to be current) directly."""

    def __init__(self, fullname: str, path: str, cached: str, source: os.stat_result) -> None:
        super().__init__(fullname, path)
        self.cached, self.source = cached, source

    def get_code(self, fullname: str) -> CodeType | None:
        """The module's code from its ``.pyc`` when its header matches the source; else importlib's own way."""
        try:
            with open_code(self.cached) as f:
                data = f.read()
        except OSError:
            data = b""
        st = self.source
        if data[:4] == MAGIC_NUMBER and data[4:8] == _TIMESTAMP_PYC and \
                int.from_bytes(data[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF and \
                int.from_bytes(data[12:16], "little") == st.st_size & 0xFFFFFFFF:
            try:
                code = marshal.loads(memoryview(data)[16:])
            except (EOFError, ValueError, TypeError):
                code = None
            if type(code) is not _CODE:  # a damaged file: importlib says what is wrong
                return super().get_code(fullname)
            _fix_co_filename(code, self.path)  # as importlib does: the source's own path in tracebacks
            return code
        return super().get_code(fullname)


class OwnModules:
    """The finder of ckpt's own submodules (see the module's docstring); None for any other module."""

    @staticmethod
    def find_spec(fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        """The spec importlib would make for the submodule ``fullname`` of a ckpt package whose ``.py`` lies in
        the package's one directory ``path``; None (importlib's finders look) for anything else."""
        if path is None or len(path) != 1 or not fullname.startswith(PACKAGES) or sys.pycache_prefix is not None \
                or sys.flags.optimize:  # -O, -OO: importlib takes the .opt-N.pyc
            return None
        tag = sys.implementation.cache_tag
        if tag is None:
            return None
        base = f"{path[0]}{os.sep}{fullname.rpartition('.')[2]}"
        package, origin = False, f"{base}.py"  # (never both a module and a package of one name: a test checks)
        try:
            source = os.stat(origin)
        except OSError:
            package, origin = True, f"{base}{os.sep}__init__.py"
            try:
                source = os.stat(origin)
            except OSError:
                return None
        head, name = os.path.split(origin)
        cached = f"{head}{os.sep}__pycache__{os.sep}{name[:-3]}.{tag}.pyc"
        spec = ModuleSpec(fullname, _CompiledLoader(fullname, origin, cached, source), origin=origin,
                          is_package=package)
        spec.has_location = True
        spec.cached = cached
        if package:
            spec.submodule_search_locations = [base]
        return spec


def install() -> None:
    """Put :class:`OwnModules` first on ``sys.meta_path`` (once)."""
    if OwnModules not in sys.meta_path:
        sys.meta_path.insert(0, OwnModules)
