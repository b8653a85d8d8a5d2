"""The format registry: the one place that knows every on-disk format.

A format is any object with

* ``name`` (str): the registry name (``tf-bundle``, ``keras-h5``, ...);
* ``sniff(path) -> bool``: whether ``path`` (a file, a directory or a bundle-style prefix) is its own;
* ``open(path) -> Checkpoint``: open it (entries subclass :class:`~formats.core.model.TensorEntry`).

and optionally

* ``resolve(path) -> str | None``: the checkpoint ``path`` names (``x.data-00000-of-00001`` -> ``x``),
  ``None`` when not this format's; may raise a :class:`~formats.core.errors.CheckpointError` saying
  why a path that looks like its own cannot be opened. Default: ``path`` when ``sniff(path)``.
* ``find(directory) -> list[str]``: the checkpoints directly inside ``directory`` (for ``ckpt ls DIR``).
  Default: the directory's entries that ``resolve`` claims.
* ``suffixes`` (tuple of str): file name endings of its files (completion, hints).
* ``claims_directories`` (bool): a directory itself can be one of its checkpoints (SavedModel).
* ``urls`` (bool): it reads fsspec URLs (``s3://...``); default False.
* ``description`` (str): one line for ``ckpt formats`` and errors.
* ``compact_listing(path, patterns) -> CompactListing | None``: every tensor whose key matches
  ``patterns`` (as :func:`~formats.core.selection.select_keys` selects), listed without opening the
  checkpoint (:class:`~formats.core.compact_listing.CompactListing`), for checkpoints too large to open
  quickly; None when the checkpoint should be opened instead. Default: None.

and, to say what it recognises and whether it writes, the capability attributes and the one
``write(output, rows, *, layout, force, verify, inputs, progress, jobs, link, options) -> WriteReport``
of :mod:`formats.core.format`. A format is an entry here; what its reader reports as
``Checkpoint.format`` is a *layout*; the layouts formats write are the conversion targets
(:func:`write_targets`).

Built-in formats are named here by module (imported only when asked); third-party formats register
through the ``tfckpt.formats`` entry-point group, read only when no built-in format claims a path
(so start-up never scans installed packages).
"""
from __future__ import annotations

import os
import sys

from formats.core.errors import PluginError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "BUILTIN", "BUILTIN_WRITERS", "BUILTIN_FILE_NAMES", "builtin_formats", "plugin_formats", "all_formats", "get_format",
           "iter_builtin_formats", "writer_capability", "resolve_with", "find_with", "suffixes", "claims_directory", "compact_listing_with",
           "write_targets", "writer_of", "format_of", "edit_target", "is_object_layout"]

ENTRY_POINT_GROUP = "tfckpt.formats"

BUILTIN: tuple[str, ...] = (
    "formats.saved_model.format:FORMAT",
    "formats.tf_bundle.format:FORMAT",
    "formats.tf_v1.format:FORMAT",
    "formats.keras_h5.format:FORMAT",
    "formats.keras_h5.format:SHARDED_FORMAT",
    "formats.keras_h5.format:DIRECTORY_FORMAT",
    "formats.npz.format:FORMAT",
    "formats.safetensors.format:FORMAT",
    "formats.safetensors.format:MODEL_DIR_FORMAT",
    "formats.orbax.format:FORMAT",
    "formats.openai_npy.format:FORMAT",
)
"""Built-in formats in the order they are asked (``module:attribute``)."""

BUILTIN_FILE_NAMES: dict[str, tuple[str, ...]] = {
    "formats.saved_model.format:FORMAT": ("saved_model.pb", "saved_model.pbtxt"),
}
"""Built-in formats that claim a local file only by one of these names (and directories): asked about another
file, they are not imported (a bundle prefix imports none of the SavedModel modules: three modules of every
command's start-up). A test checks the names are the format's own and that it claims no other file."""

