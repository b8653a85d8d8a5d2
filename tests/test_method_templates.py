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
MARKER = "# -- below: written by tests/test_method_templates.py (python -m tests.test_method_templates) --\n"
"""The line after which the module is generated; what comes before it (the functions using the templates) is
the module's own text, kept as it is."""


def template_source() -> str:
    """The source of formats/core/method_templates.py: its own text up to :data:`MARKER`, then the templates."""
    head = TEMPLATES.read_text().split(MARKER)[0] + MARKER
    out = [head.rstrip("\n") + "\n"]
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
    assert method_templates.MOST == N and TEMPLATES.read_text() == template_source()


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
