"""The shared format suite (zarr's ``StoreTests`` idea): :class:`FormatTests` holds one test per point of
the format contract, and every registered format passes it through a small subclass
(``tests/test_contract.py``) that only says where its sample files are and what it writes.

Readers (every format, every sample): the registry claims the sample for this format (sniff, resolve,
claim); metadata (keys, shapes, dtypes) and ``read()`` values (sha256) equal what an independent reader saw
- the corpus manifests (TensorFlow's own reader and h5py) for corpus files, ``numpy.load`` for npz and the
``safetensors`` library for safetensors files that numpy and safetensors wrote; ``iter_chunks``,
``byte_chunks`` and ``read_slice`` equal the whole value; ``problems()`` is empty; roles and names are
consistent; ``files`` are the files on disk that make up the checkpoint.

Writers (every layout the format declares in ``writes``): a fixed set of rows (several dtypes, bfloat16
where the layout takes it, a scalar, an empty tensor) is written through ``spec.write(...)`` with the one
signature of :mod:`formats.core.format`; then the output reopens through the registry with the same keys,
shapes, dtypes and values, an existing output needs ``force``, an input is never replaced (``force`` or
not), ``progress`` sees increasing byte counts, and ``verify`` says so in the report.

The base class is not collected itself (its name does not start with ``Test``); a format's subclass is.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import formats
from formats.core import registry
from formats.core.errors import OutputExistsError, OutputIsInputError
from formats.core.format import capability, layouts_of
from formats.core.model import Role
from formats.discover.resolve import claim, resolve
from tests.conftest import CORPUS, digest


def _manifest() -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for name in ("manifest.json", "manifest_more.json", "manifest_tf216.json"):
        entries.update(json.loads((CORPUS / name).read_text())["entries"])
    return entries


MANIFEST = _manifest()
"""Every corpus entry (both manifests): path relative to the corpus -> ``{format, tensors}``."""
REGISTERED = {"tf-bundle": "tf-bundle", "hdf5": "keras-h5", "tf-v1": "tf-v1", "saved-model": "saved-model",
              "keras3-dir": "keras3-dir", "keras3-sharded": "keras3-sharded"}
"""Manifest ``format`` -> the registry format that must read the entry (``checkpoint-state`` files are none)."""


def manifest_paths(format_name: str) -> tuple[str, ...]:
    """The corpus entries the registry format ``format_name`` reads, as the manifests name them."""
    return tuple(sorted(k for k, v in MANIFEST.items() if REGISTERED.get(v["format"]) == format_name))


@dataclass(frozen=True)
class Expected:
    """What an independent reader saw of one tensor: shape, dtype name, sha256 (None: no value to compare)."""

    shape: tuple[int, ...]
    dtype: str
    sha256: str | None


@dataclass
class Row:
    """One tensor to write (the ``Row`` protocol of :mod:`formats.core.format`)."""

    key: str
    value: Any
    shape: tuple[int, ...]
    dtype: str


def dtype_matches(ours: str, theirs: str) -> bool:
    """Whether our dtype name is the independent reader's (numpy's ``|S5``/``object`` are our ``string``)."""
    return ours == theirs or (theirs.startswith(("|S", "<U", "object")) and ours == "string")


def same(a: Any, b: Any) -> bool:
    """Equal shape, dtype and bytes (element lists for strings)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or b.dtype == object:
        return a.shape == b.shape and list(a.reshape(-1)) == list(b.reshape(-1))
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def value_of(source: Any) -> np.ndarray:
    """The array a source (an array, a TensorValue, a TensorEntry) stands for."""
    if isinstance(source, formats.TensorEntry):
        return source.read()
    if isinstance(source, formats.TensorValue):
        return np.asarray(source.value)
    return np.asarray(source)


