"""Named tuples without the :mod:`collections` package: :class:`ValueTuple`.

``collections.namedtuple`` costs every command that uses it the import of :mod:`collections` (about 1.5 ms,
as much as ckpt's whole listing of a small checkpoint). A class deriving from :class:`ValueTuple` declares
its fields as annotations, defaults as values, as ``typing.NamedTuple`` does, and is what a namedtuple
subclass is: a ``tuple`` (equal to, hashed and unpacked as one) with a property per field, ``_fields``,
``_field_defaults``, ``_make``, ``_replace``, ``_asdict`` and namedtuple's ``repr``; it pickles and copies as
one. Type checkers see ``typing.NamedTuple``::

    class BlockRef(ValueTuple):
        separator: bytes
        offset: int
        size: int = 0

The rule (docs/development.md, "House rules"): data classes are ``@record``; a value tuple is for an immutable
value made in bulk on a hot path (index entries) or used as a tuple.
"""
from __future__ import annotations

from _operator import itemgetter

from formats.core.method_templates import renamable, shaped

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from typing import NamedTuple as ValueTuple
else:
    class _ValueTupleType(type):
        """The metaclass: turns a subclass's annotations into the fields of a tuple."""

        def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
            namespace.setdefault("__slots__", ())
            if not any(isinstance(base, _ValueTupleType) for base in bases):  # ValueTuple itself
                return super().__new__(mcs, name, bases, namespace)
            own = list(namespace.get("__annotations__", {}))
            inherited = next((base._fields for base in bases if getattr(base, "_fields", None)), ())
            if inherited:
                if own:
                    raise TypeError(f"{name}: a value tuple's subclass cannot add fields")
                return super().__new__(mcs, name, bases, namespace)
            defaults = {field: namespace.pop(field) for field in own if field in namespace}
            if any(field not in defaults for field in own[len(own) - len(defaults):]):
                raise TypeError(f"{name}: fields without a default cannot follow fields with one")
            namespace.update(_fields=tuple(own), _field_defaults=defaults, __match_args__=tuple(own),
                             __new__=_constructor(name, own, defaults))
            for index, field in enumerate(own):
                namespace[field] = property(itemgetter(index), doc=f"Field {index}: {field}.")
            return super().__new__(mcs, name, bases, namespace)

    def _constructor(name: str, fields: list[str], defaults: dict[str, Any]) -> Any:
        """``__new__(cls, a, b=default)`` building the tuple, generated once per class (as namedtuple does;
        written out in :mod:`formats.core.method_templates` for the usual shapes, else compiled here)."""
        if renamable(fields):
            return shaped("new", fields, tuple(defaults[f] for f in fields if f in defaults), f"{name}.__new__")
        params = ", ".join(f"{f}=_default_{f}" if f in defaults else f for f in fields)
        values = "".join(f"{f}, " for f in fields)
        scope: dict[str, Any] = {"_tuple_new": tuple.__new__, **{f"_default_{f}": v for f, v in defaults.items()}}
        exec(f"def __new__(_cls, {params}):\n    return _tuple_new(_cls, ({values}))", scope)  # noqa: S102
        scope["__new__"].__qualname__ = f"{name}.__new__"
        return scope["__new__"]

    class ValueTuple(tuple, metaclass=_ValueTupleType):
        """The base of a named tuple declared by annotations (see the module's docstring)."""

        _fields: tuple[str, ...] = ()
        _field_defaults: dict[str, Any] = {}

        def __repr__(self) -> str:
            shown = ", ".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
            return f"{type(self).__name__}({shown})"

        def __getnewargs__(self) -> tuple[Any, ...]:
            return tuple(self)

        @classmethod
        def _make(cls, iterable: Any) -> Any:
            """A new instance from a sequence or iterable, as ``namedtuple._make``."""
            values = tuple(iterable)
            if len(values) != len(cls._fields):
                raise TypeError(f"expected {len(cls._fields)} arguments, got {len(values)}")
            return tuple.__new__(cls, values)

        def _replace(self, **changes: Any) -> Any:
            """A copy with some fields replaced, as ``namedtuple._replace``."""
            unknown = set(changes) - set(self._fields)
            if unknown:
                raise ValueError(f"got unexpected field names: {sorted(unknown)!r}")
            return self._make(changes.get(field, value) for field, value in zip(self._fields, self))

        def _asdict(self) -> dict[str, Any]:
            """The fields and values, as ``namedtuple._asdict``."""
            return dict(zip(self._fields, self))

__all__ = ["ValueTuple"]
