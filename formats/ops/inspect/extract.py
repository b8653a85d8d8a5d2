"""``extract``: tensors out of a checkpoint into ``.npy`` / ``.npz`` files or a directory of ``.npy`` files.

Modes (``mode="auto"`` picks one from ``out``):

- ``npy``: one tensor -> ``OUT.npy`` (``out`` ending in ``.npy``, or a bare name and one tensor).
- ``npz``: many tensors -> ``OUT.npz``, one member ``<key>.npy`` per tensor, keys kept verbatim
  (``numpy.load(OUT)[key]``), plus the provenance record ``__ckpt_provenance__.npy`` that
  ``convert --to npz`` writes too, and, as it does, an object-based checkpoint's graph
  (``__ckpt_object_graph__.npy``) where every other tensor is written under its key. Uncompressed, ZIP64.
- ``dir``: a directory (``out`` ending in ``/`` or an existing directory); each key becomes a relative
  path ``<key>.npy``. Key segments are made safe: ``.``/``..``/empty segments, ``%``, backslashes and
  control characters are percent-encoded, so a hostile key such as ``../../x`` or ``/etc/passwd``
  always lands inside the directory (and the resolved path is checked again before writing).

Files and members are named by key (``by="key"``), by the TF1-style variable name (``by="name"``:
``net/dense/kernel`` rather than ``net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE``, whose ``.ATTRIBUTES``
folder ``ls`` hides) or by object path (``by="path"``: ``net/l1/kernel``, the key without
``/.ATTRIBUTES/VARIABLE_VALUE``, unique like the key). ``by="auto"`` (the default) names a directory of an
object-based checkpoint's tensors by name, or by object path when several of them share a name (Keras 3
names every ``Dense`` kernel of a model ``<model>/kernel``; a warning says so), and everything else by key;
``by="name"`` refuses names two tensors share (hint: ``by="path"`` or ``by="key"``).
Patterns select by key either way. The object graph (``_CHECKPOINTABLE_OBJECT_GRAPH``, a serialized
proto, not a tensor of the program) is left out unless ``include_graph`` or a pattern names it exactly.

Values are stored with the one numpy dtype policy of :mod:`formats.io.npy_output` (shared with
``convert --to npz``): bfloat16, float8 and int4-like tensors as their raw bits (``uint16``,
``uint8``; the npz record keeps the real dtype, the report names each), strings and variants as
fixed-width bytes, never pickled unless ``allow_pickle``.

Every output is written the one way (:mod:`formats.io.writing`): guarded (a file of the
checkpoint is never replaced, an existing output only with ``force``), written under temporary
names, read back and compared with the checkpoint, then renamed into place. A directory is all or
nothing: every file is written and verified in a staging directory beside it first; a new directory is then
renamed into place, and an existing one exchanged in one step with a copy of it (hard links) that holds the
new files (:func:`~formats.io.atomic.publish_into_dir`) - a kill at any instant leaves the old files or the
new ones, never a mix.
"""
from __future__ import annotations

import contextlib
import os
import re
from _bisect import bisect_left  # bisect's C half, without its module (start-up)
from collections.abc import Callable, Sequence

from formats.core.gc_pause import gc_paused
from formats.core.names import writable_name
from formats.core.errors import InvalidOutputError, NothingSelectedError
from formats.core.model import OBJECT_GRAPH_KEY, Checkpoint, FormatName, TensorEntry
from formats.core.object_keys import object_path
from formats.core.roundtrip import RoundTripReport
from formats.core.selection import selected_keys
from formats.io.atomic import (ensure_space, fsync_dir, fsync_file, make_parents, publish_dir, publish_into_dir,
                               refuse_url, remove_created, remove_tree, sweep_temporaries, temp_name)
from formats.io.npy_output import bits_note, read_back, stores_bits, write_member, write_npy
from formats.npz.writer import write_npz
from formats.io.writing import Stored, WriteReport, ZippedPairs, guard_output

__all__ = ["ExtractError", "extract", "safe_relative_path", "output_names"]

NPY = "npy"
"""One tensor in a ``.npy`` file."""
NPZ = FormatName.NPZ.value
"""The tensors as members of an ``.npz`` archive (the ``npz`` format)."""

Progress = Callable[[int, int], None]


class ExtractError(InvalidOutputError):
    """The selection cannot be written as asked (no tensor matches, several for one ``.npy``, keys that clash)."""


_UNSAFE = re.compile(r"[%\\\x00-\x1f\x7f]")


