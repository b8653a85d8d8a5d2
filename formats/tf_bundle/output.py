"""The ``tf-bundle`` format's writer in the one signature of :mod:`formats.core.format`.

``layout`` is ``tf-object`` (``options["object_graph"]``, the serialized object graph, is stored) or
``tf-name``; ``options["shards"]`` spreads the tensors over data files
(:func:`formats.tf_bundle.sharding.assign_shards`).
"""
from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from formats.core.format import Row
    from formats.io.writing import WriteReport

__all__ = ["write"]


def write(output: str, rows: Sequence[Row], *, layout: str, force: bool = False, verify: bool = True,
          inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None, jobs: int | None = None,
          link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write ``rows`` as a TensorFlow bundle at the prefix ``output`` (see the module docstring)."""
    from formats.tf_bundle.writer import RowPairs, write_checkpoint

    options = options or {}
    return write_checkpoint(output, RowPairs(rows), options.get("object_graph"), force=force,
                            verify=verify, inputs=inputs, progress=progress, link=link, jobs=jobs,
                            shards=options.get("shards"))
