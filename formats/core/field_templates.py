"""A record's ``__init__`` for each shape of ckpt's own records that has a field made by a factory or not set by
``__init__``, compiled into this module's ``.pyc``: see :func:`formats.core.method_templates.shaped_fields`.

Written by ``tests/test_method_templates.py`` (``python -m tests.test_method_templates``; a test checks it is current).
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# the names of a record's own namespace, these functions' globals when made (defined here for linters)
_MISSING: Any = None
_set: Any = None
_d0: Any = None
_f0: Any = None
_d1: Any = None
_f1: Any = None
_d2: Any = None
_f2: Any = None
_d3: Any = None
_f3: Any = None
_d4: Any = None
_f4: Any = None
_d5: Any = None
_f5: Any = None
_d6: Any = None
_f6: Any = None
_d7: Any = None
_f7: Any = None
_d8: Any = None
_f8: Any = None
_d9: Any = None
_f9: Any = None
_d10: Any = None
_f10: Any = None
_d11: Any = None
_f11: Any = None
_d12: Any = None
_f12: Any = None
_d13: Any = None
_f13: Any = None


def _frozen_init_ppppfpffpp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _f4() if _a4 is _MISSING else _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _f6() if _a6 is _MISSING else _a6)
    _set(self, '_a7', _f7() if _a7 is _MISSING else _a7)
    _set(self, '_a8', _a8)
    _set(self, '_a9', _a9)


def _init_ff(self: Any, _a0: Any, _a1: Any) -> Any:
    self._a0 = _f0() if _a0 is _MISSING else _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1


def _init_ffff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    self._a0 = _f0() if _a0 is _MISSING else _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3


def _init_fffff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    self._a0 = _f0() if _a0 is _MISSING else _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4


def _init_fpppppfppppppp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any, _a13: Any) -> Any:
    self._a0 = _f0() if _a0 is _MISSING else _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _a7
    self._a8 = _a8
    self._a9 = _a9
    self._a10 = _a10
    self._a11 = _a11
    self._a12 = _a12
    self._a13 = _a13


def _init_pf(self: Any, _a0: Any, _a1: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1


def _init_pff(self: Any, _a0: Any, _a1: Any, _a2: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2


def _init_pfff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3


def _init_pffffff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6


def _init_pfffppp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6


def _init_pffpp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _a3
    self._a4 = _a4


def _init_pffpppp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6


def _init_pffppppppp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    self._a0 = _a0
    self._a1 = _f1() if _a1 is _MISSING else _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _a7
    self._a8 = _a8
    self._a9 = _a9


def _init_ppf(self: Any, _a0: Any, _a1: Any, _a2: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2


def _init_ppffpffffp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _f7() if _a7 is _MISSING else _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8
    self._a9 = _a9


def _init_ppfp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _a3


def _init_ppfpppf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6


def _init_ppfppppff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _f2() if _a2 is _MISSING else _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _f7() if _a7 is _MISSING else _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8


def _init_pppf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3


def _init_pppfff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5


def _init_pppffff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6


def _init_pppfffffff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _f7() if _a7 is _MISSING else _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8
    self._a9 = _f9() if _a9 is _MISSING else _a9


def _init_pppffpf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6


def _init_pppffpfpfffp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8
    self._a9 = _f9() if _a9 is _MISSING else _a9
    self._a10 = _f10() if _a10 is _MISSING else _a10
    self._a11 = _a11


def _init_pppfpx(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _f3() if _a3 is _MISSING else _a3
    self._a4 = _a4
    self._a5 = _d5


def _init_ppppf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4


def _init_ppppff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5


def _init_ppppfffpf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _f4() if _a4 is _MISSING else _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8


def _init_pppppf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5


def _init_pppppfffpfpff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _f7() if _a7 is _MISSING else _a7
    self._a8 = _a8
    self._a9 = _f9() if _a9 is _MISSING else _a9
    self._a10 = _a10
    self._a11 = _f11() if _a11 is _MISSING else _a11
    self._a12 = _f12() if _a12 is _MISSING else _a12


def _init_pppppfpppp(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _f5() if _a5 is _MISSING else _a5
    self._a6 = _a6
    self._a7 = _a7
    self._a8 = _a8
    self._a9 = _a9


def _init_ppppppfpf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _f6() if _a6 is _MISSING else _a6
    self._a7 = _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8


def _init_pppppppff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _f7() if _a7 is _MISSING else _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8


def _init_pppppppffppf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _f7() if _a7 is _MISSING else _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8
    self._a9 = _a9
    self._a10 = _a10
    self._a11 = _f11() if _a11 is _MISSING else _a11


def _init_ppppppppf(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _a7
    self._a8 = _f8() if _a8 is _MISSING else _a8


def _init_pppppppppppff(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _a7
    self._a8 = _a8
    self._a9 = _a9
    self._a10 = _a10
    self._a11 = _f11() if _a11 is _MISSING else _a11
    self._a12 = _f12() if _a12 is _MISSING else _a12


FIELDS: dict[str, Callable[..., Any]] = {
    "frozen_init_ppppfpffpp": _frozen_init_ppppfpffpp,
    "init_ff": _init_ff,
    "init_ffff": _init_ffff,
    "init_fffff": _init_fffff,
    "init_fpppppfppppppp": _init_fpppppfppppppp,
    "init_pf": _init_pf,
    "init_pff": _init_pff,
    "init_pfff": _init_pfff,
    "init_pffffff": _init_pffffff,
    "init_pfffppp": _init_pfffppp,
    "init_pffpp": _init_pffpp,
    "init_pffpppp": _init_pffpppp,
    "init_pffppppppp": _init_pffppppppp,
    "init_ppf": _init_ppf,
    "init_ppffpffffp": _init_ppffpffffp,
    "init_ppfp": _init_ppfp,
    "init_ppfpppf": _init_ppfpppf,
    "init_ppfppppff": _init_ppfppppff,
    "init_pppf": _init_pppf,
    "init_pppfff": _init_pppfff,
    "init_pppffff": _init_pppffff,
    "init_pppfffffff": _init_pppfffffff,
    "init_pppffpf": _init_pppffpf,
    "init_pppffpfpfffp": _init_pppffpfpfffp,
    "init_pppfpx": _init_pppfpx,
    "init_ppppf": _init_ppppf,
    "init_ppppff": _init_ppppff,
    "init_ppppfffpf": _init_ppppfffpf,
    "init_pppppf": _init_pppppf,
    "init_pppppfffpfpff": _init_pppppfffpfpff,
    "init_pppppfpppp": _init_pppppfpppp,
    "init_ppppppfpf": _init_ppppppfpf,
    "init_pppppppff": _init_pppppppff,
    "init_pppppppffppf": _init_pppppppffppf,
    "init_ppppppppf": _init_ppppppppf,
    "init_pppppppppppff": _init_pppppppppppff,
}
"""Each template by its kind and shape: ``init_ppf``, ``frozen_init_pfx``."""
