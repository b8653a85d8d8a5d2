"""Writers for Keras weight files: the Keras 2 (tf-keras) ``save_weights`` ``.h5`` layout and the
Keras 3 ``.weights.h5`` layout.

- Keras 2: root attributes ``layer_names``, ``backend``, ``keras_version``; one group per layer
  (created in sorted name order, as tf-keras does) with a ``weight_names`` attribute, and each weight
  as a dataset at ``<layer>/<weight name>`` (``dense/kernel:0`` makes the subgroup ``dense``).
  List attributes larger than 64512 bytes are split into ``name0``, ``name1``, ... exactly as
  ``tf_keras/src/saving/legacy/hdf5_format.py`` splits them.
- Keras 3: ``<object path>/vars/<i>`` datasets; each ``vars`` group carries the object's ``name``
  attribute; bfloat16 is stored as Keras stores it (2-byte opaque values) with the attribute
  ``dtype="bfloat16"``. The same file inside a ``.keras`` archive with ``config.json`` and
  ``metadata.json`` is a whole Keras 3 model (:func:`write_keras3_zip`).

Like every writer (:mod:`formats.io.writing`), the output is guarded against replacing an input,
written under a temporary name next to the output, flushed to disk, read back with
:mod:`formats.keras_h5` and compared with every source, and only then renamed into place.
"""
from __future__ import annotations

import math
import os

from formats.core.names import name_bytes
from formats.core.errors import InvalidOutputError, UnsupportedError, VerificationError
from formats.core.model import Checkpoint
from formats.core.records import field, record
from formats.core.roundtrip import RoundTripReport, compare_checkpoints
from formats.core.sources import CHUNK, Source, describe, fixed_chunks
from formats.io.atomic import atomic_output, refuse_url
from formats.io.writing import Stored, WriteReport, check_roundtrip, guard_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

__all__ = ["Keras2Layer", "Keras3Group", "write_keras2_h5", "write_keras3_h5", "write_keras3_zip", "HDF5_OBJECT_HEADER_LIMIT",
           "save_attribute_list"]

HDF5_OBJECT_HEADER_LIMIT = 64512
"""tf-keras' limit on one attribute's bytes; longer lists are split into numbered chunks."""


@record
class Keras2Layer:
    """One layer group of a Keras 2 weights file: its name and ``(weight name, source)`` in order."""

    name: str
    weights: list[tuple[str, Source]] = field(default_factory=list)


@record
class Keras3Group:
    """One ``vars`` group of a Keras 3 weights file: the object path (``""`` for the model), its
    ``name`` attribute (None for none) and its variables in index order."""

    path: str
    name: str | None = None
    variables: list[Source] = field(default_factory=list)


def save_attribute_list(attrs: Any, name: str, data: list[bytes]) -> None:
    """Store a list attribute the way tf-keras' ``save_attributes_to_hdf5_group`` does."""
    import numpy as np

    bad = [x for x in data if len(x) > HDF5_OBJECT_HEADER_LIMIT]
    if bad:
        raise ValueError(f"attribute {name!r}: an item is longer than {HDF5_OBJECT_HEADER_LIMIT} bytes")
    data_npy = np.asarray(data)
    num_chunks = 1
    chunked = np.array_split(data_npy, num_chunks)
    while any(x.nbytes > HDF5_OBJECT_HEADER_LIMIT for x in chunked):
        num_chunks += 1
        chunked = np.array_split(data_npy, num_chunks)
    if num_chunks > 1:
        for chunk_id, chunk_data in enumerate(chunked):
            attrs[f"{name}{chunk_id}"] = chunk_data
    else:
        attrs[name] = data


class reporting:  # noqa: N801 - used as ``with reporting(progress):``
    """``with reporting(progress):`` - the datasets this module writes inside the block call
    ``progress(bytes_written, tensors_written)`` as their blocks land (the Keras writers' progress, without
    threading a callback through every helper)."""

    _active: list[list[Any]] = []

    def __init__(self, progress: Any) -> None:
        self.state = [progress, 0, 0]

    def __enter__(self) -> None:
        if self.state[0] is not None:
            reporting._active.append(self.state)

    def __exit__(self, *exc: object) -> None:
        if self.state[0] is not None:
            reporting._active.remove(self.state)

    @staticmethod
    def wrote(nbytes: int, tensors: int = 0) -> None:
        """``nbytes`` more bytes (and ``tensors`` more whole tensors) were written."""
        for state in reporting._active[-1:]:
            state[1] += nbytes
            state[2] += tensors
            state[0](state[1], state[2])


