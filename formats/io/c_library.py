"""A function of the C library, called without the :mod:`ctypes` package (start-up).

``import ctypes`` defines some forty classes and imports :mod:`types` and :mod:`struct`: about 7.5 million
instructions, a fifth of Python's own start-up, spent by every write that publishes its output exclusively
(``renameat2``, :mod:`formats.io.atomic`). Its C half, ``_ctypes``, does the call itself: :func:`c_function`
declares the few argument types such a call takes, as ``ctypes`` declares ``c_int``, ``c_uint`` and
``c_char_p``, and looks the function up in the running process as ``ctypes.CDLL(None, use_errno=True)`` does.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["c_function"]

_TYPES: dict[str, Any] = {}
"""ctypes' type code (``i`` int, ``I`` unsigned int, ``z`` a ``char *`` given as bytes) -> its argument class."""


def c_function(name: str, arguments: str) -> tuple[Callable[..., int], Callable[[], int]] | None:
    """The C library's function ``name`` taking ``arguments`` (one of ctypes' type codes each: ``i`` an int,
    ``I`` an unsigned int, ``z`` bytes for a ``char *``) and returning an int, with the getter of the ``errno`` it
    left; None where the process has no such function or cannot call one."""
    try:
        import _ctypes

        function_type = _types()
        address = _ctypes.dlsym(_library(), name)
    except (ImportError, AttributeError, OSError):  # no C library to load (Windows: no dlopen), or no `name`
        return None
    function = function_type(address)
    function.argtypes = tuple(_TYPES[code] for code in arguments)
    return function, _ctypes.get_errno


def _library() -> int:
    """The handle of the process's own symbols (``dlopen(NULL)``), as ``ctypes.CDLL(None)`` opens them."""
    import _ctypes

    if "handle" not in _TYPES:
        _TYPES["handle"] = _ctypes.dlopen(None, os.RTLD_NOW | os.RTLD_LOCAL)  # type: ignore[arg-type]  # NULL: the process
    handle: int = _TYPES["handle"]
    return handle


def _types() -> Any:
    """The function class (C calling convention, ``errno`` kept, returning an int), its argument classes made
    once (in :data:`_TYPES`)."""
    if "function" not in _TYPES:
        import _ctypes

        for code in "iIz":
            _TYPES[code] = type(f"_c_{code}", (_ctypes._SimpleCData,), {"_type_": code})
        _TYPES["function"] = type("_CFunction", (_ctypes.CFuncPtr,), {
            "_flags_": _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO, "_restype_": _TYPES["i"]})
    return _TYPES["function"]
