"""formats/core/records.py behaves as dataclasses does for what the codebase uses of it: the same __init__,
defaults and factories, repr, ==, hashing, immutability, slots, replace and copies."""
from __future__ import annotations

import copy
import dataclasses

import pytest

from formats.core import records

KINDS = [{}, {"frozen": True}, {"eq": False}, {"slots": True}, {"frozen": True, "slots": True},
         {"frozen": True, "eq": False}]


def _pair(options: dict[str, bool]) -> tuple[type, type]:
    """The same class made by dataclasses and by records."""
    def make(decorate, field):  # type: ignore[no-untyped-def]
        @decorate(**options)
        class Point:
            """A point."""

            x: int
            label: str = "a"
            tags: list = field(default_factory=list)
            cache: object = field(default=None, repr=False, compare=False)

            def norm(self) -> int:
                return abs(self.x)

        return Point

    return make(dataclasses.dataclass, dataclasses.field), make(records.record, records.field)


@pytest.mark.parametrize("options", KINDS, ids=lambda o: ",".join(o) or "plain")
def test_a_record_behaves_as_a_dataclass(options: dict[str, bool]) -> None:
    D, R = _pair(options)
    for args, kwargs in [((1,), {}), ((2, "b", [1], 5), {}), ((3,), {"cache": 7, "tags": [2]})]:
        d, r = D(*args, **kwargs), R(*args, **kwargs)
        assert repr(d) == repr(r)
        assert (d.x, d.label, d.tags, d.cache) == (r.x, r.label, r.tags, r.cache)
        assert (d == D(*args, **kwargs)) == (r == R(*args, **kwargs))
        assert (d == D(9)) == (r == R(9))
        assert r.norm() == d.norm()
    assert (D(1, cache=1) == D(1, cache=2)) == (R(1, cache=1) == R(1, cache=2))
    assert R(1).tags is not R(1).tags
    assert (D.__hash__ is None) == (R.__hash__ is None)
    if R.__hash__ is not None and options.get("eq", True):
        assert hash(R(1, tags=(1,))) == hash(D(1, tags=(1,)))
    assert hasattr(R(1), "__dict__") == hasattr(D(1), "__dict__")
    assert R.__qualname__ == D.__qualname__
    with pytest.raises(TypeError):
        R()
    if options.get("frozen"):
        with pytest.raises(AttributeError):
            R(1).x = 2
        with pytest.raises(records.FrozenRecordError):
            del R(1).x
    changed = records.replace(R(1, "b", [1], 5), label="c")
    assert (changed.x, changed.label, changed.tags, changed.cache) == (1, "c", [1], 5)
    with pytest.raises(TypeError):
        records.replace(R(1), nope=1)
    original = R(1, "b", [1], 5)
    deep, shallow = copy.deepcopy(original), copy.copy(original)
    assert (deep.x, deep.label, deep.tags, deep.cache) == (1, "b", [1], 5) and deep.tags is not original.tags
    assert shallow.tags is original.tags
    assert records.fields_of(R) == ("x", "label", "tags", "cache")


def test_methods_a_class_declares_are_kept() -> None:
    @records.record
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Named) and other.name.lower() == self.name.lower()

        def __hash__(self) -> int:
            return hash(self.name.lower())

    assert repr(Named("A")) == "<A>"
    assert Named("A") == Named("a") and hash(Named("A")) == hash(Named("a"))


def test_a_record_with_one_field() -> None:
    @records.record(frozen=True)
    class One:
        value: int

    assert repr(One(1)) == "test_a_record_with_one_field.<locals>.One(value=1)"
    assert One(1) == One(1) != One(2)
    assert hash(One(1)) == hash((1,))


def test_a_field_left_out_of_init_behaves_as_a_dataclass_one() -> None:
    def make(decorate, field):  # type: ignore[no-untyped-def]
        @decorate
        class Cached:
            name: str
            hits: list = field(default_factory=list, init=False)
            _memo: object = field(default=None, init=False, repr=False)

        return Cached

    D, R = make(dataclasses.dataclass, dataclasses.field), make(records.record, records.field)
    d, r = D("a"), R("a")
    assert repr(d).replace(D.__qualname__, "") == repr(r).replace(R.__qualname__, "")
    assert (r.name, r.hits, r._memo) == (d.name, d.hits, d._memo) == ("a", [], None)
    assert R("a").hits is not R("a").hits
    for cls in (D, R):
        with pytest.raises(TypeError):
            cls("a", [])
    r._memo, d._memo = 5, 5
    assert (r == R("a")) == (d == D("a")) is False  # compared, as dataclasses does
    again, same = records.replace(r, name="b"), dataclasses.replace(d, name="b")
    assert (again.name, again._memo) == ("b", None) == (same.name, same._memo)
    with pytest.raises(ValueError):
        records.replace(r, _memo=1)
    with pytest.raises(TypeError):
        records.field(init=False)


def test_no_module_of_the_package_imports_dataclasses() -> None:
    """One record idiom (docs/development.md, "House rules"): a class that holds data is a ``@record``, never a
    dataclass."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    pattern = re.compile(r"^\s*(import\s+dataclasses\b|from\s+dataclasses\s+import\b)", re.M)
    offenders = [str(path.relative_to(root)) for package in ("formats", "ckpt_cli")
                 for path in sorted((root / package).rglob("*.py")) if pattern.search(path.read_text())]
    assert offenders == []
