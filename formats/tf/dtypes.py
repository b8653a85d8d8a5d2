"""``tf.dtypes``: :class:`DType` objects as ``get_variable_to_dtype_map()`` returns them.

A :class:`DType` is equal to another with the same DataType number, to its name
(``formats.tf.float32 == "float32"``), to the number and to the numpy type
(``== numpy.float32``), like TensorFlow's; it hashes like TensorFlow's (the number). The table
behind it is :mod:`formats.core.dtypes`; numpy and ml_dtypes are imported only when
``as_numpy_dtype``, ``min`` or ``max`` is asked for.
"""
from __future__ import annotations

import builtins

from formats.core import dtypes as table
from formats.tf._missing import module_getattr

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DType", "as_dtype", "datatype_name", "CONSTANTS", "float32", "float64", "int32", "uint8", "int16",
           "int8", "string", "complex64", "int64", "bool", "qint8", "quint8", "qint32", "bfloat16", "qint16",
           "quint16", "uint16", "complex128", "float16", "resource", "variant", "uint32", "uint64",
           "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz", "int4",
           "uint4", "int2", "uint2", "float4_e2m1fn", "half", "double"]

_FLOATING = {"float16", "float32", "float64", "bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz",
             "float8_e4m3b11fnuz", "float8_e5m2fnuz", "float4_e2m1fn"}
_QUANTIZED = {"qint8": "i1", "quint8": "u1", "qint16": "<i2", "quint16": "<u2", "qint32": "<i4"}
_NO_NUMPY = {"resource", "variant"}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64"}
_REAL = {"complex64": "float32", "complex128": "float64"}
_DT_NAMES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}


class DType:
    """A TensorFlow dtype: ``name``, ``as_datatype_enum``, ``as_numpy_dtype`` and the ``is_*`` tests."""

    __slots__ = ("_spec",)

    def __init__(self, type_enum: int) -> None:
        spec = table.by_enum(type_enum)
        if spec is None:
            raise TypeError(f"Did not recognize type_enum {type_enum}")
        self._spec = spec

    @property
    def name(self) -> str:
        """``float32``, ``bfloat16``, ``string``, ..."""
        return self._spec.name

    @property
    def as_datatype_enum(self) -> int:
        """The ``DataType`` number (``1`` for float32)."""
        return self._spec.enum

    @property
    def base_dtype(self) -> DType:
        """The dtype without ``_ref`` (itself for every dtype a checkpoint stores)."""
        return DType(self._spec.enum - 100) if self._spec.enum > 100 else self

    @property
    def real_dtype(self) -> DType:
        """float32 for complex64, float64 for complex128, else itself."""
        return as_dtype(_REAL[self.name]) if self.name in _REAL else self

    @property
    def as_numpy_dtype(self) -> Any:
        """The numpy scalar type (``numpy.float32``, ``ml_dtypes.bfloat16``, ``object`` for strings)."""
        import numpy as np

        name = self.base_dtype.name
        if name in _NO_NUMPY:
            raise KeyError(self.base_dtype._spec.enum)
        if name == "string":
            return object
        if name in _QUANTIZED:
            return np.dtype([(name, _QUANTIZED[name])])
        return table.by_name(name).numpy().type

    @property
    def is_numpy_compatible(self) -> builtins.bool:
        """False for resource and variant."""
        return self.base_dtype.name not in _NO_NUMPY

    @property
    def is_floating(self) -> builtins.bool:
        """float16/32/64, bfloat16 and the float8 types."""
        return self.base_dtype.name in _FLOATING

    @property
    def is_integer(self) -> builtins.bool:
        """Signed and unsigned integers (not bool, not the quantized types)."""
        name = self.base_dtype.name
        return name.startswith(("int", "uint"))

    @property
    def is_unsigned(self) -> builtins.bool:
        """uint8..uint64 (and uint4/uint2)."""
        return self.base_dtype.name.startswith("uint")

    @property
    def is_complex(self) -> builtins.bool:
        """complex64 and complex128."""
        return self.base_dtype.name in _REAL

    @property
    def is_bool(self) -> builtins.bool:
        """bool."""
        return self.base_dtype.name == "bool"

    @property
    def is_quantized(self) -> builtins.bool:
        """qint8, quint8, qint16, quint16, qint32."""
        return self.base_dtype.name in _QUANTIZED

    @property
    def size(self) -> int:
        """Bytes per element; 0 for string, variant and resource."""
        return self._spec.itemsize

    @property
    def min(self) -> Any:
        """The smallest value (numpy's ``finfo``/``iinfo``); TypeError for bool, complex, strings."""
        return self._limit("min")

    @property
    def max(self) -> Any:
        """The largest value; TypeError for bool, complex, strings."""
        return self._limit("max")

    def _limit(self, which: str) -> Any:
        if not (self.is_floating or self.is_integer):
            raise TypeError(f"Cannot find {'minimum' if which == 'min' else 'maximum'} value of {self}.")
        import numpy as np

        info: Any = np.iinfo if self.is_integer else np.finfo
        try:
            limit = getattr(info(self.as_numpy_dtype), which)
        except ValueError:  # bfloat16, float8, int4: ml_dtypes has its own finfo/iinfo
            import ml_dtypes

            info = ml_dtypes.iinfo if self.is_integer else ml_dtypes.finfo
            limit = getattr(info(self.as_numpy_dtype), which)
        return int(limit) if self.is_integer else limit

    def __eq__(self, other: object) -> builtins.bool:
        if other is None:
            return False
        if not isinstance(other, DType):
            try:
                other = as_dtype(other)
            except TypeError:
                return False
        return self._spec.enum == other._spec.enum

    def __ne__(self, other: object) -> builtins.bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._spec.enum

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: {self.name!r}>"

    def __reduce__(self) -> Any:
        return as_dtype, (self.name,)


