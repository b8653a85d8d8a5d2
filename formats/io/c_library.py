"""A function of the C library, called without the :mod:`ctypes` package (start-up).

``import ctypes`` defines some forty classes and imports :mod:`types` and :mod:`struct`: about 7.5 million
instructions, a fifth of Python's own start-up, spent by every write that publishes its output exclusively
(``renameat2``, :mod:`formats.io.atomic`). Its C half, ``_ctypes``, does the call itself: :func:`c_function`
declares the few argument types such a call takes, as ``ctypes`` declares ``c_int``, ``c_uint`` and
``c_char_p``, and looks the function up in the running process as ``ctypes.CDLL(None, use_errno=True)`` does.
:func:`release_freed_memory` calls glibc's ``malloc_trim`` so.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["c_function", "release_freed_memory"]

_TYPES: dict[str, Any] = {}
"""ctypes' type code (``i`` int, ``I`` unsigned int, ``L`` unsigned long - a ``size_t`` -, ``z`` a ``char *`` given as
bytes) -> its argument class."""


def c_function(name: str, arguments: str) -> tuple[Callable[..., int], Callable[[], int]] | None:
    """The C library's function ``name`` taking ``arguments`` (one of ctypes' type codes each: ``i`` an int,
    ``I`` an unsigned int, ``L`` an unsigned long, ``z`` bytes for a ``char *``) and returning an int, with the
    getter of the ``errno`` it left; None where the process has no such function or cannot call one."""
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

        for code in "iILz":
            _TYPES[code] = type(f"_c_{code}", (_ctypes._SimpleCData,), {"_type_": code})
        _TYPES["function"] = type("_CFunction", (_ctypes.CFuncPtr,), {
            "_flags_": _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO, "_restype_": _TYPES["i"]})
    return _TYPES["function"]


def release_freed_memory() -> bool:
    """Give the memory the process has freed back to the system, where the C library can (glibc's
    ``malloc_trim(0)``); True if it gave some back, False where it gave none or has no such function.

    For a caller that has just let go of a large structure and goes on to hold another: memory freed in the C
    library's heap stays resident until reused, and Python's own allocator takes its small objects from separate
    maps, never from that heap. At 10^5 tensors an object-based bundle's decoded graph, let go before a row is
    made per key, stayed resident through the write (``convert --to tf-name``: 13 MiB of a 105 MiB peak). It
    changes no setting of the allocator (what is freed later is kept or returned as before)."""
    if "malloc_trim" not in _TYPES:
        _TYPES["malloc_trim"] = c_function("malloc_trim", "L")  # (None where there is none: looked up once)
    found: tuple[Callable[..., int], Callable[[], int]] | None = _TYPES["malloc_trim"]
    return found is not None and found[0](0) != 0