BUILTIN_WRITERS: dict[str, str] = {
    "tf-object": "formats.tf_bundle.format:FORMAT", "tf-name": "formats.tf_bundle.format:FORMAT",
    "keras2-h5": "formats.keras_h5.format:FORMAT", "keras3-h5": "formats.keras_h5.format:FORMAT",
    "keras": "formats.keras_h5.format:FORMAT", "npz": "formats.npz.format:FORMAT",
    "safetensors": "formats.safetensors.format:FORMAT", "hf": "formats.safetensors.format:MODEL_DIR_FORMAT",
}
"""The built-in format that writes each layout (the first of :data:`BUILTIN` whose ``writes`` holds it; a test
checks): :func:`writer_of` imports that one module, not every format asked before it (``--to safetensors``
imported six)."""

_loaded: dict[str, Any] = {}
_plugins: dict[tuple[str, ...], list[Any]] = {}


def _load(ref: str) -> Any:
    spec = _loaded.get(ref)
    if spec is None:
        module, _, attr = ref.partition(":")
        __import__(module)  # not importlib.import_module: importlib imports warnings (start-up)
        spec = _loaded[ref] = getattr(sys.modules[module], attr)
    return spec


def builtin_formats() -> list[Any]:
    """The built-in formats, imported on first use."""
    return [_load(ref) for ref in BUILTIN]


def iter_builtin_formats(file_name: str | None = None) -> Iterator[Any]:
    """The built-in formats in order, each imported only when reached (a bundle prefix, claimed by the
    second, never imports the Keras, npz or safetensors modules); given the ``file_name`` of a local path that
    is no directory, without those that claim a file only by other names (:data:`BUILTIN_FILE_NAMES`)."""
    for ref in BUILTIN:
        if file_name is not None and file_name not in BUILTIN_FILE_NAMES.get(ref, (file_name,)):
            continue
        yield _load(ref)


def plugin_formats() -> list[Any]:
    """Formats registered by other packages under :data:`ENTRY_POINT_GROUP` (read once per ``sys.path``)."""
    key = tuple(sys.path)
    if key not in _plugins:
        _plugins[key] = list(_scan_entry_points())
    return _plugins[key]


def _scan_entry_points() -> Iterator[Any]:
    if not _may_declare(ENTRY_POINT_GROUP):
        return
    from importlib.metadata import entry_points

    builtin_names = {spec.name for spec in builtin_formats()}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = ep.load()
        except Exception as exc:  # a broken plugin must not break ckpt
            raise PluginError(ep.value, f"format plugin {ep.name!r} failed to load: {type(exc).__name__}: {exc}") from None
        missing = [a for a in ("name", "sniff", "open") if not hasattr(spec, a)]
        if missing:
            raise PluginError(ep.value, f"format plugin {ep.name!r} lacks {', '.join(missing)}")
        if spec.name not in builtin_names:
            yield spec


def _path_backport(finder: object) -> bool:
    """Whether ``finder`` is the ``importlib_metadata`` backport's path finder (which the ``importlib_metadata``
    package puts on ``sys.meta_path`` when imported, by Dask for one): it finds distributions in the ``sys.path``
    folders :func:`_may_declare` looks at, as ``PathFinder`` does."""
    return type(finder).__module__ == "importlib_metadata" and type(finder).__name__ == "MetadataPathFinder"


def _may_declare(group: str) -> bool:
    """Whether any installed distribution may declare entry points in ``group``: a look at the
    ``entry_points.txt`` of each ``*.dist-info``/``*.egg-info`` folder on ``sys.path`` (a few
    milliseconds), so that ``importlib.metadata``, which parses every package's metadata (tens of
    milliseconds), runs only when one does. True when it cannot tell (zipped or egg path entries,
    a custom distribution finder)."""
    from _frozen_importlib_external import PathFinder  # importlib.machinery's, without importing importlib

    if any(hasattr(f, "find_distributions") and f is not PathFinder and not _path_backport(f) for f in sys.meta_path):
        return True
    section = f"[{group}]".encode()
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True  # a zip archive on sys.path
            continue
        if folder.endswith(".egg"):
            return True
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")) and _mentions(os.path.join(folder, name), section):
                return True
    return False


def _mentions(info: str, section: bytes) -> bool:
    try:
        with open(os.path.join(info, "entry_points.txt"), "rb") as f:
            return section in f.read()
    except OSError:
        return False