def safe_relative_path(key: str) -> str:
    """``key`` as a relative path that cannot leave its directory (see the module doc); ``/`` separates. A lone
    surrogate becomes the text ``\\uXXXX``, as every writer writes it (:mod:`formats.core.names`)."""
    escaped = _UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", writable_name(key))  # never a "/": segments stay apart
    return "/".join(s if s not in ("", ".", "..") else (s.replace(".", "%2E") or "%") for s in escaped.split("/"))


def _choose_mode(out: str, mode: str, count: int) -> tuple[str, str]:
    if mode == "auto":
        if out.endswith(".npy"):
            mode = NPY
        elif out.endswith(".npz"):
            mode = NPZ
        elif out.endswith(("/", os.sep)) or os.path.isdir(out):
            mode = "dir"
        else:
            mode = NPY if count == 1 else NPZ
    if mode in (NPY, NPZ) and not out.endswith("." + mode):
        out += "." + mode
    if mode == "npy" and count != 1:
        raise ExtractError(out, f"a .npy file holds one tensor, {count} were selected", hint="write a .npz or a directory")
    return out, mode


@gc_paused  # an entry, a pair and a member per tensor, none in a cycle
def extract(ckpt: Checkpoint, patterns: Sequence[str], out: str | os.PathLike[str], mode: str = "auto",
            force: bool = False, allow_pickle: bool = False, progress: Progress | None = None,
            verify: bool = True, by: str = "auto", include_graph: bool = False) -> WriteReport:
    """Write the tensors of ``ckpt`` matching ``patterns`` (all when empty) to ``out``; see the module doc.

    ``by`` names the files/members: ``"key"``, ``"name"``, ``"path"`` or ``"auto"``. ``progress(bytes_done,
    tensors_done)`` is called after each tensor is written."""
    keys = _selected(ckpt, patterns, include_graph)
    refuse_url(os.fspath(out))
    path, mode = _choose_mode(os.fspath(out), mode, len(keys))
    if mode == NPZ and len(keys) >= KEEP_LABELS:  # (every key's name and role for the record, asked before an
        ckpt.keep_names_and_roles()  # entry is held per key)
    entries = [ckpt[key] for key in keys]
    naming = _naming(ckpt, by, mode)
    shared = _shared_names(entries) if by == "auto" and naming == "name" else {}
    labels = output_names(ckpt, entries, "path" if shared else naming, path)
    report = _write(ckpt, entries, labels, path, mode, force, allow_pickle, verify, progress)
    if shared:
        shown = ", ".join(f"{name!r} ({count} tensors)" for name, count in list(shared.items())[:3])
        report.warnings.append(f"named by object path, not by variable name: {len(shared)} name(s) are shared by "
                               f"several tensors ({shown})")
    return report


KEEP_LABELS = 10_000
"""Tensors an extraction to ``.npz`` selects from which it asks every key's name and role before it makes an entry a
key (:meth:`~formats.core.model.Checkpoint.keep_names_and_roles`); a smaller selection asks its own as it is written
(naming every key of 10^6 for one tensor took 0.4 s more)."""


def _shared_names(entries: list[TensorEntry]) -> dict[str, int]:
    """Variable names several of ``entries`` share -> how many (sorted by name)."""
    counts: dict[str, int] = {}
    for entry in entries:
        label = str(entry.name or entry.key)
        counts[label] = counts.get(label, 0) + 1
    return {name: n for name, n in sorted(counts.items()) if n > 1}


def _write(ckpt: Checkpoint, entries: list[TensorEntry], labels: list[str], path: str, mode: str, force: bool,
           allow_pickle: bool, verify: bool, progress: Progress | None) -> WriteReport:
    options = {"inputs": [ckpt], "force": force, "verify": verify, "allow_pickle": allow_pickle}
    if mode == "npy":
        report = write_npy(path, labels[0], entries[0], **options)  # type: ignore[arg-type]
        if progress is not None:
            progress(report.bytes, report.tensors)
        return report
    if mode == NPZ:
        from formats.ops.convert.cross.export import graph_reader, let_go_of_labels, record_columns

        items = record_columns(ckpt, labels, entries)
        let_go_of_labels(ckpt, items)
        record = {"source": ckpt.path, "format": ckpt.format, "tensors": items}  # (its text made as it is written)
        whole = len(entries) == len(ckpt) - 1 and OBJECT_GRAPH_KEY in ckpt and \
            all(label == entry.key for label, entry in zip(labels, entries))
        return write_npz(path, ZippedPairs(labels, entries), provenance=record, progress=progress,
                         object_graph=graph_reader(ckpt) if whole else None, **options)  # type: ignore[arg-type]
    return _write_dir(entries, labels, path, ckpt, force, allow_pickle, verify, progress)


