"""Issue 38 (start-up): ``.npy`` headers written and read back without numpy, against numpy's own.

- :func:`formats.io.npy_output.npy_header` gives, byte for byte, what ``numpy.lib.format.write_array_header_1_0``
  writes, for every descr ckpt writes and shapes of every rank;
- the dtype policy worked out from names (:data:`~formats.io.npy_output.DESCRS`) is the one numpy and ml_dtypes
  give (each TensorFlow dtype stored as itself, or as the unsigned integer of its width);
- the reader's way round :mod:`ast` (``_plain_fields``) reads exactly what ``ast.literal_eval`` reads from a header
  of numpy's own form, and leaves every other text to it;
- an npz written with a bfloat16 tensor, a string tensor and a pickled one loads in numpy as before.
"""
from __future__ import annotations

import ast
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.core.dtypes import by_name
from formats.io import npy_header as reader
from formats.io.npy_header import DESCRS, plain_descr, read_npy_header
from formats.io.npy_output import npy_header, stored_dtype, stored_name, stores_bits

FIXED = [name for name in ("float32", "float64", "int32", "uint8", "int16", "int8", "complex64", "int64", "bool",
                           "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16", "complex128",
                           "float16", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "int4", "uint4",
                           "float32_ref", "bfloat16_ref")]


def _numpy_header(descr: str, shape: tuple[int, ...], fortran: bool = False) -> bytes:
    made = io.BytesIO()
    np.lib.format.write_array_header_1_0(made, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return made.getvalue()


SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 3, 5, 7), (1 << 40, 3), (10 ** 18,), tuple(range(1, 65)), (1,) * 64]


@pytest.mark.parametrize("descr", [*DESCRS.values(), "|S1", "|S3000", "<U1", "<U123456"])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(len(s)) + "d" + str(i) for i, s in enumerate(SHAPES)])
def test_a_header_is_numpys_own(descr: str, shape: tuple[int, ...]) -> None:
    assert npy_header(descr, shape) == _numpy_header(descr, shape)


@given(shape=st.lists(st.integers(0, (1 << 63) - 1), max_size=64).map(tuple),
       descr=st.sampled_from([*DESCRS.values(), "|S9", "<U40"]))
@settings(max_examples=300, deadline=None)
def test_any_shapes_header_is_numpys_own(shape: tuple[int, ...], descr: str) -> None:
    assert npy_header(descr, shape) == _numpy_header(descr, shape)


@pytest.mark.parametrize("dtype", FIXED)
def test_the_policy_from_names_is_numpys(dtype: str) -> None:
    """Stored as numpy's own dtype when numpy has it (``numpy()``'s type from numpy), else as the unsigned integer of
    its width; the descr, the name and the itemsize numpy gives that dtype."""
    dt = by_name(dtype.removesuffix("_ref"))
    native = dt.numpy()
    want = native if type(native.type).__module__ == "builtins" and native.type.__module__ == "numpy" \
        else np.dtype(f"<u{dt.itemsize}")
    assert stored_dtype(dtype) == want and stored_name(dtype) == want.name
    assert DESCRS[want.name] == np.lib.format.dtype_to_descr(want)
    assert stores_bits(dtype) == (want.name != native.name)


PLAIN = [*DESCRS.values(), "|S1", "|S5", "|S300", "<U1", "<U7", "|S2147483647", "<U536870911"]
OTHER = [">f4", "=f4", "f4", "<i", "|S0", "<U0", "|S05", ">U3", "|O", "<M8[s]", "|V4", "S5", [("a", "<f4")],
         [("a", "<f4"), ("b", "|O")]]


@pytest.mark.parametrize("descr", PLAIN + OTHER, ids=[str(d) for d in PLAIN + OTHER])
def test_a_plain_descrs_facts_are_numpys(descr) -> None:
    """What a header of a plain descr says without numpy - its kind, item size, byte order, objects, and the
    TensorFlow dtype the npz reader gives it - is what numpy's dtype of it says; any other descr is numpy's to read."""
    from formats.core.dtypes import from_numpy
    from formats.npz.reader import _Skipped, _tf_dtype

    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': (2, 3), }}"
    raw = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin-1")
    header = read_npy_header(io.BytesIO(raw).read)
    dt = np.dtype(descr) if isinstance(descr, str) else np.lib.format.descr_to_dtype(descr)
    assert (plain_descr(descr) is not None) == (descr in PLAIN)
    assert header.dtype == dt and (header.kind, header.nbytes, header.big_endian, header.pickled) == \
        (dt.kind, 6 * dt.itemsize, dt.byteorder == ">", dt.hasobject)
    try:
        want = from_numpy(dt.newbyteorder("<") if dt.byteorder == ">" else dt).name
    except (ValueError, TypeError):
        want = None
    try:
        got = _tf_dtype(header, None)[0]
    except _Skipped:
        got = None
    assert got == (None if dt.names is not None or dt.subdtype is not None or dt.hasobject else want)


def _ast_fields(text: str) -> tuple | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError):
        return None
    if not isinstance(value, dict) or set(value) != {"descr", "fortran_order", "shape"}:
        return None
    return value["descr"], value["shape"], value["fortran_order"]


