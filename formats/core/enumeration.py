"""Enumerations without the ``enum`` module: :class:`IntEnumeration` and :class:`StrEnumeration`.

``enum`` costs about 2 ms to import with the ``functools`` and ``types`` it pulls in, and every ``ckpt``
command line needs the exit codes (:class:`~formats.core.errors.ExitCode`), tensor roles and format names
(:mod:`formats.core.model`). A class deriving from one of these two turns each upper-case attribute of its
body into a member: an instance of the class that *is* the ``int`` or ``str`` (equal to it, hashed as it,
written to JSON as it, ``str()`` and ``format()`` give the plain value), with a ``name`` and a ``value``,
as ``enum.IntEnum`` and a ``(str, Enum)`` with ``__str__`` returning its value do. The class iterates over
its members in definition order, and ``Cls(value)`` and ``Cls["NAME"]`` look them up::

    class Colour(StrEnumeration):
        RED = "red"  #: a comment documents a member

    Colour.RED == "red"; Colour("red") is Colour.RED; list(Colour) == [Colour.RED]
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["IntEnumeration", "StrEnumeration"]


class _EnumerationType(type):
    """The metaclass: makes the members when the class is made, and looks them up."""

    _members: list[Any]

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _EnumerationType:
        cls = super().__new__(mcs, name, bases, namespace)
        base = next((b for b in cls.__mro__ if b in (int, str)), None)
        members = []
        for attr, value in namespace.items():
            if base is not None and attr.isupper() and not attr.startswith("_") and type(value) is base:
                member = base.__new__(cls, value)  # type: ignore[call-overload]  # int.__new__ or str.__new__
                member.name, member._value = attr, value  # (the plain value itself: str() of it makes no copy)
                setattr(cls, attr, member)
                members.append(member)
        cls._members = members
        return cls

    def __iter__(cls) -> Iterator[Any]:
        return iter(cls._members)

    def __len__(cls) -> int:
        return len(cls._members)

    def __getitem__(cls, name: str) -> Any:
        for member in cls._members:
            if member.name == name:
                return member
        raise KeyError(name)

    def __call__(cls, value: object) -> Any:
        for member in cls._members:
            if member == value:
                return member
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")


class _Member:
    """What a member of either kind has: ``name``, ``value`` (the plain ``int`` or ``str``), a repr like enum's,
    ``str()`` and ``format()`` of the plain value, pickling and copying as itself."""

    name: str
    _value: Any  # the plain int or str the class body gave (one object: a role's text, asked for a row a tensor,
    # was a new string each time - 54 MB at 10^6 tensors)

    @property
    def value(self) -> Any:
        """The plain ``int`` or ``str``."""
        return self._value

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value!r}>"

    def __str__(self) -> str:
        return str(self.value)  # IntEnum's on Python 3.11+: the number; (str, Enum) with __str__: the value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return type(self), (self.value,)

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: object) -> Any:
        return self


if TYPE_CHECKING:  # what type checkers see: the enum module's classes, whose members behave the same
    from enum import Enum, IntEnum

    class IntEnumeration(IntEnum):
        """Members are ``int``\\ s (see the module's docstring)."""

    class StrEnumeration(str, Enum):
        """Members are ``str``\\ s (see the module's docstring)."""
else:
    class IntEnumeration(_Member, int, metaclass=_EnumerationType):
        """Members are ``int``\\ s (see the module's docstring)."""

    class StrEnumeration(_Member, str, metaclass=_EnumerationType):
        """Members are ``str``\\ s (see the module's docstring)."""