def _selected(ckpt: Checkpoint, patterns: Sequence[str], include_graph: bool) -> list[str]:
    """The keys of the selected entries, the object graph left out unless asked for (see the module doc)."""
    keys = selected_keys(ckpt, patterns)
    if not (include_graph or OBJECT_GRAPH_KEY in patterns):
        kept = [key for key in keys if key != OBJECT_GRAPH_KEY]
        if keys and not kept:
            raise NothingSelectedError(ckpt.path, "only the object graph matches, and it is left out",
                                       hint="pass include_graph=True")
        keys = kept
    if not keys:
        raise NothingSelectedError(ckpt.path, "the checkpoint holds no tensors")
    return keys


def _naming(ckpt: Checkpoint, by: str, mode: str) -> str:
    if by not in ("auto", "key", "name", "path"):
        raise ValueError(f"by must be 'auto', 'key', 'name' or 'path', not {by!r}")
    if by != "auto":
        return by
    return "name" if mode == "dir" and ckpt.format == FormatName.TF_OBJECT else "key"


def output_names(ckpt: Checkpoint, entries: list[TensorEntry], by: str, out: str) -> list[str]:
    """Each entry's name in the output: its key, its object path (``by="path"``), or (``by="name"``) its
    variable name (its key when it has none); ExtractError when two entries would share one."""
    if by == "key":
        return [e.key for e in entries]
    if by == "path":
        return [object_path(e.key) for e in entries]
    labels = [str(e.name or e.key) for e in entries]
    seen: dict[str, str] = {}
    for entry, label in zip(entries, labels):
        other = seen.setdefault(label, entry.key)
        if other != entry.key:
            raise ExtractError(out, f"{other!r} and {entry.key!r} are both named {label!r}",
                               hint='pass by="path" to name the files by object path, or pass by="key" to name '
                                    'them by key')
    return labels


# -- a directory of .npy files -----------------------------------------------------------------------------
def _inside(root: str, target: str, key: str) -> None:
    """Refuse a target whose existing directories under ``root`` resolve outside it (a symlink)."""
    top = os.path.abspath(root)
    parent = os.path.dirname(os.path.abspath(target))
    while not os.path.lexists(parent) and parent != top:
        parent = os.path.dirname(parent)
    if not os.path.lexists(parent):
        return  # nothing under root exists yet
    real_root = os.path.realpath(top)
    if os.path.commonpath([real_root, os.path.realpath(parent)]) != real_root:
        raise ExtractError(target, f"key {key!r} would be written outside {root} (symlink?)")


_STAGE_SUFFIX = 48  # the staging directory's name beyond the output's (``/.ckpt-extract.tmp-<rand>-<host>-<pid>``)


def _limits(root: str) -> tuple[int, int]:
    """(longest file name, longest path) the file system under ``root`` allows (255 and 4096 if unknown)."""
    existing = os.path.abspath(root)
    while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    try:
        return os.pathconf(existing, "PC_NAME_MAX"), os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # pragma: no cover - platforms without pathconf
        return 255, 4096


def _check_lengths(entries: list[TensorEntry], rels: list[str], root: str) -> None:
    """Refuse, before anything is written, keys whose files the file system cannot name (a segment or the
    whole path too long), in one pass over each key."""
    from formats.core.names import quoted_text

    name_max, path_max = _limits(root)
    base = len(os.fsencode(os.path.abspath(root))) + _STAGE_SUFFIX
    for entry, rel in zip(entries, rels):
        encoded = os.fsencode(rel)
        size, segment = len(encoded), max(map(len, encoded.split(b"/")))
        if segment > name_max or base + size >= path_max:
            why = (f"a path segment of {segment:,} bytes (at most {name_max})" if segment > name_max
                   else f"a path of {base + size:,} bytes (at most {path_max:,})")
            raise ExtractError(root, f"key {quoted_text(entry.key, 120)} needs {why} as a file under this "
                               "directory", hint="write a .npz instead")


def _check_layout(files: list[str], root: str) -> None:
    """Refuse keys whose files would collide with another key's directory (``a`` vs ``a.npy/b``): in sorted
    order, the first path under ``f/`` is where ``f + "/"`` would go (n log n, whatever the depth)."""
    ordered = sorted(files)
    for name in ordered:
        at = bisect_left(ordered, name + "/")
        if at < len(ordered) and ordered[at].startswith(name + "/"):
            raise ExtractError(root, f"{name!r} would be both a file and a directory", hint="write a .npz instead")


