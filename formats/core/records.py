"""Small data classes without the :mod:`dataclasses` module, for the modules on a command's start-up path.

Importing :mod:`dataclasses` pulls in :mod:`inspect` (and ``ast``, ``dis``, ``tokenize``), and decorating a
class costs it about half a millisecond: together more than a ``ckpt rename --link`` spends writing its
output. :func:`record` gives a class what ``@dataclass`` gives the classes that use it here - an
``__init__`` taking the annotated fields in order (defaults as class attributes or :func:`field`),
``__repr__``, ``__eq__``, and with ``frozen`` immutability and ``__hash__``, with ``slots`` ``__slots__`` -
from one small generated function per class; :func:`replace` is ``dataclasses.replace``. Nothing else of
dataclasses (``InitVar``, ``ClassVar``, ``__post_init__``, ordering, ``kw_only``) is offered; a field made
with ``field(init=False)`` is not a parameter of ``__init__`` (it starts at its default or factory value).
"""
from __future__ import annotations

from _operator import attrgetter  # operator's C half, without operator.py (start-up)

from formats.core.method_templates import renamable, shaped, shaped_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = ["record", "field", "replace", "fields_of", "FrozenRecordError"]

_MISSING = object()
_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__getstate__",
            "__setstate__")


class FrozenRecordError(AttributeError):
    """Assigning to a field of a frozen record (as ``dataclasses.FrozenInstanceError``)."""


class _Field:
    __slots__ = ("default", "factory", "repr", "compare", "init")

    def __init__(self, default: Any, factory: Callable[[], Any] | None, repr: bool, compare: bool,
                 init: bool = True) -> None:
        self.default, self.factory, self.repr, self.compare, self.init = default, factory, repr, compare, init


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None, repr: bool = True,
          compare: bool = True, init: bool = True) -> Any:
    """A field's default (a value, or a ``default_factory`` called for each instance), whether it shows in
    the repr, takes part in ``==`` and (``init``) is a parameter of ``__init__``, as ``dataclasses.field``."""
    if not init and default is _MISSING and default_factory is None:
        raise TypeError("a field with init=False needs a default or a default_factory")
    return _Field(default, default_factory, repr, compare, init)


