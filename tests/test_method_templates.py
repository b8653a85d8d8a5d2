"""formats/core/method_templates.py is what this module's generator writes (run ``python -m tests.test_method_templates``
to write it again), and the methods made from it behave as the ones compiled from each class's own source."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from formats.core import method_templates
from formats.core.records import record
from formats.core.value_tuples import ValueTuple

TEMPLATES = Path(method_templates.__file__)

N = 13
head = '''"""Generated methods already compiled: a value tuple's ``__new__`` and a record's ``__init__``, by number of fields.

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

__all__ = ["MOST", "shaped", "renamable"]

MOST = @N@
"""The most fields a written-out method has."""
_FUNCTION: Any = type(lambda: None)
_tuple_new = tuple.__new__
_set = object.__setattr__


def renamable(names: Sequence[str]) -> bool:
    """Whether the placeholders can be renamed to ``names``: at most :data:`MOST` identifiers, none starting with
    an underscore (the templates' own names do) or ``self``, none repeated."""
    return len(names) <= MOST and len(set(names)) == len(names) and \\
        all(n.isidentifier() and n[:1] != "_" and n != "self" for n in names)


def shaped(kind: str, names: Sequence[str], defaults: tuple[Any, ...], qualname: str) -> Any:
    """The ``kind`` method (``new``: a value tuple's ``__new__``; ``init``, ``frozen_init``: a record's
    ``__init__`` setting its fields as attributes, or through ``object.__setattr__``) for fields ``names``
    (:func:`renamable`), with ``defaults`` for the last of them."""
    template = _TEMPLATES[kind][len(names)]
    code = template.__code__
    rename = {f"_a{i}": name for i, name in enumerate(names)}.get
    named: dict[str, Any] = {"co_qualname": qualname} if hasattr(code, "co_qualname") else {}  # Python 3.11 on
    code = code.replace(co_varnames=tuple(rename(n, n) for n in code.co_varnames),
                        co_names=tuple(rename(n, n) for n in code.co_names),
                        co_consts=tuple(rename(c, c) if type(c) is str else c for c in code.co_consts),
                        co_name=qualname.rpartition(".")[2], **named)
    function = _FUNCTION(code, template.__globals__, code.co_name, defaults or None)
    function.__qualname__ = qualname
    return function
'''.replace("@N@", str(N))


def template_source() -> str:
    """The source of formats/core/method_templates.py."""
    out = [head]
    table = []
    for kind in ("new", "init", "frozen_init"):
        row = []
        for n in range(N + 1):
            params = [f"_a{i}" for i in range(n)]
            name = f"_{kind}{n}"
            row.append(name)
            if kind == "new":
                body = f"    return _tuple_new(_cls, ({''.join(p + ', ' for p in params)}))"
                first = "_cls"
            elif kind == "init":
                body = "\n".join(f"    self.{p} = {p}" for p in params) or "    pass"
                first = "self"
            else:
                body = "\n".join(f"    _set(self, {p!r}, {p})" for p in params) or "    pass"
                first = "self"
            out.append(f"\n\ndef {name}({first}: Any{''.join(', ' + p + ': Any' for p in params)}) -> Any:\n{body}\n")
        table.append(f'    "{kind}": [{", ".join(row)}],\n')
    out.append("\n\n_TEMPLATES: dict[str, list[Callable[..., Any]]] = {\n" + "".join(table) + "}\n"
               '"""Each kind\'s method, by number of fields."""\n')
    return "".join(out)


def test_the_templates_module_is_current() -> None:
    assert TEMPLATES.read_text() == template_source()


@pytest.mark.parametrize("frozen", [False, True], ids=["plain", "frozen"])
@pytest.mark.parametrize("n", range(N + 2))
def test_a_record_of_n_fields(n: int, frozen: bool) -> None:
    """Every number of fields (one more than the templates hold: compiled from source), the last half with
    defaults: the signature, the values set, keyword arguments, the wording of a missing argument."""
    names = [f"f{i}" for i in range(n)]
    body = "".join(f"    {name}: int{' = ' + str(i) if i >= n // 2 else ''}\n" for i, name in enumerate(names)) or "    pass\n"
    scope: dict[str, object] = {"record": record}
    exec(f"@record(frozen={frozen})\nclass R:\n{body}", scope)  # noqa: S102
    cls = scope["R"]
    required = names[:n // 2]
    assert str(inspect.signature(cls)) == "(" + ", ".join(
        [*required, *(f"{name}={i}" for i, name in enumerate(names) if i >= n // 2)]) + ")"
    obj = cls(*range(100, 100 + n))  # type: ignore[operator]
    assert [getattr(obj, name) for name in names] == list(range(100, 100 + n))
    assert cls(**{name: 7 for name in required}) == cls(*[7] * len(required), *range(n // 2, n))  # type: ignore[operator]
    assert cls.__init__.__qualname__ == "R.__init__" and cls.__init__.__name__ == "__init__"  # type: ignore[misc]
    if required:
        with pytest.raises(TypeError, match=r"^R.__init__\(\) missing 1 required positional argument: 'f0'$"):
            cls(*[] if len(required) == 1 else [], **{name: 1 for name in required[1:]})  # type: ignore[operator]


@pytest.mark.parametrize("n", [1, 2, 5, N, N + 1])
def test_a_value_tuple_of_n_fields(n: int) -> None:
    names = [f"f{i}" for i in range(n)]
    body = "".join(f"    {name}: int{' = ' + str(i) if i == n - 1 else ''}\n" for i, name in enumerate(names))
    scope: dict[str, object] = {"ValueTuple": ValueTuple}
    exec(f"class V(ValueTuple):\n{body}", scope)  # noqa: S102
    cls = scope["V"]
    assert cls(*range(n)) == tuple(range(n)) and cls(*range(n - 1)) == tuple(range(n))  # type: ignore[operator]
    assert cls(**{name: 5 for name in names}) == (5,) * n  # type: ignore[operator]
    assert str(inspect.signature(cls)) == "(" + ", ".join([*names[:-1], f"{names[-1]}={n - 1}"]) + ")"
    assert cls.__new__.__qualname__ == "V.__new__"


if __name__ == "__main__":
    TEMPLATES.write_text(template_source())