@pytest.mark.parametrize("descr", ["<f4", "|S7", "<U12", ">i8", "|b1", "<c16"])
@pytest.mark.parametrize("shape", SHAPES[:8], ids=[f"s{i}" for i in range(8)])
@pytest.mark.parametrize("fortran", [False, True])
def test_numpys_own_headers_are_read_without_ast(descr: str, shape: tuple[int, ...], fortran: bool) -> None:
    text = _numpy_header(descr, shape, fortran)[10:].decode("latin-1")
    assert reader._plain_fields(text) == _ast_fields(text) == (descr, shape, fortran)


def _outcome(text: str, fast: bool) -> object:
    """What the header reader makes of ``text``: its fields, or its error's words; ``fast`` False: through
    ``ast.literal_eval`` alone (the fast reading switched off)."""
    saved = reader._plain_fields
    if not fast:
        reader._plain_fields = lambda text: None  # type: ignore[assignment]
    try:
        return reader._fields(text.encode("latin-1"), 1)
    except reader.NpyError as exc:
        return str(exc)
    finally:
        reader._plain_fields = saved


PIECES = ["{", "}", "'descr': ", "'<f4'", "'|S5'", "'<U'", "'fortran_order': ", "False", "True", "0", "'shape': ",
          "(", ")", ",", ", ", " ", "2", "05", "0", "-1", "3", "\n", "[('a', '<f4')]", "'x'", "\\'", "\u00b2", "1e3",
          "9" * 19, "1" + "0" * 70]


@given(st.lists(st.sampled_from(PIECES), max_size=30))
@settings(max_examples=3000, deadline=None)
def test_any_text_reads_as_ast_reads_it(pieces: list[str]) -> None:
    """A text of header pieces in any order reads as ``ast.literal_eval`` alone reads it: the same fields or the
    same error (a header of numpy's form with any shape taken without ast, any other text left to it)."""
    text = "".join(pieces)
    assert _outcome(text, True) == _outcome(text, False)


@given(shape=st.lists(st.sampled_from(["0", "1", "12", "007", "9" * 19, "1" + "0" * 20]), max_size=65),
       comma=st.booleans(), spaces=st.sampled_from(["", " ", "   \n", "\n"]), fortran=st.booleans(),
       descr=st.sampled_from(["<f4", "|S5", "", "<f'4", "a b"]))
@settings(max_examples=1000, deadline=None)
def test_numpy_shaped_texts_read_as_ast_reads_them(shape: list[str], comma: bool, spaces: str, fortran: bool,
                                                     descr: str) -> None:
    inner = ", ".join(shape) + ("," if comma else "")
    text = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({inner}), }}{spaces}"
    assert _outcome(text, True) == _outcome(text, False)


def test_an_npz_of_bits_strings_and_objects_loads_in_numpy(tmp_path) -> None:
    import ml_dtypes

    from formats.npz.writer import write_npz

    bf16 = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    items = [("w", np.arange(12, dtype="<f4").reshape(3, 4)), ("b", bf16),
             ("s", np.array([b"ab", b"c"], dtype=object)), ("z", np.array([b"x\x00"], dtype=object))]
    out = tmp_path / "x.npz"
    report = write_npz(out, items, allow_pickle=True)
    assert report.verified and [c.stored_dtype for c in report.contents] == ["float32", "uint16", "|S2", "object"]
    with np.load(out, allow_pickle=True) as loaded:
        assert np.array_equal(loaded["w"], items[0][1])
        assert loaded["b"].dtype == np.uint16 and np.array_equal(loaded["b"].view(ml_dtypes.bfloat16), bf16)
        assert loaded["s"].tolist() == [b"ab", b"c"] and loaded["z"].tolist() == [b"x\x00"]


@pytest.mark.parametrize("descr", ["|S2147483648", "<U536870912", "|S1000000000000", "<U" + "9" * 30])
def test_a_descr_too_wide_to_be_plain_is_numpys_to_read(descr: str) -> None:
    """Bytes or text wider than a C int of bytes are not plain: numpy is asked as the header is read, and what it
    says goes (numpy 2 refuses them: an error naming the descr; numpy 1.24 takes some)."""
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': (2,), }}"
    raw = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin-1")
    assert plain_descr(descr) is None
    try:
        want = np.dtype(descr)
    except (TypeError, ValueError):
        with pytest.raises(reader.NpyError, match="is not a dtype"):
            read_npy_header(io.BytesIO(raw).read)
        return
    assert read_npy_header(io.BytesIO(raw).read).dtype == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40).filter(lambda b: not b.endswith(b"\x00")), max_size=60),
       st.sampled_from(["string", "variant"]), st.integers(1, 64))
def test_a_string_member_is_numpys_fixed_width_array(values: list[bytes], dtype: str, chunk: int) -> None:
    """A string or variant tensor held as fixed-width bytes is, byte for byte, what numpy writes of the ``S<n>``
    array of its elements (each padded with NUL bytes to the longest), whatever the chunk it is written by."""
    from formats.core.model import TensorEntry
    from formats.io.npy_output import _write_bytes

    class Strings(TensorEntry):
        def elements(self) -> list[bytes]:
            return list(values)

    out = io.BytesIO()
    written = _write_bytes(out, "k", dtype, Strings("k", (len(values),), dtype, 0), False, chunk)
    width = max((len(v) for v in values), default=1) or 1
    expected = io.BytesIO()
    np.lib.format.write_array(expected, np.array(values, dtype=f"S{width}").reshape(len(values)))
    assert out.getvalue() == expected.getvalue()
    assert (written.stored, written.nbytes) == (f"|S{width}", width * len(values))