def write_keras2_h5(path: str | os.PathLike[str], layers: Sequence[Keras2Layer], *,
                    layer_names: Sequence[str] | None = None, top_level: Sequence[tuple[str, Source]] = (),
                    backend: str = "tensorflow", keras_version: str = "2.21.0", force: bool = False,
                    verify: bool = True, inputs: Iterable[str | Checkpoint] = (), chunk: int = CHUNK) -> WriteReport:
    """Write a Keras 2 ``save_weights`` ``.h5`` file that tf-keras ``load_weights`` reads.

    ``layer_names`` (default: the layers' names) is the ``layer_names`` attribute, in model order; it
    may list layers without weights, which get a group with an empty ``weight_names``. ``top_level``
    fills ``top_level_model_weights`` (weights owned by the model itself).
    """
    out = os.fspath(path)
    names = list(layer_names) if layer_names is not None else [layer.name for layer in layers]
    by_name = {layer.name: layer for layer in layers}
    missing = [layer.name for layer in layers if layer.name not in names]
    if missing or len(by_name) != len(layers) or len(set(names)) != len(names):
        raise ValueError(f"layer names must be unique and listed in layer_names (not listed: {missing})")
    expected: dict[str, Source] = {}
    for layer in layers:
        expected.update(_weights(layer.name, layer.weights))
    expected.update(_weights("top_level_model_weights", list(top_level)))

    def fill(h5: Any) -> None:
        save_attribute_list(h5.attrs, "layer_names", [name_bytes(n) for n in names])
        h5.attrs["backend"] = backend.encode("utf8")
        h5.attrs["keras_version"] = keras_version.encode("utf8")
        for name in sorted(names):
            layer = by_name.get(name, Keras2Layer(name))
            _keras2_group(h5.create_group(name), layer.weights, chunk)
        _keras2_group(h5.create_group("top_level_model_weights"), list(top_level), chunk)

    return _write(out, "keras2-h5", fill, expected, force, verify, inputs, chunk)


def _weights(layer: str, weights: list[tuple[str, Source]]) -> dict[str, Source]:
    found: dict[str, Source] = {}
    for weight, source in weights:
        key = f"{layer}/{weight}"
        if not weight or weight.startswith("/") or "//" in weight or key in found:
            raise ValueError(f"bad or repeated weight name {weight!r} in layer {layer!r}")
        found[key] = source
    return found


def _keras2_group(group: Any, weights: list[tuple[str, Source]], chunk: int) -> None:
    save_attribute_list(group.attrs, "weight_names", [name_bytes(w) for w, _ in weights])
    for weight, source in weights:
        _dataset(group, weight, source, chunk, keras3=False)


def write_keras3_h5(path: str | os.PathLike[str], groups: Sequence[Keras3Group], *, force: bool = False,
                    verify: bool = True, inputs: Iterable[str | Checkpoint] = (), chunk: int = CHUNK) -> WriteReport:
    """Write a Keras 3 ``.weights.h5`` file that Keras 3 ``load_weights`` reads.

    Every group gets a ``vars`` subgroup (also when it has no variables, as Keras writes it for
    objects with a name) holding datasets ``0``, ``1``, ...; groups are created in the given order.
    """
    expected, fill = _keras3_fill(groups, chunk)
    return _write(os.fspath(path), "keras3-h5", fill, expected, force, verify, inputs, chunk)