def fields_of(obj: Any) -> tuple[str, ...]:
    """The names of a record's (or record class's) fields, in order."""
    return obj.__record_fields__


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes``, as ``dataclasses.replace`` (``init=False`` fields
    start again from their defaults, and cannot be changed)."""
    cls = type(obj)
    names = _INIT_NAMES.get(cls)
    if names is None:
        specs = obj.__record_specs__  # type: ignore[attr-defined]
        names = _INIT_NAMES[cls] = frozenset(name for name in obj.__record_fields__  # type: ignore[attr-defined]
                                             if specs[name].init)
    if not names.issuperset(changes):
        specs = obj.__record_specs__  # type: ignore[attr-defined]
        fixed = sorted(name for name in changes if name in specs and not specs[name].init)
        if fixed:
            raise ValueError(f"field {fixed[0]!r} is declared with init=False: replace cannot change it")
        raise TypeError(f"{cls.__name__} has no field {sorted(set(changes) - names)[0]!r} to replace")
    values = {name: changes[name] if name in changes else getattr(obj, name)
              for name in obj.__record_fields__ if name in names}  # type: ignore[attr-defined]
    return cls(**values)


_INIT_NAMES: dict[type, frozenset[str]] = {}
"""Record class -> the names of its fields ``__init__`` takes (:func:`replace`, once per node of a large graph)."""


if TYPE_CHECKING:
    from typing import overload

    from typing_extensions import dataclass_transform  # typing has it from Python 3.11

    @overload
    def record(cls: type[T], /) -> type[T]: ...

    @overload
    def record(*, frozen: bool = False, eq: bool = True, slots: bool = False) -> Callable[[type[T]], type[T]]: ...

    @dataclass_transform(field_specifiers=(field,))
    def record(cls: type[T] | None = None, *, frozen: bool = False, eq: bool = True,
               slots: bool = False) -> Any:
        """What type checkers see: a ``dataclass`` (fields, ``__init__``, ``frozen``)."""
else:
    def record(cls: type | None = None, *, frozen: bool = False, eq: bool = True, slots: bool = False) -> Any:
        """Class decorator: ``@record``, ``@record(frozen=True)``, ``@record(eq=False)``, ``@record(slots=True)``."""
        def wrap(cls: type) -> type:
            return _build(cls, frozen, eq, slots)

        return wrap if cls is None else wrap(cls)


def _build(cls: type, frozen: bool, eq: bool, slots: bool) -> type:
    declared = {k: v for k, v in cls.__dict__.items() if k in _METHODS}
    own = list(cls.__dict__.get("__annotations__", {}))
    names = [*getattr(cls, "__record_fields__", ()), *own]
    specs: dict[str, _Field] = dict(getattr(cls, "__record_specs__", {}))
    for name in own:
        value = cls.__dict__.get(name, _MISSING)
        specs[name] = value if isinstance(value, _Field) else _Field(value, None, True, True)
    if slots:
        body = {k: v for k, v in cls.__dict__.items() if k not in own and k not in ("__dict__", "__weakref__")}
        body["__slots__"] = tuple(own)
        qualname = cls.__qualname__
        cls = type(cls)(cls.__name__, cls.__bases__, body)
        cls.__qualname__ = qualname
    else:
        for name in own:  # factories and field() specs are not class attributes; plain defaults stay
            if isinstance(cls.__dict__.get(name), _Field):
                if specs[name].default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, specs[name].default)
    cls.__record_fields__ = tuple(names)  # type: ignore[attr-defined]
    cls.__record_specs__ = specs  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    for i, name in enumerate(names):
        namespace[f"_d{i}"], namespace[f"_f{i}"] = specs[name].default, specs[name].factory
    methods = {"__init__": _init_function(cls.__qualname__, names, specs, frozen, namespace), "__repr__": _repr}
    if eq:
        methods["__eq__"] = _eq
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    if frozen and slots:
        methods.update(__getstate__=_getstate, __setstate__=_setstate)
    for method, function in methods.items():
        if method not in declared:  # the class's own stays, as dataclasses leaves it
            if method == "__init__":
                function.__qualname__ = f"{cls.__qualname__}.__init__"
            setattr(cls, method, function)
    cls.__record_values__ = staticmethod(_getter(names))  # type: ignore[attr-defined]
    cls.__record_compared__ = staticmethod(_getter([n for n in names if specs[n].compare]))  # type: ignore[attr-defined]
    if eq and declared.get("__hash__") is None:  # eq without frozen: unhashable, as a dataclass
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
    return cls


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """``obj -> (obj.a, obj.b, ...)`` for ``names`` (in C, through ``operator.attrgetter``)."""
    if len(names) >= 2:
        return attrgetter(*names)
    return lambda obj: tuple(getattr(obj, n) for n in names)


def _init_function(qualname: str, names: list[str], specs: dict[str, _Field], frozen: bool,
                   namespace: dict[str, Any]) -> Any:
    """The generated ``__init__``: written out in :mod:`formats.core.method_templates` for fields that are all
    parameters, without factories (their defaults last), else compiled from :func:`_init_source`."""
    kind = "frozen_init" if frozen else "init"
    if all(specs[n].init and specs[n].factory is None for n in names):  # (most records)
        defaults = [specs[n].default for n in names if specs[n].default is not _MISSING]
        if renamable(names) and all(specs[n].default is not _MISSING for n in names[len(names) - len(defaults):]):
            return shaped(kind, names, tuple(defaults), f"{qualname}.__init__")
    elif renamable(names):
        params = [n for n in names if specs[n].init]
        defaults = [_MISSING if specs[n].factory is not None else specs[n].default for n in params
                    if specs[n].factory is not None or specs[n].default is not _MISSING]
        if all(specs[n].factory is not None or specs[n].default is not _MISSING
               for n in params[len(params) - len(defaults):]):  # (else compiling says what is wrong)
            made = shaped_fields(kind, "".join(map(_letter, map(specs.__getitem__, names))), names, tuple(defaults),
                                 f"{qualname}.__init__", namespace)
            if made is not None:
                return made
    exec(_init_source(names, specs, frozen), namespace)  # noqa: S102 - code built from field names
    return namespace["__init__"]


def _letter(spec: _Field) -> str:
    """A field's letter in :func:`~formats.core.method_templates.shaped_fields`' shape."""
    return ("f" if spec.factory is not None else "p") if spec.init else ("y" if spec.factory is not None else "x")


def _init_source(names: list[str], specs: dict[str, _Field], frozen: bool) -> str:
    """The generated ``__init__``: one parameter per field, defaults and factories as the specs say."""
    params, body = ["self"], []
    for i, name in enumerate(names):
        spec = specs[name]
        if not spec.init:
            value = f"_f{i}()" if spec.factory is not None else f"_d{i}"
        elif spec.factory is not None:
            params.append(f"{name}=_MISSING")
            value = f"_f{i}() if {name} is _MISSING else {name}"
        else:
            params.append(name if spec.default is _MISSING else f"{name}=_d{i}")
            value = name
        body.append(f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    return "\n".join([f"def __init__({', '.join(params)}):", *(f"    {b}" for b in body or ["pass"])]) + "\n"


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_fields__ if self.__record_specs__[n].repr)
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self.__record_compared__(self) == other.__record_compared__(other)


def _hash(self: Any) -> int:
    return hash(self.__record_compared__(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> tuple[Any, ...]:
    return self.__record_values__(self)


def _setstate(self: Any, state: tuple[Any, ...]) -> None:
    for name, value in zip(self.__record_fields__, state):
        object.__setattr__(self, name, value)
