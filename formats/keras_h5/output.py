"""The ``keras-h5`` format's writer in the one signature of :mod:`formats.core.format`.

Each row's key says where it goes:

- ``keras2-h5`` (a Keras 2 ``save_weights`` file): ``<layer>/<weight>`` (``top_level_model_weights/...``
  for the model's own weights); ``options``: ``layer_names`` (their order), ``backend``, ``keras_version``;
- ``keras3-h5`` (a Keras 3 ``.weights.h5``, a ``.keras`` archive, or sharded weights): ``<object
  path>/vars/<n>``; ``options``: ``groups`` (``(object path, name)`` of every ``vars`` group, in order),
  ``max_shard_size`` (bytes; sharded weights, as is an output named ``*.json``) and ``model`` (``(path,
  kind)`` of a whole Keras 3 model whose config a ``.keras`` output carries over);
- ``keras`` (a whole Keras 3 model, a ``.keras`` archive): ``<object path>/vars/<n>`` as ``keras3-h5``;
  ``options``: ``groups`` and ``members`` (``config.json`` and ``metadata.json``, as bytes).
"""
from __future__ import annotations

from formats.core.errors import InvalidOutputError, UnsupportedError
from formats.core.model import FormatName

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from formats.core.format import Row
    from formats.io.writing import WriteReport
    from formats.keras_h5.writer import Keras3Group

__all__ = ["write", "TOP_LEVEL", "KERAS_SUFFIX", "KERAS2_VERSION", "KERAS3_VERSION"]

TOP_LEVEL = "top_level_model_weights"
"""The group of a Keras 2 file holding the model's own weights (not a layer's)."""
KERAS_SUFFIX = ".keras"
"""A whole Keras 3 model: a zip archive of ``config.json``, ``metadata.json`` and ``model.weights.h5``."""
KERAS2_VERSION = "2.21.0"
"""The ``keras_version`` a Keras 2 file gets when nothing says otherwise."""
KERAS3_VERSION = "3.15.1"
"""The ``keras_version`` of a Keras 3 model ckpt writes: the release whose config format it follows."""


def write(output: str, rows: Sequence[Row], *, layout: str, force: bool = False, verify: bool = True,
          inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None, jobs: int | None = None,
          link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write ``rows`` as Keras weights in ``layout`` (see the module docstring); ``progress(bytes, tensors)``
    follows the datasets as they are written; ``jobs`` and ``link`` do not apply (the HDF5 writers read back in
    one thread and copy every tensor)."""
    from formats.keras_h5.writer import reporting

    options = dict(options or {})
    with reporting(progress):
        if layout == FormatName.KERAS2_H5:
            return _write_keras2(output, rows, force, verify, list(inputs), **options)
        if layout == FormatName.KERAS3_H5:
            return _write_keras3(output, rows, force, verify, list(inputs), **options)
        if layout == FormatName.KERAS_MODEL:
            return _write_keras_model(output, rows, force, verify, list(inputs), **options)
    raise UnsupportedError(output, f"the keras-h5 format does not write {layout}")


def _write_keras2(output: str, rows: Sequence[Row], force: bool, verify: bool, inputs: list[Any], *,
                  layer_names: Sequence[str] = (), backend: str = "tensorflow",
                  keras_version: str = KERAS2_VERSION) -> WriteReport:
    from formats.keras_h5.writer import Keras2Layer, write_keras2_h5

    layers: dict[str, Keras2Layer] = {}
    for row in rows:
        layer, _, weight = row.key.partition("/")
        layers.setdefault(layer, Keras2Layer(layer)).weights.append((weight, row.value))
    top = layers.pop(TOP_LEVEL, Keras2Layer(TOP_LEVEL)).weights
    names = list(layer_names) + [n for n in layers if n not in layer_names]
    return write_keras2_h5(output, list(layers.values()), layer_names=names, top_level=top, backend=backend,
                           keras_version=keras_version, force=force, verify=verify, inputs=inputs)


def _write_keras3(output: str, rows: Sequence[Row], force: bool, verify: bool, inputs: list[Any], *,
                  groups: Sequence[tuple[str, str | None]] = (), max_shard_size: int | None = None,
                  model: tuple[str, str] | None = None) -> WriteReport:
    from formats.keras_h5.sharded_writer import DEFAULT_MAX_SHARD_SIZE, write_keras3_sharded
    from formats.keras_h5.writer import write_keras3_h5, write_keras3_zip

    out = _keras3_groups(output, rows, groups)
    if max_shard_size is not None or output.endswith(".json"):
        return write_keras3_sharded(output, out, max_shard_size=max_shard_size or DEFAULT_MAX_SHARD_SIZE,
                                    force=force, verify=verify, inputs=inputs)
    if output.endswith(KERAS_SUFFIX) and model is not None:
        from formats.keras_h5.source import json_members

        return write_keras3_zip(output, out, json_members(*model), force=force, verify=verify, inputs=inputs)
    return write_keras3_h5(output, out, force=force, verify=verify, inputs=inputs)


def _write_keras_model(output: str, rows: Sequence[Row], force: bool, verify: bool, inputs: list[Any], *,
                       groups: Sequence[tuple[str, str | None]] = (), members: Mapping[str, bytes] | None = None
                       ) -> WriteReport:
    from formats.keras_h5.writer import write_keras3_zip

    return write_keras3_zip(output, _keras3_groups(output, rows, groups), dict(members or {}), force=force,
                            verify=verify, inputs=inputs)


def _keras3_groups(output: str, rows: Sequence[Row], groups: Sequence[tuple[str, str | None]]) -> list[Keras3Group]:
    """The ``vars`` groups of a Keras 3 weights file: ``groups`` (``(object path, name)``, in order), then any other
    object a row's key names, each with the rows' values in index order."""
    from formats.keras_h5.writer import Keras3Group

    out = {path: Keras3Group(path, name) for path, name in groups}
    slots: dict[str, dict[int, Any]] = {}
    for row in rows:
        owner, _, index = row.key.rpartition("vars/")
        slots.setdefault(owner.rstrip("/"), {})[int(index)] = row.value
    for owner, values in slots.items():
        group = out.setdefault(owner, Keras3Group(owner))
        if sorted(values) != list(range(len(values))):
            raise InvalidOutputError(output, f"variables of {owner!r} would not be numbered 0..{len(values) - 1}")
        group.variables = [values[i] for i in range(len(values))]
    return list(out.values())