def _write_dir(entries: list[TensorEntry], labels: list[str], root: str, ckpt: Checkpoint, force: bool,
               allow_pickle: bool, verify: bool, progress: Progress | None) -> WriteReport:
    rels = [safe_relative_path(label) + ".npy" for label in labels]
    _check_lengths(entries, rels, root)
    _check_layout(rels, root)
    targets = [os.path.join(root, *rel.split("/")) for rel in rels]
    for entry, target in zip(entries, targets):
        _inside(root, target, entry.key)
    if os.path.lexists(root) and not os.path.isdir(root):
        raise ExtractError(root, "output exists and is not a directory")
    guard_output(root, targets, inputs=[ckpt], force=force, directory=True)
    report = WriteReport(root, "npy-dir", targets)
    exists = os.path.isdir(root)
    final = os.path.realpath(root) if exists else os.path.abspath(root)
    created = [] if exists else make_parents(final)
    sweep_temporaries(final)  # what a killed extract left behind
    sweep_temporaries(os.path.join(final, "ckpt-extract"))  # (and one that staged inside the directory)
    inside = exists and not _can_stage_beside(final)  # a mount point, or a parent we cannot write: file by file
    stage = temp_name(os.path.join(final, "ckpt-extract") if inside else final)  # beside: one rename or exchange
    try:
        ensure_space(final if inside else os.path.dirname(final), sum(e.nbytes for e in entries), entries)
        _stage(entries, rels, stage, report, allow_pickle, verify, progress)
        if not exists:
            publish_dir(stage, final, replace=False)
        elif inside or not publish_into_dir(stage, final, replace=force):
            _move_in(stage, rels, root, entries)
    except BaseException:
        _discard(stage)
        remove_created(created)
        raise
    _discard(stage)
    return report


def _can_stage_beside(directory: str) -> bool:
    """Whether a staging directory beside ``directory`` is on its file system and can be made."""
    parent = os.path.dirname(directory)
    try:
        return os.stat(directory).st_dev == os.stat(parent).st_dev and os.access(parent, os.W_OK | os.X_OK)
    except OSError:
        return False


def _discard(stage: str) -> None:
    """Remove a staging directory whatever is in it (failures to remove are left for the next sweep)."""
    with contextlib.suppress(OSError):
        remove_tree(stage)


def _stage(entries: list[TensorEntry], rels: list[str], stage: str, report: WriteReport, allow_pickle: bool,
           verify: bool, progress: Progress | None) -> None:
    """Write and verify every file under ``stage``."""
    os.mkdir(stage)
    compared = RoundTripReport(report.path, "sources")
    for entry, rel in zip(entries, rels):
        staged = os.path.join(stage, *rel.split("/"))
        make_parents(staged)  # iterative: a key may be two thousand segments deep
        with open(staged, "xb") as f:
            written = write_member(f, entry.key, entry, allow_pickle)
        fsync_file(staged)
        report.add(Stored(entry.key, rel, entry.dtype, written.stored, tuple(entry.shape)), written.nbytes)
        if stores_bits(entry.dtype):
            report.warnings.append(bits_note(entry.key, entry.dtype))
        if verify:
            one = read_back(report.path, {rel: (entry.key, entry)}, {rel: written},
                            lambda _, p=staged: lambda: open(p, "rb"))  # type: ignore[misc]  # noqa: SIM115 - the caller closes it
            compared.tensors, compared.bytes = compared.tensors + one.tensors, compared.bytes + one.bytes
            compared.mismatches += one.mismatches
        if progress is not None:
            progress(report.bytes, report.tensors)
    if verify:
        report.accept(compared)


def _move_in(stage: str, rels: list[str], root: str, entries: list[TensorEntry]) -> None:
    """Rename the verified files into an existing ``root``; on failure, take back the files that are new
    (one replaced with ``force`` keeps its new content)."""
    moved: list[str] = []
    made: list[str] = []
    try:
        for entry, rel in zip(entries, rels):
            target = os.path.join(root, *rel.split("/"))
            made += make_parents(target)
            _inside(root, target, entry.key)
            new = not os.path.lexists(target)
            os.replace(os.path.join(stage, *rel.split("/")), target)
            moved += [target] if new else []
    except BaseException:
        for target in moved:
            os.unlink(target)
        remove_created(made)
        raise
    for folder in sorted({os.path.dirname(os.path.join(root, *rel.split("/"))) for rel in rels}):
        fsync_dir(folder)
