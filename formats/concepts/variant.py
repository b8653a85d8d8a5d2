"""What a DT_VARIANT tensor holds (a dataset iterator's state, ...), from its serialized elements.

Each element of a variant tensor in a bundle is a serialized ``VariantTensorDataProto``
(``type_name``, ``metadata``, nested ``tensors``). TensorFlow's Python reader cannot
return these at all; :func:`describe_variant` names them.
"""
from __future__ import annotations

from formats.core.model import TensorEntry
from formats.core.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["VariantElement", "VariantSummary", "describe_variant", "describe_variant_values"]

UNDECODABLE = "<undecodable>"


@record(frozen=True)
class VariantElement:
    """One element: its ``type_name`` (``tensorflow::Iterator``), serialized size, metadata size, nested tensors."""

    type_name: str
    nbytes: int
    metadata_bytes: int
    tensors: int


@record(frozen=True)
class VariantSummary:
    """All elements of a variant tensor."""

    elements: tuple[VariantElement, ...]

    @property
    def type_names(self) -> list[str]:
        """Distinct type names, in order of first appearance."""
        return list(dict.fromkeys(e.type_name for e in self.elements))

    @property
    def nbytes(self) -> int:
        """Total serialized bytes of the elements."""
        return sum(e.nbytes for e in self.elements)

    def text(self) -> str:
        """``5 x tensorflow::Iterator, 1015 B serialized`` (or ``empty``)."""
        if not self.elements:
            return "empty"
        kinds = ", ".join(f"{sum(e.type_name == t for e in self.elements)} x {t}" for t in self.type_names)
        return f"{kinds}, {self.nbytes} B serialized"

    def to_json(self) -> dict[str, object]:
        """``{"type_names": [...], "elements": n, "nbytes": n}``."""
        return {"type_names": self.type_names, "elements": len(self.elements), "nbytes": self.nbytes}


def describe_variant_values(values: Iterable[bytes]) -> VariantSummary:
    """Decode serialized ``VariantTensorDataProto`` elements (undecodable ones named ``<undecodable>``)."""
    from formats.concepts.proto.messages import VARIANT_TENSOR_DATA, decode
    from formats.io.protowire import WireError

    out = []
    for raw in values:
        try:
            msg = decode(VARIANT_TENSOR_DATA, bytes(raw))
        except WireError:
            out.append(VariantElement(UNDECODABLE, len(raw), 0, 0))
            continue
        out.append(VariantElement(msg["type_name"], len(raw), len(msg["metadata"]), len(msg["tensors"])))
    return VariantSummary(tuple(out))


def describe_variant(entry: TensorEntry) -> VariantSummary:
    """Read a variant entry (checksums checked) and describe its elements (a bundle's read without numpy)."""
    return describe_variant_values(entry.elements())