def sample_values() -> dict[str, np.ndarray]:
    """The values every writer is asked to write (by short name), bfloat16 included."""
    import ml_dtypes

    return {
        "matrix": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
        "half": np.array([1.5, -2.0, 65504.0], dtype=np.float16),
        "brain": np.array([[1.5, -2.0], [0.25, 3.0e38]], dtype=ml_dtypes.bfloat16),
        "scalar": np.array(2.5, dtype=np.float64),
        "empty": np.zeros((0, 7), dtype=np.float32),
        "counts": np.array([1, -2, 1 << 40], dtype=np.int64),
        "bytes": np.array([0, 7, 255], dtype=np.uint8),
        "flags": np.array([True, False, True]),
        "rank4": np.arange(24, dtype=np.int32).reshape(1, 2, 3, 4),
    }


_made: dict[tuple[str, str], str] = {}


class FormatTests:
    """The contract every registered format passes. A subclass sets :attr:`format_name` and its samples
    (:attr:`corpus` and/or :attr:`made` with :meth:`make_sample`), and, when the format writes, where its
    outputs go (:attr:`outputs`) and the keys its layouts take (:meth:`key`)."""

    format_name: ClassVar[str] = ""
    """The registry name (an entry of ``registry.builtin_formats()``)."""
    corpus: ClassVar[tuple[str, ...]] = ()
    """Reader samples: paths relative to tests/data/corpus, as a user would type them."""
    made: ClassVar[tuple[str, ...]] = ()
    """Reader samples made by an independent writer (numpy, safetensors) with :meth:`make_sample`."""
    outputs: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Layout -> output names to write it at (every layout of ``writes``, one name or more)."""
    skip_values: ClassVar[dict[str, frozenset[str]]] = {}
    """Layout -> sample value names it cannot store (none by default)."""

    # -- what a subclass says -----------------------------------------------------------------------
    def make_sample(self, name: str, directory: Path) -> Path:
        """Write the sample ``name`` into ``directory`` with an independent writer; its path."""
        raise NotImplementedError

    def expected(self, path: Path) -> dict[str, Expected]:
        """What an independent reader saw in ``path``: the corpus manifest by default."""
        rel = os.path.relpath(path, CORPUS)
        return {k: Expected(tuple(v["shape"]), v["dtype"], v.get("sha256")) for k, v in MANIFEST[rel]["tensors"].items()}

    def key(self, layout: str, name: str) -> str:
        """The output key of the sample value ``name`` in ``layout``."""
        return name

    def rows(self, layout: str, output: str) -> tuple[list[Row], dict[str, Any]]:
        """The rows to write and the ``options`` to write them with."""
        from formats.core.sources import describe

        skip = self.skip_values.get(layout, frozenset())
        rows = []
        for name, value in sample_values().items():
            if name not in skip:
                dt, shape = describe(value)
                rows.append(Row(self.key(layout, name), value, shape, dt.name))
        return rows, {}

    def reads_back_as(self, layout: str, output: str) -> str:
        """The layout the output reopens as (the one written, by default)."""
        return layout

    def extra_keys(self, layout: str) -> set[str]:
        """Keys the output holds beyond the rows (an object graph passed in ``options``)."""
        return set()

    # -- plumbing -------------------------------------------------------------------------------------
    @property
    def spec(self) -> Any:
        return registry.get_format(self.format_name)

    def pytest_generate_tests(self, metafunc: Any) -> None:
        if "sample" in metafunc.fixturenames:
            names = [*self.corpus, *(f"made:{n}" for n in self.made)]
            metafunc.parametrize("sample", names, ids=names, indirect=True)
        if "output" in metafunc.fixturenames:
            pairs = [pytest.param(layout, out, id=f"{layout}:{out}") for layout, outs in self.outputs.items()
                     for out in outs]
            if not pairs:  # the format writes nothing (test_outputs_cover_what_the_format_writes holds it to that)
                pairs = [pytest.param(None, None, id="reads-only",
                                      marks=pytest.mark.skip(reason=f"{self.format_name} writes nothing"))]
            metafunc.parametrize("layout,output", pairs)

    @pytest.fixture
    def sample(self, request: Any, tmp_path_factory: Any) -> Path:
        name = request.param
        if not name.startswith("made:"):
            return CORPUS / name
        cache = (type(self).__name__, name)
        if cache not in _made:
            directory = tmp_path_factory.mktemp(f"{self.format_name}-samples")
            _made[cache] = str(self.make_sample(name[len("made:"):], directory))
        return Path(_made[cache])

    def _write(self, layout: str, output: str, directory: Path, **how: Any) -> tuple[Any, list[Row], str]:
        rows, options = self.rows(layout, output)
        path = str(directory / output)
        args: dict[str, Any] = {"force": False, "verify": True, "inputs": [], "progress": None, "jobs": None,
                                "link": False, "options": options}
        args.update(how)
        report = self.spec.write(path, rows, layout=layout, **args)
        return report, rows, path

    # -- the reader contract ----------------------------------------------------------------------------
    def test_the_registry_claims_the_sample(self, sample: Path) -> None:
        """sniff, resolve and claim: the path as a user types it is this format's."""
        target = resolve(sample)
        assert target.format == self.format_name
        assert registry.get_format(target.format) is self.spec
        assert self.spec.sniff(str(sample))
        assert registry.resolve_with(self.spec, str(sample)) is not None
        if not sample.is_dir():
            assert claim(str(sample)) == target

    def test_metadata_equals_the_independent_reader(self, sample: Path) -> None:
        expected = self.expected(sample)
        with formats.open_checkpoint(sample) as ckpt:
            assert ckpt.format in layouts_of(self.spec)
            assert sorted(ckpt) == sorted(expected)
            for key, want in expected.items():
                entry = ckpt[key]
                assert tuple(entry.shape) == want.shape, key
                assert dtype_matches(entry.dtype, want.dtype), (key, entry.dtype, want.dtype)

    def test_values_equal_the_independent_reader(self, sample: Path) -> None:
        expected = self.expected(sample)
        with formats.open_checkpoint(sample) as ckpt:
            for key, want in expected.items():
                if want.sha256 is None:
                    continue  # DT_VARIANT: TensorFlow itself returns no value
                value = ckpt[key].read()
                # manifest_more digests scalar strings as numpy holds them (trailing NULs dropped)
                stripped = np.array([x.rstrip(b"\0") for x in value.reshape(-1)], dtype=object) \
                    if ckpt[key].dtype == "string" else value
                assert want.sha256 in (digest(value), digest(stripped)), key

    def _values(self, sample: Path) -> Any:
        expected = self.expected(sample)
        with formats.open_checkpoint(sample) as ckpt:
            for key, entry in ckpt.items():
                if key in expected and expected[key].sha256 is None:
                    continue
                yield key, entry, entry.read()

    def test_iter_chunks_equal_the_whole(self, sample: Path) -> None:
        for key, entry, whole in self._values(sample):
            chunks = list(entry.iter_chunks(7))
            flat = np.concatenate(chunks) if chunks else whole.reshape(-1)[:0]
            assert same(flat, whole.reshape(-1)), key
            assert all(c.size <= 7 for c in chunks), key

    def test_byte_chunks_are_the_canonical_bytes(self, sample: Path) -> None:
        for key, entry, whole in self._values(sample):
            if whole.dtype == object:
                continue  # strings have no canonical bytes (elements() is their stream)
            chunks = [bytes(c) for c in entry.byte_chunks(5)]
            assert all(len(c) <= 5 for c in chunks), key
            assert b"".join(chunks) == np.ascontiguousarray(whole).astype(whole.dtype.newbyteorder("<")).tobytes(), key

    def test_read_slice_equals_the_whole(self, sample: Path) -> None:
        for key, entry, whole in self._values(sample):
            assert same(entry.read_slice(None), whole), key
            if whole.ndim:
                assert same(entry.read_slice((slice(0, 1),)), whole[0:1]), key
                assert same(entry.read_slice((slice(None, None, -1),)), whole[::-1]), key

    def test_no_problems_in_a_good_file(self, sample: Path) -> None:
        with formats.open_checkpoint(sample) as ckpt:
            assert ckpt.problems() == []
            for entry in ckpt.values():
                assert entry.problem() is None, entry.key
                entry.check()

    def test_names_and_roles_are_consistent(self, sample: Path) -> None:
        roles = {r.value for r in Role}
        with formats.open_checkpoint(sample) as ckpt:
            for key, entry in ckpt.items():
                assert str(entry.role) in roles, (key, entry.role)
                assert isinstance(entry.name, str) and entry.name, key
                if entry.role == Role.SLOT:
                    assert entry.slot_of in ckpt, (key, entry.slot_of)
                    assert entry.slot_name, key
                else:
                    assert entry.slot_of is None, key

    def test_files_are_the_checkpoints_files(self, sample: Path) -> None:
        """``Checkpoint.files`` are existing files (what the output guard protects); every entry's ``files``
        are among them."""
        with formats.open_checkpoint(sample) as ckpt:
            files = ckpt.files
            assert files and all(isinstance(f, str) and os.path.isfile(f) for f in files), files
            whole = {os.path.realpath(f) for f in files}
            for entry in ckpt.values():
                assert {os.path.realpath(f) for f in entry.files} <= whole, (entry.key, entry.files)

    # -- the writer contract ------------------------------------------------------------------------------
    def test_outputs_cover_what_the_format_writes(self) -> None:
        """The subclass writes every layout the format declares (``writes``), and nothing else."""
        assert set(self.outputs) == set(capability(self.spec, "writes"))  # type: ignore[arg-type]
        for layout in self.outputs:
            assert registry.writer_of(layout) is self.spec

    def test_written_output_reopens_with_the_rows(self, layout: str, output: str, tmp_path: Path) -> None:
        """(a) keys, shapes, dtypes and values of the rows, through the registry."""
        _, rows, path = self._write(layout, output, tmp_path)
        assert resolve(path).format in {s.name for s in registry.builtin_formats()}
        with formats.open_checkpoint(path) as ckpt:
            assert ckpt.format == self.reads_back_as(layout, output)
            assert sorted(set(ckpt) - self.extra_keys(layout)) == sorted(r.key for r in rows)
            for row in rows:
                entry = ckpt[row.key]
                assert (tuple(entry.shape), entry.dtype) == (tuple(row.shape), row.dtype), row.key
                assert same(entry.read(), value_of(row.value)), row.key
            assert ckpt.problems() == []

    def test_existing_output_needs_force(self, layout: str, output: str, tmp_path: Path) -> None:
        """(b) ``force=False`` over an existing output raises OutputExistsError; ``force=True`` replaces it."""
        self._write(layout, output, tmp_path)
        with pytest.raises(OutputExistsError):
            self._write(layout, output, tmp_path)
        assert self._write(layout, output, tmp_path, force=True)[0].tensors

    def test_an_input_is_never_replaced(self, layout: str, output: str, tmp_path: Path) -> None:
        """(c) an output named among ``inputs`` (as a path or as the opened checkpoint) is refused, ``force``
        or not, and left as it was."""
        _, _, path = self._write(layout, output, tmp_path)
        before = {f: Path(f).read_bytes() for f in sorted(tmp_path.rglob("*")) if f.is_file()}
        with formats.open_checkpoint(path) as ckpt:
            for given in (path, ckpt):
                with pytest.raises(OutputIsInputError):
                    self._write(layout, output, tmp_path, force=True, inputs=[given])
        assert {f: Path(f).read_bytes() for f in sorted(tmp_path.rglob("*")) if f.is_file()} == before

    def test_progress_follows_the_writing(self, layout: str, output: str, tmp_path: Path) -> None:
        """(d) ``progress(bytes, tensors)`` is called with increasing counts, ending at the report's."""
        seen: list[tuple[int, int]] = []
        report, _, _ = self._write(layout, output, tmp_path, progress=lambda b, t: seen.append((b, t)))
        assert seen, "progress was never called"
        assert all(a <= b for a, b in zip(seen, seen[1:])), seen
        assert seen[-1] == (report.bytes, report.tensors), (seen[-3:], report.bytes, report.tensors)

    def test_verify_is_reported(self, layout: str, output: str, tmp_path: Path) -> None:
        """(e) ``verify=True`` reads the output back and says so; ``verify=False`` does not claim it."""
        report, rows, _ = self._write(layout, output, tmp_path)
        assert report.verified
        assert report.tensors == len(rows) + len(self.extra_keys(layout))
        unverified, _, _ = self._write(layout, "again-" + output, tmp_path, verify=False)
        assert not unverified.verified
