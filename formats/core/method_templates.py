"""Generated methods already compiled: a value tuple's ``__new__`` and a record's ``__init__``, by number of fields.

:class:`~formats.core.value_tuples.ValueTuple` and :func:`~formats.core.records.record` give each class a
generated method, as namedtuple and dataclasses do; compiling its source at import costs about 0.1 ms a class
(400,000 instructions, a hundredth of Python's start-up), 1 to 4 ms of a command importing 10 to 40 of them.
The common shapes are written out here instead, compiled into this module's ``.pyc`` when ckpt is installed:
:func:`shaped` takes the one for a number of fields and renames its placeholder fields ``_a0``, ``_a1``, ...
to the class's (``code.replace``: no compiling); defaults become the function's ``__defaults__``. What runs is
what compiling the class's own source gives. Other shapes (factories, ``init=False`` fields, more than
:data:`MOST` fields, names the templates use) are compiled from source as before. This module is written by
``tests/test_method_templates.py`` (``python -m tests.test_method_templates``; a test checks it is current).
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["MOST", "shaped", "shaped_fields", "renamable"]

MOST = 14
"""The most fields a written-out method has."""
_FUNCTION: Any = type(lambda: None)
_tuple_new = tuple.__new__
_set = object.__setattr__


def renamable(names: Sequence[str]) -> bool:
    """Whether the placeholders can be renamed to ``names``: at most :data:`MOST` identifiers, none starting with
    an underscore (the templates' own names do) or ``self``, none repeated."""
    return len(names) <= MOST and len(set(names)) == len(names) and \
        all(n.isidentifier() and n[:1] != "_" and n != "self" for n in names)


def shaped(kind: str, names: Sequence[str], defaults: tuple[Any, ...], qualname: str) -> Any:
    """The ``kind`` method (``new``: a value tuple's ``__new__``; ``init``, ``frozen_init``: a record's
    ``__init__`` setting its fields as attributes, or through ``object.__setattr__``) for fields ``names``
    (:func:`renamable`), with ``defaults`` for the last of them."""
    return _renamed(_TEMPLATES[kind][len(names)], names, defaults, qualname, None)


def shaped_fields(kind: str, shape: str, names: Sequence[str], defaults: tuple[Any, ...], qualname: str,
                  namespace: dict[str, Any]) -> Any:
    """A record's ``__init__`` (``kind``: ``init`` or ``frozen_init``) whose fields ``names`` (:func:`renamable`) are,
    letter by letter of ``shape``: ``p`` a parameter, ``f`` a parameter made by a factory when not given, ``x`` not a
    parameter (its default), ``y`` not a parameter (made by a factory); ``defaults`` those of the last parameters (a
    factory's: ``namespace["_MISSING"]``). The template's names ``_MISSING``, ``_d<i>``, ``_f<i>`` (field ``i``'s
    default and factory) and ``_set`` are looked up in ``namespace``, as in the source :mod:`formats.core.records`
    compiles. The templates are those of the shapes ckpt's own records have, in
    :mod:`formats.core.field_templates` (imported here: a command that makes no such record does not load them);
    None for another shape (the caller compiles)."""
    from formats.core.field_templates import FIELDS

    template = FIELDS.get(f"{kind}_{shape}")
    return None if template is None else _renamed(template, names, defaults, qualname, namespace)


def _renamed(template: Any, names: Sequence[str], defaults: tuple[Any, ...], qualname: str,
             namespace: dict[str, Any] | None) -> Any:
    """``template`` with its placeholder fields ``_a0``, ``_a1``... renamed to ``names``, ``defaults`` for its last
    parameters, its globals ``namespace`` (None: its own module's)."""
    code = template.__code__
    rename = {f"_a{i}": name for i, name in enumerate(names)}.get
    named: dict[str, Any] = {"co_qualname": qualname} if hasattr(code, "co_qualname") else {}  # Python 3.11 on
    code = code.replace(co_varnames=tuple(rename(n, n) for n in code.co_varnames),
                        co_names=tuple(rename(n, n) for n in code.co_names),
                        co_consts=tuple(rename(c, c) if type(c) is str else c for c in code.co_consts),
                        co_name=qualname.rpartition(".")[2], **named)
    function = _FUNCTION(code, template.__globals__ if namespace is None else namespace, code.co_name,
                         defaults or None)
    function.__qualname__ = qualname
    return function


# -- below: written by tests/test_method_templates.py (python -m tests.test_method_templates) --


def _new0(_cls: Any) -> Any:
    return _tuple_new(_cls, ())


def _new1(_cls: Any, _a0: Any) -> Any:
    return _tuple_new(_cls, (_a0, ))


def _new2(_cls: Any, _a0: Any, _a1: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, ))