def as_dtype(type_value: Any) -> DType:
    """``tf.as_dtype``: a :class:`DType` from a DType, a DataType number, a name (``"float32"``,
    ``"float"``, ``"half"``), or a numpy dtype/type; TypeError for anything else."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        return DType(type_value)
    if isinstance(type_value, str):
        name = _ALIASES.get(type_value, type_value)
        ref = name.endswith("_ref")
        try:
            spec = table.by_name(name[:-4] if ref else name)
        except ValueError:
            raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.") from None
        return DType(spec.enum + (100 if ref else 0))
    return _from_numpy(type_value)


def _from_numpy(type_value: Any) -> DType:
    try:
        import numpy as np

        dt = np.dtype(type_value)
    except (TypeError, ValueError, ImportError):
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.") from None
    if dt.names and len(dt.names) == 1 and dt.names[0] in _QUANTIZED:
        return as_dtype(dt.names[0])
    try:
        return DType(table.from_numpy(dt).enum)
    except ValueError:
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.") from None


def datatype_name(dtype: DType) -> str:
    """TensorFlow's ``DataType_Name``: ``DT_FLOAT``, ``DT_HALF``, ``DT_BFLOAT16``, ``DT_STRING``..."""
    base = dtype.base_dtype.name
    name = _DT_NAMES.get(base, "DT_" + base.upper())
    return name + "_REF" if dtype.as_datatype_enum > 100 else name


# The dtypes by name, as ``tf.float32`` etc. (``half`` and ``double`` are TensorFlow's aliases). ``bool``
# shadows the builtin from here on, as in TensorFlow: code below this line says ``builtins.bool``.
float32 = DType(1)
float64 = DType(2)
int32 = DType(3)
uint8 = DType(4)
int16 = DType(5)
int8 = DType(6)
string = DType(7)
complex64 = DType(8)
int64 = DType(9)
bool = DType(10)
qint8 = DType(11)
quint8 = DType(12)
qint32 = DType(13)
bfloat16 = DType(14)
qint16 = DType(15)
quint16 = DType(16)
uint16 = DType(17)
complex128 = DType(18)
float16 = DType(19)
resource = DType(20)
variant = DType(21)
uint32 = DType(22)
uint64 = DType(23)
float8_e5m2 = DType(24)
float8_e4m3fn = DType(25)
float8_e4m3fnuz = DType(26)
float8_e4m3b11fnuz = DType(27)
float8_e5m2fnuz = DType(28)
int4 = DType(29)
uint4 = DType(30)
int2 = DType(31)
uint2 = DType(32)
float4_e2m1fn = DType(33)
half = float16
double = float64

CONSTANTS: dict[str, DType] = {name: globals()[name] for name in (
    "float32", "float64", "int32", "uint8", "int16", "int8", "string", "complex64", "int64", "bool", "qint8",
    "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16", "complex128", "float16", "resource",
    "variant", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
    "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2", "float4_e2m1fn", "half", "double",
)}
"""Every dtype constant of this module by name."""

__getattr__ = module_getattr("tf.dtypes")
