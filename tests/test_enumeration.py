"""formats.core.enumeration: ExitCode, Role and FormatName behave as the enum.IntEnum and (str, Enum) classes
they replaced (issue 24 #6: enum stays off the start-up path). The oracle is the enum module itself."""
from __future__ import annotations

import copy
import json
import pickle
from enum import Enum, IntEnum

import pytest

from formats.core.enumeration import IntEnumeration, StrEnumeration
from formats.core.errors import ExitCode
from formats.core.model import FormatName, Role


class _OldExit(IntEnum):
    OK = 0
    PROBLEMS = 1
    USAGE = 2
    INPUT = 3
    OUTPUT = 4
    INTERNAL = 5
    INTERRUPTED = 130

    def __str__(self) -> str:  # IntEnum's own from 3.11 on; spelled out for 3.10
        return int.__repr__(self)


class _ValueStr(str, Enum):
    """What Role and FormatName were: ``(str, Enum)`` whose ``str()`` is the value."""

    def __str__(self) -> str:
        return self.value


_OldRole = _ValueStr("_OldRole", [(m.name, m.value) for m in Role])
_OldFormatName = _ValueStr("_OldFormatName", [(m.name, m.value) for m in FormatName])


def _pairs():
    yield from zip(ExitCode, _OldExit)
    yield from zip(Role, _OldRole)
    yield from zip(FormatName, _OldFormatName)


def test_members_in_order_with_names_and_values() -> None:
    assert [(m.name, m.value) for m in ExitCode] == [(m.name, m.value) for m in _OldExit]
    assert [m.value for m in Role] == ["variable", "slot", "optimizer", "iterator", "save_counter", "object_graph",
                                       "other"]
    assert len(ExitCode) == 7 and len(Role) == 7 and len(FormatName) == 15
    assert [type(m.value) for m in (ExitCode.OK, Role.SLOT, FormatName.NPZ)] == [int, str, str]


@pytest.mark.parametrize("new, old", list(_pairs()), ids=lambda m: repr(m))
def test_a_member_behaves_as_the_enum_member_did(new, old) -> None:
    assert new == old and new == old.value and hash(new) == hash(old)
    assert (str(new), f"{new}", f"{new:>12}", "%s" % new) == (str(old), f"{old}", f"{old:>12}", "%s" % old)  # noqa: UP031
    assert repr(new) == repr(old).replace("_Old", "").replace("<Exit.", "<ExitCode.")
    assert json.dumps({"x": new}) == json.dumps({"x": old})
    assert type(new)(old.value) is new and type(new)[old.name] is new
    assert pickle.loads(pickle.dumps(new)) is new and copy.copy(new) is new and copy.deepcopy(new) is new
    assert isinstance(new, type(old.value))


def test_lookups_refuse_what_is_no_member() -> None:
    with pytest.raises(ValueError, match="7 is not a valid ExitCode"):
        ExitCode(7)
    with pytest.raises(ValueError, match="'nope' is not a valid Role"):
        Role("nope")
    with pytest.raises(KeyError):
        FormatName["NOPE"]


def test_only_upper_case_attributes_of_the_builtin_type_become_members() -> None:
    class Size(IntEnumeration):
        SMALL = 1
        LARGE = 2
        limit = 3  # lower case: an ordinary attribute
        _HIDDEN = 4
        LABEL = "not an int"

    class Colour(StrEnumeration):
        RED = "red"
        COUNT = 2

    assert list(Size) == [Size.SMALL, Size.LARGE] and Size.limit == 3 and type(Size.LABEL) is str
    assert list(Colour) == [Colour.RED] and Colour.COUNT == 2 and Colour("red") is Colour.RED


def test_str_of_a_member_is_its_one_plain_value() -> None:
    """A role's text is asked for a row a tensor: str() gives the class body's own string each time, not a copy."""
    first, again = str(Role.VARIABLE), str(Role.VARIABLE)
    assert type(first) is str and first == "variable" and first is again is Role.VARIABLE.value
    assert type(ExitCode(0).value) is int and str(ExitCode(0)) == "0"