def _new3(_cls: Any, _a0: Any, _a1: Any, _a2: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, ))


def _new4(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, ))


def _new5(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, ))


def _new6(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, ))


def _new7(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, ))


def _new8(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, ))


def _new9(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, ))


def _new10(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, _a9, ))


def _new11(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, _a9, _a10, ))


def _new12(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, _a9, _a10, _a11, ))


def _new13(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, _a9, _a10, _a11, _a12, ))


def _new14(_cls: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any, _a13: Any) -> Any:
    return _tuple_new(_cls, (_a0, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, _a9, _a10, _a11, _a12, _a13, ))


def _init0(self: Any) -> Any:
    pass


def _init1(self: Any, _a0: Any) -> Any:
    self._a0 = _a0


def _init2(self: Any, _a0: Any, _a1: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1


def _init3(self: Any, _a0: Any, _a1: Any, _a2: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2


def _init4(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3


def _init5(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4


def _init6(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5


def _init7(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6


def _init8(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _a7


def _init9(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    self._a0 = _a0
    self._a1 = _a1
    self._a2 = _a2
    self._a3 = _a3
    self._a4 = _a4
    self._a5 = _a5
    self._a6 = _a6
    self._a7 = _a7
    self._a8 = _a8


def _init10(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
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


def _init11(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any) -> Any:
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


def _init12(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any) -> Any:
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
    self._a11 = _a11


def _init13(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any) -> Any:
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
    self._a11 = _a11
    self._a12 = _a12


def _init14(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any, _a13: Any) -> Any:
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
    self._a11 = _a11
    self._a12 = _a12
    self._a13 = _a13


def _frozen_init0(self: Any) -> Any:
    pass


def _frozen_init1(self: Any, _a0: Any) -> Any:
    _set(self, '_a0', _a0)


def _frozen_init2(self: Any, _a0: Any, _a1: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)


def _frozen_init3(self: Any, _a0: Any, _a1: Any, _a2: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)


def _frozen_init4(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)


def _frozen_init5(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)


def _frozen_init6(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)


def _frozen_init7(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)


def _frozen_init8(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)


def _frozen_init9(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)
    _set(self, '_a8', _a8)


def _frozen_init10(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)
    _set(self, '_a8', _a8)
    _set(self, '_a9', _a9)


def _frozen_init11(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)
    _set(self, '_a8', _a8)
    _set(self, '_a9', _a9)
    _set(self, '_a10', _a10)


def _frozen_init12(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)
    _set(self, '_a8', _a8)
    _set(self, '_a9', _a9)
    _set(self, '_a10', _a10)
    _set(self, '_a11', _a11)


def _frozen_init13(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)
    _set(self, '_a8', _a8)
    _set(self, '_a9', _a9)
    _set(self, '_a10', _a10)
    _set(self, '_a11', _a11)
    _set(self, '_a12', _a12)


def _frozen_init14(self: Any, _a0: Any, _a1: Any, _a2: Any, _a3: Any, _a4: Any, _a5: Any, _a6: Any, _a7: Any, _a8: Any, _a9: Any, _a10: Any, _a11: Any, _a12: Any, _a13: Any) -> Any:
    _set(self, '_a0', _a0)
    _set(self, '_a1', _a1)
    _set(self, '_a2', _a2)
    _set(self, '_a3', _a3)
    _set(self, '_a4', _a4)
    _set(self, '_a5', _a5)
    _set(self, '_a6', _a6)
    _set(self, '_a7', _a7)
    _set(self, '_a8', _a8)
    _set(self, '_a9', _a9)
    _set(self, '_a10', _a10)
    _set(self, '_a11', _a11)
    _set(self, '_a12', _a12)
    _set(self, '_a13', _a13)


_TEMPLATES: dict[str, list[Callable[..., Any]]] = {
    "new": [_new0, _new1, _new2, _new3, _new4, _new5, _new6, _new7, _new8, _new9, _new10, _new11, _new12, _new13, _new14],
    "init": [_init0, _init1, _init2, _init3, _init4, _init5, _init6, _init7, _init8, _init9, _init10, _init11, _init12, _init13, _init14],
    "frozen_init": [_frozen_init0, _frozen_init1, _frozen_init2, _frozen_init3, _frozen_init4, _frozen_init5, _frozen_init6, _frozen_init7, _frozen_init8, _frozen_init9, _frozen_init10, _frozen_init11, _frozen_init12, _frozen_init13, _frozen_init14],
}
"""Each kind's method, by number of fields."""