def write_keras3_zip(path: str | os.PathLike[str], groups: Sequence[Keras3Group], members: dict[str, bytes], *,
                     force: bool = False, verify: bool = True, inputs: Iterable[str | Checkpoint] = (),
                     chunk: int = CHUNK) -> WriteReport:
    """Write a Keras 3 ``.keras`` archive as ``keras/src/saving/saving_lib.py`` does: a zip (stored) of
    ``metadata.json``, ``config.json`` (``members``, bytes carried over from a ``.keras`` template) and
    ``model.weights.h5`` holding ``groups`` (see :func:`write_keras3_h5`); ``keras.models.load_model``
    reads it. The weights are staged in ``<temporary>.weights.h5`` beside the output."""
    import zipfile

    import h5py

    out = os.fspath(path)
    if "config.json" not in members:
        raise InvalidOutputError(out, "a .keras archive needs the model's config.json")
    expected, fill = _keras3_fill(groups, chunk)
    refuse_url(out)
    guard_output(out, inputs=inputs, sources=expected.values(), force=force)
    report = _report(out, "keras-zip", expected)
    with atomic_output(out, 2 * report.bytes, replace=force, sources=expected.values()) as temp:
        weights = f"{temp}.weights.h5"
        try:
            with h5py.File(weights, "w") as h5:
                fill(h5)
            with zipfile.ZipFile(temp, "x", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for name in ("metadata.json", "config.json"):
                    if name in members:
                        zf.writestr(name, members[name])
                zf.write(weights, "model.weights.h5")
        finally:
            if os.path.lexists(weights):
                os.unlink(weights)
        if verify:
            report.accept(_verify(temp, out, "keras-zip", expected, chunk, members))
    return report


def _keras3_fill(groups: Sequence[Keras3Group], chunk: int) -> tuple[dict[str, Source], Any]:
    """The datasets of a Keras 3 weights file by key, and the function writing them into an open file."""
    expected: dict[str, Source] = {}
    seen: set[str] = set()
    for group in groups:
        if group.path in seen or group.path.startswith("/") or group.path.endswith("/") or "//" in group.path:
            raise ValueError(f"bad or repeated object path {group.path!r}")
        seen.add(group.path)
        prefix = f"{group.path}/vars/" if group.path else "vars/"
        expected.update({f"{prefix}{i}": source for i, source in enumerate(group.variables)})

    def fill(h5: Any) -> None:
        for group in groups:
            vars_group = h5.create_group(f"{group.path}/vars" if group.path else "vars")
            if group.name is not None:
                vars_group.attrs["name"] = group.name
            for i, source in enumerate(group.variables):
                _dataset(vars_group, str(i), source, chunk, keras3=True)

    return expected, fill


def _dataset(group: Any, name: str, source: Source, chunk: int, keras3: bool) -> None:
    dt, shape = describe(source)
    if not dt.fixed_width or dt.numpy_name is None:
        raise UnsupportedError(name, f"a {dt.name} tensor cannot be stored in a Keras weights file")
    np_dtype = dt.numpy()
    bf16 = dt.name == "bfloat16"
    ds = group.create_dataset(name, shape, dtype=np_dtype)
    if bf16:
        ds.attrs["dtype"] = "bfloat16"
    _stream_into(ds, source, np_dtype, shape, chunk)
    reporting.wrote(0, 1)


def _stream_into(ds: Any, source: Source, np_dtype: Any, shape: tuple[int, ...], chunk: int) -> None:
    """Copy a source into a dataset a block of rows at a time (memory stays near ``chunk`` bytes)."""
    import numpy as np

    count = math.prod(shape)
    if count == 0:
        return
    row = math.prod(shape[1:]) * np_dtype.itemsize if shape else np_dtype.itemsize
    pending = bytearray()
    done = 0
    for piece in fixed_chunks(source, chunk):
        pending += piece
        rows = len(pending) // row
        if rows == 0:
            continue
        block = np.frombuffer(bytes(pending[:rows * row]), dtype=np_dtype)
        del pending[:rows * row]
        if shape:
            ds[done:done + rows] = block.reshape((rows, *shape[1:]))
        else:
            ds[()] = block[0]
        done += rows
        reporting.wrote(block.nbytes)
    total = shape[0] if shape else 1
    if done != total or pending:
        raise InvalidOutputError(ds.name, f"source gave {done * row + len(pending)} bytes, expected {count * np_dtype.itemsize}")


def _write(out: str, layout: str, fill: Any, expected: dict[str, Source], force: bool, verify: bool,
           inputs: Iterable[str | Checkpoint], chunk: int) -> WriteReport:
    import h5py

    refuse_url(out)
    guard_output(out, inputs=inputs, sources=expected.values(), force=force)
    report = _report(out, layout, expected)
    with atomic_output(out, report.bytes, replace=force, sources=expected.values()) as temp:
        with h5py.File(temp, "w") as h5:
            fill(h5)
        if verify:
            report.accept(_verify(temp, out, layout, expected, chunk))
    return report


def _report(out: str, layout: str, expected: dict[str, Source]) -> WriteReport:
    report = WriteReport(out, layout, [out])
    for key, source in expected.items():
        dt, shape = describe(source)
        report.add(Stored(key, key, dt.name, dt.name, shape), math.prod(shape) * dt.itemsize)
    return report


def _verify(temp: str, out: str, layout: str, expected: dict[str, Source], chunk: int,
            members: dict[str, bytes] | None = None) -> RoundTripReport:
    from formats.keras_h5.opening import open_keras

    if members is not None:
        from formats.keras_h5.source import json_members

        if json_members(temp, "zip") != members:
            raise VerificationError(out, "verification failed: the archive's config.json/metadata.json are not "
                                    "the template's")
    with open_keras(temp, "zip" if layout == "keras-zip" else "hdf5") as written:
        if written.format != layout:
            raise VerificationError(out, f"verification failed: the file reads as {written.format}, not {layout}")
        problems = [(p.where, p.message) for p in written.problems()]
        if problems:
            where, message = problems[0]
            raise VerificationError(out, f"verification failed: {where}: {message}")
        report = compare_checkpoints(written, expected, path=out, against="sources", chunk=chunk)
    return check_roundtrip(out, report)
