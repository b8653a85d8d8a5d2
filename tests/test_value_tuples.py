"""formats.core.value_tuples.ValueTuple behaves as the collections.namedtuple it replaces (the oracle here)."""
from __future__ import annotations

import copy
import os
import pickle
from collections import namedtuple

import pytest

from formats.core.value_tuples import ValueTuple

from .installed import child_env, site_dirs


class Ref(ValueTuple):
    separator: bytes
    offset: int
    size: int = 0
    tags: tuple[str, ...] = ()

    def end(self) -> int:
        return self.offset + self.size


Oracle = namedtuple("Ref", ["separator", "offset", "size", "tags"], defaults=(0, ()))


@pytest.mark.parametrize("args, kwargs", [((b"k", 5), {}), ((b"k", 5, 7), {}), ((), {"separator": b"", "offset": 1}),
                                          ((b"x", 2, 3, ("a",)), {}), ((b"x",), {"offset": 9, "tags": ("t",)})])
def test_made_compared_and_shown_as_a_namedtuple(args: tuple, kwargs: dict) -> None:
    ours, theirs = Ref(*args, **kwargs), Oracle(*args, **kwargs)
    assert ours == theirs and tuple(ours) == tuple(theirs) and hash(ours) == hash(theirs)
    assert repr(ours) == repr(theirs)
    assert [ours.separator, ours.offset, ours.size, ours.tags] == list(theirs)
    assert ours._asdict() == theirs._asdict()
    assert ours._replace(size=42) == theirs._replace(size=42) and type(ours._replace(size=1)) is Ref
    assert Ref._make(list(theirs)) == ours
    assert Ref._fields == Oracle._fields and Ref._field_defaults == Oracle._field_defaults
    assert Ref.__match_args__ == Oracle.__match_args__
    assert pickle.loads(pickle.dumps(ours)) == ours and type(pickle.loads(pickle.dumps(ours))) is Ref
    assert copy.copy(ours) == ours and copy.deepcopy(ours) == ours
    separator, offset, size, tags = ours
    assert (separator, offset, size, tags) == tuple(theirs)
    assert ours.end() == theirs.offset + theirs.size


def test_errors_as_a_namedtuple_gives_them() -> None:
    with pytest.raises(TypeError):
        Ref(b"k")  # offset missing
    with pytest.raises(TypeError):
        Ref(b"k", 1, 2, (), "extra")
    with pytest.raises(AttributeError):
        Ref(b"k", 1).offset = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        Ref(b"k", 1).other = 2  # type: ignore[attr-defined]  # no __dict__
    with pytest.raises(ValueError):
        Ref(b"k", 1)._replace(nope=1)
    with pytest.raises(TypeError):
        Ref._make([b"k"])


def test_a_default_cannot_come_before_a_field_without_one() -> None:
    with pytest.raises(TypeError, match="cannot follow"):
        class Bad(ValueTuple):
            a: int = 0
            b: int


def test_a_subclass_adds_behaviour_not_fields() -> None:
    class Longer(Ref):
        def twice(self) -> int:
            return 2 * self.size

    assert Longer(b"a", 1, 4).twice() == 8 and Longer._fields == Ref._fields
    with pytest.raises(TypeError, match="cannot add fields"):
        class Wider(Ref):
            extra: int = 0


def test_no_collections_import() -> None:
    import subprocess
    import sys

    code = "import sys\nimport formats.core.value_tuples\nprint('collections' in sys.modules)"
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          env=child_env(PYTHONPATH=os.pathsep.join(site_dirs())))
    assert done.stdout.strip() == "False", done.stderr


def test_no_module_makes_a_collections_namedtuple() -> None:
    """The second record idiom is the value tuple (docs/development.md, "House rules"): no
    ``collections.namedtuple`` is left."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    found = [f"{path.relative_to(root)}:{n}" for folder in ("formats", "ckpt_cli") for path in (root / folder).rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if "namedtuple(" in line]
    assert found == []
