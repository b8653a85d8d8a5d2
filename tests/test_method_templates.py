"""formats/core/method_templates.py is what this module's generator writes (run ``python -m tests.test_method_templates``
to write it again), and the methods made from it behave as the ones compiled from each class's own source."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from formats.core import method_templates
from formats.core import records
from formats.core.records import record
from formats.core.value_tuples import ValueTuple

TEMPLATES = Path(method_templates.__file__)

N = 14
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


FIELD_TEMPLATES = TEMPLATES.with_name("field_templates.py")


def field_template_source() -> str:
    """The source of formats/core/field_templates.py: a record's ``__init__`` for each shape of ckpt's own records
    with a field made by a factory or not set by ``__init__`` (:func:`record_shapes`)."""
    shapes = record_shapes()
    most = max((len(shape) for _, shape in shapes), default=0)
    out = ['"""A record\'s ``__init__`` for each shape of ckpt\'s own records that has a field made by a factory or not '
           'set by\n``__init__``, compiled into this module\'s ``.pyc``: see '
           ':func:`formats.core.method_templates.shaped_fields`.\n\n'
           'Written by ``tests/test_method_templates.py`` (``python -m tests.test_method_templates``; a test checks it '
           'is current).\n"""\n',
           "from __future__ import annotations\n\nTYPE_CHECKING = False  # typing itself stays off the start-up path\n"
           "if TYPE_CHECKING:\n    from collections.abc import Callable\n    from typing import Any\n\n"
           "# the names of a record's own namespace, these functions' globals when made (defined here for linters)\n",
           "_MISSING: Any = None\n_set: Any = None\n" +
           "".join(f"_d{i}: Any = None\n_f{i}: Any = None\n" for i in range(most))]
    names = []
    for kind, shape in shapes:
        name = f"_{kind}_{shape}"
        names.append(f'    "{kind}_{shape}": {name},\n')
        fields = [f"_a{i}" for i in range(len(shape))]
        specs = {f: records._Field(None if letter in "fy" else 0, list if letter in "fy" else None, True, True,
                                   letter in "pf") for f, letter in zip(fields, shape)}
        body = records._init_source(fields, specs, kind == "frozen_init").split("\n", 1)[1]  # the body compiled
        params = "".join(f", {f}: Any" for f, letter in zip(fields, shape) if letter in "pf")  # (defaults: given)
        out.append(f"\n\ndef {name}(self: Any{params}) -> Any:\n{body}")
    out.append("\n\nFIELDS: dict[str, Callable[..., Any]] = {\n" + "".join(names) + "}\n"
               '"""Each template by its kind and shape: ``init_ppf``, ``frozen_init_pfx``."""\n')
    return "".join(out)


def record_shapes() -> list[tuple[str, str]]:
    """The kinds and shapes (:func:`~formats.core.method_templates.shaped_fields`) of ckpt's own records that have a
    field made by a factory or not set by ``__init__``: read from the source (``@record`` classes' annotated
    fields), not imported."""
    found = set()
    root = Path(method_templates.__file__).parents[2]
    for path in sorted([*root.joinpath("formats").rglob("*.py"), *root.joinpath("ckpt_cli").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            frozen = None
            for deco in node.decorator_list:
                if isinstance(deco, ast.Name) and deco.id == "record":
                    frozen = False
                elif isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "record":
                    frozen = any(k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
                                 for k in deco.keywords)
            if frozen is None:
                continue
            shape = "".join(_letter(item.value) for item in node.body if isinstance(item, ast.AnnAssign)
                            and isinstance(item.target, ast.Name))
            if shape.strip("p") and len(shape) <= N:
                found.add(("frozen_init" if frozen else "init", shape))
    return sorted(found)


def _letter(value: ast.expr | None) -> str:
    """A field's letter, from the value given it in the class body."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "field"):
        return "p"
    given = {k.arg: k.value for k in value.keywords}
    init = not (isinstance(given.get("init"), ast.Constant) and given["init"].value is False)  # type: ignore[union-attr]
    factory = "default_factory" in given
    return ("f" if factory else "p") if init else ("y" if factory else "x")


def test_the_templates_module_is_current() -> None:
    assert method_templates.MOST == N and TEMPLATES.read_text() == template_source()


def test_the_field_templates_module_is_current() -> None:
    assert FIELD_TEMPLATES.read_text() == field_template_source()


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


@pytest.mark.parametrize("frozen", [False, True], ids=["plain", "frozen"])
def test_a_record_with_factories_and_fields_init_does_not_set(frozen: bool) -> None:
    """A shape ckpt's records have (``init_ppf`` and ``frozen_init_ppppfpffpp`` are in the templates, ``pfyx`` is not:
    compiled): the same signature, values, a new list per instance, and an argument given instead of the factory."""
    from formats.core.records import field

    def make(body: str) -> type:
        scope: dict[str, object] = {"record": record, "field": field}
        exec(f"@record(frozen={frozen})\nclass R:\n{body}", scope)  # noqa: S102
        return scope["R"]  # type: ignore[return-value]

    template = make("    a: int\n    b: int = 2\n    c: list = field(default_factory=list)\n") if not frozen else \
        make("".join(f"    p{i}: int\n" for i in range(4)) + "    f4: list = field(default_factory=list)\n    p5: int = 5\n"
             "    f6: list = field(default_factory=list)\n    f7: dict = field(default_factory=dict)\n"
             "    p8: int = 8\n    p9: str = 'x'\n")
    code = template.__init__.__code__  # type: ignore[misc]
    assert code.co_filename.endswith("field_templates.py")
    if not frozen:
        assert str(inspect.signature(template)) == "(a, b=2, c=<object object>)".replace("<object object>",
                                                                                         repr(records._MISSING))
        one, two = template(1), template(1, 3)  # type: ignore[operator]
        assert (one.a, one.b, one.c, two.b) == (1, 2, [], 3) and one.c is not two.c
        assert template(1, c=[5]).c == [5]  # type: ignore[operator]
        with pytest.raises(TypeError, match=r"^R.__init__\(\) missing 1 required positional argument: 'a'$"):
            template()  # type: ignore[operator]
    else:
        obj = template(0, 1, 2, 3)  # type: ignore[operator]
        assert (obj.f4, obj.p5, obj.f6, obj.f7, obj.p8, obj.p9) == ([], 5, [], {}, 8, "x")
        with pytest.raises(records.FrozenRecordError):
            obj.f4 = []
    compiled = make("    p: int\n    f: list = field(default_factory=list)\n    y: set = field(init=False, "
                    "default_factory=set)\n    x: int = field(init=False, default=4)\n")
    assert compiled.__init__.__code__.co_filename == "<string>"  # type: ignore[misc]
    obj = compiled(1)  # type: ignore[operator]
    assert (obj.p, obj.f, obj.y, obj.x) == (1, [], set(), 4)


def test_every_record_of_ckpt_gets_its_init_from_a_template() -> None:
    """Every record class of ckpt's modules (those this environment imports) takes its ``__init__`` from a template,
    so that no command compiles one at start-up - but for fields a template cannot rename (``_used``)."""
    import importlib
    import pkgutil

    import formats

    compiled = []
    for info in pkgutil.walk_packages(formats.__path__, "formats."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency this environment lacks
            continue
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name and hasattr(value, "__record_specs__") and \
                    method_templates.renamable(value.__record_fields__):
                if value.__init__.__code__.co_filename == "<string>":
                    compiled.append(f"{info.name}.{value.__qualname__}")
    assert compiled == []


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
    FIELD_TEMPLATES.write_text(field_template_source())
