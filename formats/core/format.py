"""What a format is: one registry entry that reads and, if it can, writes.

A *format* is an entry of :mod:`formats.core.registry` (``tf-bundle``, ``keras-h5``, a plugin's). What
its reader reports as ``Checkpoint.format`` is a *layout* (``tf-object``, ``keras3-h5``, ...): one format
recognises one or more layouts and writes some of them. The ``--to`` targets of ``ckpt convert`` and
``ckpt edit`` are the layouts registered formats write (:func:`~formats.core.registry.write_targets`).

Besides the reading verbs the registry documents (``name``, ``sniff``, ``open``, ...), a format declares
its capabilities as attributes, each with a default (:func:`capability`):

==================  =======================================================================  ==========
attribute           what it says                                                             default
==================  =======================================================================  ==========
``layouts``         the layouts its reader reports (``Checkpoint.format`` values)            ``(name,)``
``object_layouts``  those of ``layouts`` that are object-based (carry a TF2 object graph)    ``()``
``writes``          the layouts :meth:`Format.write` writes (its ``--to`` targets)           ``()``
``rewrites``        layout -> the layout an edit writes a checkpoint of that layout in,      ``{}``
                    when not itself (``keras-zip`` -> ``keras3-h5``)
``links``           its writer can hard-link input data files it takes over whole            ``False``
``data_files``      its output can be spread over several data files (``shards``)           ``False``
``max_shard_size``  layouts written as shards of at most a size (``options["max_shard_size"]``)  ``()``
``streams_records`` its writer takes ``options["provenance"]["tensors"]`` as any iterable,    ``False``
                    reached once (each item made as it is written); else a list
==================  =======================================================================  ==========

A writable format has one writer signature, :meth:`Format.write`; every layout-specific choice a
planner made (the object graph, data files, a provenance record, Keras groups) travels in ``options``.
A writable format may also offer ``unstorable(entry) -> str | None`` (why a tensor cannot be written,
None when it can), ``storage_note(entry) -> str`` (how a tensor is stored, for the plan) and
``key_problems(keys) -> dict[str, str]`` (the output keys not allowed, each with why), which the generic
export planner asks; formats without a dedicated planner in :mod:`formats.ops.convert.targets` are planned that way. Of a
readable fixed-width tensor the planner asks ``unstorable`` and ``storage_note`` once a dtype and shape: their
answers for one must depend on nothing else.

Nothing here imports :mod:`typing` at run time.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Protocol

    from formats.core.model import Checkpoint

    class Row(Protocol):
        """One tensor to write: its output ``key``, its ``value`` (a :class:`~formats.core.sources.Source`),
        ``shape`` and ``dtype`` (a conversion plan's ``PlanRow`` is one)."""

        key: str
        value: Any
        shape: tuple[int, ...]
        dtype: str

    class Format(Protocol):
        """A registry entry (see the module docstring for the capability attributes)."""

        name: str
        layouts: tuple[str, ...]
        object_layouts: tuple[str, ...]
        writes: tuple[str, ...]
        rewrites: Mapping[str, str]
        links: bool
        data_files: bool
        max_shard_size: tuple[str, ...]

        def sniff(self, path: str) -> bool: ...

        def open(self, path: str) -> Checkpoint: ...

        def write(self, output: str, rows: Sequence[Row], *, layout: str, force: bool = False,
                  verify: bool = True, inputs: Sequence[Any] = (),
                  progress: Callable[[int, int], None] | None = None, jobs: int | None = None,
                  link: bool = False, options: Mapping[str, Any] | None = None) -> Any:
            """Write ``rows`` at ``output`` in ``layout`` (one of :attr:`writes`): guarded (``force``
            replaces an existing output; ``inputs`` are never replaced), atomically, read back and compared
            with the rows' values unless not ``verify``; ``progress(bytes, tensors)`` follows the writing,
            ``jobs`` threads read it back (None: every core), ``link`` hard-links input data files taken
            over whole (formats with ``links``); ``options``: the layout's own choices. Returns a
            :class:`~formats.io.writing.WriteReport`."""
            ...

__all__ = ["CAPABILITIES", "capability", "layouts_of"]

CAPABILITIES: dict[str, object] = {"object_layouts": (), "writes": (), "rewrites": {}, "links": False,
                                   "data_files": False, "max_shard_size": (), "streams_records": False}
"""Every capability attribute but ``layouts`` with its default."""


def layouts_of(spec: Format) -> tuple[str, ...]:
    """The layouts ``spec``'s reader reports (its name when it declares none)."""
    return tuple(getattr(spec, "layouts", None) or (spec.name,))


def capability(spec: object, attribute: str) -> object:
    """``spec``'s ``attribute`` (one of :data:`CAPABILITIES`), or its default."""
    return getattr(spec, attribute, CAPABILITIES[attribute])
