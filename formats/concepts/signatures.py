"""Serving signatures and tensor specs: what a SavedModel's functions take and return.

A :class:`Signature` is one ``SignatureDef`` of a MetaGraph (``serving_default``: inputs and
outputs by name, each a :class:`TensorSpec`); formats put them, JSON-ready, in
``Checkpoint.metadata["signatures"]`` (see :meth:`Signature.to_json`), and the listing and the
tree show them with :func:`signature_text`. Unknown dimensions are ``-1`` (as the protos store
them) and shown as ``?``; an unknown rank is a ``None`` shape.
"""
from __future__ import annotations

from formats.core.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any


__all__ = ["TensorSpec", "Signature", "spec_text", "specs_text", "signature_text"]


@record(frozen=True)
class TensorSpec:
    """One input or output: its ``name``, ``dtype`` name and ``shape`` (None: unknown rank); ``tensor``
    is the graph tensor behind it when the SavedModel names one (``serving_default_x:0``)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None
    tensor: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{"name", "dtype", "shape"[, "tensor"]}``."""
        doc: dict[str, Any] = {"name": self.name, "dtype": self.dtype,
                               "shape": None if self.shape is None else list(self.shape)}
        if self.tensor:
            doc["tensor"] = self.tensor
        return doc


@record(frozen=True)
class Signature:
    """A serving signature: ``name`` (``serving_default``), the ``method`` it serves
    (``tensorflow/serving/predict``), the MetaGraph ``tags`` and its inputs and outputs by name."""

    name: str
    method: str = ""
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    tags: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """``{"name", "method", "tags", "inputs": [...], "outputs": [...]}``."""
        return {"name": self.name, "method": self.method, "tags": list(self.tags),
                "inputs": [s.to_json() for s in self.inputs], "outputs": [s.to_json() for s in self.outputs]}


def _dims(shape: Sequence[int] | None) -> str:
    if shape is None:
        return "[...]"
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def spec_text(spec: TensorSpec | Mapping[str, Any]) -> str:
    """``x: float32 [?, 4]`` (a spec without a name is just ``float32 [?, 4]``)."""
    if isinstance(spec, TensorSpec):
        spec = spec.to_json()
    name, dtype = spec.get("name") or "", spec.get("dtype") or "?"
    text = f"{dtype} {_dims(spec.get('shape'))}"
    return f"{name}: {text}" if name else text


def specs_text(specs: Iterable[TensorSpec | Mapping[str, Any]]) -> str:
    """Several specs, comma-separated, in parentheses."""
    return "(" + ", ".join(spec_text(s) for s in specs) + ")"


def signature_text(sig: Signature | Mapping[str, Any]) -> str:
    """``(x: float32 [?, 4]) -> (output_0: float32 [?, 7])`` plus the method when it is not predict."""
    doc = sig.to_json() if isinstance(sig, Signature) else sig
    text = f"{specs_text(doc.get('inputs', ()))} -> {specs_text(doc.get('outputs', ()))}"
    method = doc.get("method") or ""
    if method and method != "tensorflow/serving/predict":
        text += f" [{method.rsplit('/', 1)[-1]}]"
    return text
