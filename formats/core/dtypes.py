"""One table: TensorFlow DataType number <-> TensorFlow dtype name <-> numpy / ml_dtypes.

numpy and ml_dtypes are imported only when a numpy dtype is actually asked for,
so listing a checkpoint never pays for them.
"""
from __future__ import annotations

from formats.core.value_tuples import ValueTuple

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DType", "by_enum", "by_name", "name_of", "from_numpy", "STRING", "VARIANT", "REFERENCE"]


class DType(ValueTuple):
    """A TensorFlow dtype: its DataType enum, name, storage width and numpy counterpart."""

    enum: int
    name: str
    itemsize: int          # bytes per element in a bundle; 0 for variable-width (string, variant)
    numpy_name: str | None  # numpy or ml_dtypes name; None when there is no array counterpart
    hdf5_ok: bool = True

    @property
    def fixed_width(self) -> bool:
        """True for dtypes stored as raw row-major bytes."""
        return self.itemsize > 0

    def numpy(self) -> Any:
        """The numpy dtype (little-endian) for this TensorFlow dtype."""
        return _numpy_dtype(self.numpy_name, self.name)


STRING = 7
VARIANT = 21
REFERENCE = 100
"""A DataType number above this is the reference (``_ref``) variant of the dtype ``number - 100``."""

_TABLE = [
    DType(1, "float32", 4, "float32"),
    DType(2, "float64", 8, "float64"),
    DType(3, "int32", 4, "int32"),
    DType(4, "uint8", 1, "uint8"),
    DType(5, "int16", 2, "int16"),
    DType(6, "int8", 1, "int8"),
    DType(7, "string", 0, "object"),
    DType(8, "complex64", 8, "complex64"),
    DType(9, "int64", 8, "int64"),
    DType(10, "bool", 1, "bool"),
    DType(11, "qint8", 1, "int8"),
    DType(12, "quint8", 1, "uint8"),
    DType(13, "qint32", 4, "int32"),
    DType(14, "bfloat16", 2, "bfloat16"),
    DType(15, "qint16", 2, "int16"),
    DType(16, "quint16", 2, "uint16"),
    DType(17, "uint16", 2, "uint16"),
    DType(18, "complex128", 16, "complex128"),
    DType(19, "float16", 2, "float16"),
    DType(20, "resource", 0, None),
    DType(21, "variant", 0, "object"),
    DType(22, "uint32", 4, "uint32"),
    DType(23, "uint64", 8, "uint64"),
    DType(24, "float8_e5m2", 1, "float8_e5m2"),
    DType(25, "float8_e4m3fn", 1, "float8_e4m3fn"),
    DType(26, "float8_e4m3fnuz", 1, "float8_e4m3fnuz"),
    DType(27, "float8_e4m3b11fnuz", 1, "float8_e4m3b11fnuz"),
    DType(28, "float8_e5m2fnuz", 1, "float8_e5m2fnuz"),
    DType(29, "int4", 1, "int4"),
    DType(30, "uint4", 1, "uint4"),
    DType(31, "int2", 1, "int2"),
    DType(32, "uint2", 1, "uint2"),
    DType(33, "float4_e2m1fn", 1, "float4_e2m1fn"),
]
_BY_ENUM = {d.enum: d for d in _TABLE}
_BY_NAME = {d.name: d for d in _TABLE}
_ML_DTYPES = {"bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
              "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2", "float4_e2m1fn"}


def by_enum(value: int) -> DType | None:
    """The dtype for a DataType number (``_REF`` variants, +100, map to their base), or None."""
    if value > REFERENCE:
        base = _BY_ENUM.get(value - REFERENCE)
        return None if base is None else DType(value, base.name + "_ref", base.itemsize, base.numpy_name)
    return _BY_ENUM.get(value)


def name_of(enum: int) -> str:
    """TensorFlow's name for a DataType number, or ``unknown(N)``."""
    dt = by_enum(enum)
    return dt.name if dt is not None else f"unknown({enum})"


def by_name(name: str) -> DType:
    """The dtype for a TensorFlow dtype name such as ``float32`` or ``bfloat16``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown TensorFlow dtype name {name!r}") from None


def _numpy_dtype(numpy_name: str | None, tf_name: str) -> Any:
    import numpy as np

    if numpy_name is None:
        raise ValueError(f"dtype {tf_name} has no numpy counterpart")
    if numpy_name in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, numpy_name))
    return np.dtype(numpy_name).newbyteorder("<") if numpy_name not in ("object", "bool") else np.dtype(numpy_name)


def from_numpy(dtype: Any) -> DType:
    """The TensorFlow dtype for a numpy (or ml_dtypes) dtype; bytes/str/object arrays map to string."""
    import numpy as np

    dt = np.dtype(dtype)
    if dt.kind in "OSU":
        return _BY_ENUM[STRING]
    name = dt.name
    if name in _BY_NAME and _BY_NAME[name].numpy_name == name:
        return _BY_NAME[name]
    raise ValueError(f"numpy dtype {dt} has no TensorFlow counterpart")