def all_formats() -> list[Any]:
    """Built-in formats first, then plugins."""
    return builtin_formats() + plugin_formats()


def get_format(name: str) -> Any:
    """The format registered under ``name``; KeyError when there is none."""
    for spec in _imported_first():
        if spec.name == name:
            return spec
    raise KeyError(name)


def resolve_with(spec: Any, path: str) -> str | None:
    """What ``spec`` makes of ``path``: the checkpoint it names, or None."""
    resolve = getattr(spec, "resolve", None)
    if resolve is not None:
        return resolve(path)
    return path if spec.sniff(path) else None


def find_with(spec: Any, directory: str) -> list[str]:
    """The checkpoints of ``spec``'s format directly inside a local ``directory``."""
    find = getattr(spec, "find", None)
    if find is not None:
        return list(find(directory))
    found = []
    for name in sorted(os.listdir(directory)):
        claimed = resolve_with(spec, os.path.join(directory, name))
        if claimed is not None:
            found.append(claimed)
    return found


def suffixes() -> tuple[str, ...]:
    """Every file ending a built-in format declares (for completion and hints)."""
    out: list[str] = []
    for spec in builtin_formats():
        out += [s for s in getattr(spec, "suffixes", ()) if s not in out]
    return tuple(out)


def claims_directory(spec: Any) -> bool:
    """Whether a directory itself can be a checkpoint of ``spec``'s format."""
    return bool(getattr(spec, "claims_directories", False))


def compact_listing_with(spec: Any, path: str, patterns: tuple[str, ...] | list[str] = ()) -> Any:
    """``spec``'s compact listing of ``path`` (a :class:`~formats.core.compact_listing.CompactListing`), or None
    when the format has none for it (the checkpoint is then opened)."""
    lister = getattr(spec, "compact_listing", None)
    return None if lister is None else lister(path, patterns)


def write_targets() -> list[str]:
    """The layouts registered formats write (``ckpt convert --to`` names), sorted; plugins included."""
    from formats.core.format import capability

    return sorted({layout for spec in all_formats() for layout in capability(spec, "writes")})  # type: ignore[attr-defined]


def writer_of(layout: str) -> Any:
    """The format that writes ``layout``; KeyError when none does."""
    if layout in BUILTIN_WRITERS:
        return _load(BUILTIN_WRITERS[layout])
    for spec in _every_format():
        if layout in getattr(spec, "writes", ()):
            return spec
    raise KeyError(layout)


def writer_capability(layout: str, attribute: str) -> Any:
    """The capability ``attribute`` (:data:`formats.core.format.CAPABILITIES`) of the format that writes
    ``layout``; the capability's default when no registered format writes it."""
    from formats.core.format import CAPABILITIES, capability

    try:
        return capability(writer_of(layout), attribute)
    except KeyError:
        return CAPABILITIES[attribute]


def format_of(layout: str) -> Any:
    """The format whose reader reports ``layout``; KeyError when none does."""
    from formats.core.format import layouts_of

    for spec in _imported_first():
        if layout in layouts_of(spec):
            return spec
    raise KeyError(layout)


def edit_target(layout: str) -> str | None:
    """The layout an edit writes a checkpoint of ``layout`` in: its own when its format writes it, else the
    nearest one the format declares (``rewrites``); None when there is none."""
    try:
        spec = format_of(layout)
    except KeyError:
        return None
    own = getattr(spec, "rewrites", {}).get(layout)
    if own is None and layout in getattr(spec, "writes", ()):
        own = layout
    return own


def is_object_layout(layout: str) -> bool:
    """Whether ``layout`` is object-based (its format declares it among ``object_layouts``)."""
    try:
        return layout in getattr(format_of(layout), "object_layouts", ())
    except KeyError:
        return False


def _every_format() -> Iterator[Any]:
    yield from iter_builtin_formats()
    yield from plugin_formats()


def _imported_first() -> Iterator[Any]:
    """Every format, the built-in ones imported already first (asking them imports nothing): the format that
    claimed a path is found without importing those before it. No two built-in formats share a name or a layout
    (a test checks), so what is found by name or layout is what asking in order finds."""
    yield from list(_loaded.values())
    yield from _every_format()
