"""``extract``: tensors out of a checkpoint into ``.npy`` / ``.npz`` files or a directory of ``.npy`` files.

Modes (``mode="auto"`` picks one from ``out``):

- ``npy``: one tensor -> ``OUT.npy`` (``out`` ending in ``.npy``, or a bare name and one tensor).
- ``npz``: many tensors -> ``OUT.npz``, one member ``<key>.npy`` per tensor, keys kept verbatim
  (``numpy.load(OUT)[key]``). Uncompressed, ZIP64.
- ``dir``: a directory (``out`` ending in ``/`` or an existing directory); each key becomes a relative
  path ``<key>.npy``. Key segments are made safe: ``.``/``..``/empty segments, ``%``, backslashes and
  control characters are percent-encoded, so a hostile key such as ``../../x`` or ``/etc/passwd``
  always lands inside the directory (and the resolved path is checked again before writing).

Every file is written to a temporary name beside it, fsync'ed and renamed into place; an existing
output is refused unless ``force``, and a file of the checkpoint itself is never overwritten.
Values stream in chunks (bounded memory for bundle tensors).

dtypes ``.npy`` cannot describe without extra packages are widened losslessly: bfloat16 and float8
types to float32, int4/int2 to int8, uint4/uint2 to uint8 (the report lists each). Strings and
variants (a variant element is its serialized ``VariantTensorDataProto``) are stored without pickle as
fixed-width bytes ``S<n>``; numpy drops trailing NUL bytes from ``S`` values, so a tensor with an
element ending in ``\\x00`` is refused unless ``allow_pickle`` (then an object array is written, which
``numpy.load`` opens only with ``allow_pickle=True``).
"""
from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from formats.io.atomic import atomic_output, ensure_space, refuse_url
from formats.core.errors import InvalidOutputError, NothingSelectedError, OutputExistsError, OutputIsInputError
from formats.core.model import Checkpoint, TensorEntry
from formats.core.selection import select
from formats.core.values import iter_chunks

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ExtractError", "ExtractReport", "extract", "safe_relative_path"]


class ExtractError(InvalidOutputError):
    """The output cannot be written as asked (one .npy for many tensors, a key escaping the directory, needs
    pickle, ...)."""


@dataclass
class ExtractReport:
    """What was written: ``mode``, the output path, and per tensor its key, file (or member) and stored dtype."""

    path: str
    mode: str
    tensors: list[dict[str, Any]] = field(default_factory=list)
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)
    _bytes: int = field(default=0, repr=False)

    def add(self, entry: TensorEntry, record: dict[str, Any]) -> None:
        """Record one written tensor and report progress."""
        self.tensors.append(record)
        self._bytes += entry.nbytes
        if self.progress is not None:
            self.progress(self._bytes, len(self.tensors))

    def to_json(self) -> dict[str, Any]:
        """``{"path", "mode", "tensors": [{"key", "file", "dtype", "stored_dtype", "shape"}]}``."""
        return {"path": self.path, "mode": self.mode, "tensors": self.tensors}


_UNSAFE = re.compile(r"[%\\\x00-\x1f\x7f]")
_WIDEN = {"bfloat16": "float32", "int4": "int8", "int2": "int8", "uint4": "uint8", "uint2": "uint8"}


def safe_relative_path(key: str) -> str:
    """``key`` as a relative path that cannot leave its directory (see the module doc); ``/`` separates."""
    parts = []
    for segment in key.split("/"):
        segment = _UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", segment)
        if segment in ("", ".", ".."):
            segment = segment.replace(".", "%2E") or "%"
        parts.append(segment)
    return "/".join(parts)


def _choose_mode(out: str, mode: str, count: int) -> tuple[str, str]:
    if mode == "auto":
        if out.endswith(".npy"):
            mode = "npy"
        elif out.endswith(".npz"):
            mode = "npz"
        elif out.endswith(("/", os.sep)) or os.path.isdir(out):
            mode = "dir"
        else:
            mode = "npy" if count == 1 else "npz"
    if mode in ("npy", "npz") and not out.endswith("." + mode):
        out += "." + mode
    if mode == "npy" and count != 1:
        raise ExtractError(out, f"a .npy file holds one tensor, {count} were selected", hint="write a .npz or a directory")
    return out, mode


def extract(ckpt: Checkpoint, patterns: Sequence[str], out: str | os.PathLike[str], mode: str = "auto",
            force: bool = False, allow_pickle: bool = False,
            progress: Callable[[int, int], None] | None = None) -> ExtractReport:
    """Write the tensors of ``ckpt`` matching ``patterns`` (all when empty) to ``out``; see the module doc.

    ``progress(bytes_done, tensors_done)`` is called after each tensor is written."""
    entries = select(ckpt, patterns)
    if not entries:
        raise NothingSelectedError(ckpt.path, "the checkpoint holds no tensors")
    refuse_url(os.fspath(out))
    path, mode = _choose_mode(os.fspath(out), mode, len(entries))
    inputs = {os.path.realpath(f) for f in ckpt.files}
    ensure_space(os.path.dirname(os.path.abspath(path)) if mode != "dir" else _existing_parent(path),
                 sum(e.nbytes for e in entries))
    report = ExtractReport(path, mode, progress=progress)
    if mode == "dir":
        _write_dir(entries, path, force, allow_pickle, inputs, report)
        return report
    _check_target(path, force, inputs)
    with atomic_output(path) as temp, open(temp, "xb") as f:
        if mode == "npy":
            report.add(entries[0], _write_npy(f, entries[0], allow_pickle) | {"file": os.path.basename(path)})
        else:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for entry in entries:
                    with zf.open(entry.key + ".npy", "w", force_zip64=True) as member:
                        report.add(entry, _write_npy(member, entry, allow_pickle) | {"file": entry.key + ".npy"})
    return report


def _existing_parent(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _check_target(path: str, force: bool, inputs: set[str]) -> None:
    if os.path.realpath(path) in inputs:
        raise OutputIsInputError(path, "refusing to overwrite a file of the checkpoint being read")
    if os.path.lexists(path) and not force:
        raise OutputExistsError(path, "output exists", hint="pass force=True to replace it")
    if os.path.isdir(path):
        raise ExtractError(path, "output is a directory")


def _write_dir(entries: list[TensorEntry], root: str, force: bool, allow_pickle: bool, inputs: set[str],
               report: ExtractReport) -> None:
    os.makedirs(root, exist_ok=True)
    real_root = os.path.realpath(root)
    targets = []
    for entry in entries:
        rel = safe_relative_path(entry.key) + ".npy"
        target = os.path.join(root, *rel.split("/"))
        parent = os.path.realpath(os.path.dirname(target))
        if os.path.commonpath([real_root, parent]) != real_root:
            raise ExtractError(target, f"key {entry.key!r} would be written outside {root} (symlink?)")
        _check_target(target, force, inputs)
        targets.append((entry, rel, target))
    _check_layout([rel for _, rel, _ in targets], root)
    for entry, rel, target in targets:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.commonpath([real_root, os.path.realpath(os.path.dirname(target))]) != real_root:
            raise ExtractError(target, f"key {entry.key!r} would be written outside {root} (symlink?)")
        with atomic_output(target) as temp, open(temp, "xb") as f:
            report.add(entry, _write_npy(f, entry, allow_pickle) | {"file": rel})


def _check_layout(files: list[str], root: str) -> None:
    """Refuse keys whose files would collide with another key's directory (``a`` vs ``a.npy/b``)."""
    folders = {"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)}
    clash = sorted(folders.intersection(files))
    if clash:
        raise ExtractError(root, f"{clash[0]!r} would be both a file and a directory", hint="write a .npz instead")


# -- one .npy --------------------------------------------------------------------------------------
def _write_npy(f: IO[bytes], entry: TensorEntry, allow_pickle: bool) -> dict[str, Any]:
    import numpy as np

    info = {"key": entry.key, "dtype": entry.dtype, "shape": list(entry.shape)}
    if entry.dtype in ("string", "variant"):
        value = _bytes_array(entry, allow_pickle)
        info["stored_dtype"] = "object" if value.dtype == object else value.dtype.str
        np.lib.format.write_array(f, value, allow_pickle=value.dtype == object)
        return info
    chunks = iter_chunks(entry)
    target = _WIDEN.get(entry.dtype) or ("float32" if entry.dtype.startswith("float8") or entry.dtype.startswith(
        "float4") else None)
    from formats.core.dtypes import by_name

    dt = np.dtype(target) if target else by_name(entry.dtype.removesuffix("_ref")).numpy()
    info["stored_dtype"] = dt.name
    _write_header(f, dt, entry.shape)
    for chunk in chunks:
        f.write((chunk.astype(dt) if target else chunk).tobytes())
    return info


def _write_header(f: IO[bytes], dt: np.dtype, shape: tuple[int, ...]) -> None:
    import numpy as np

    header = {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": tuple(shape)}
    try:
        np.lib.format.write_array_header_1_0(f, header)
    except ValueError:  # header too long for version 1.0
        np.lib.format.write_array_header_2_0(f, header)


def _bytes_array(entry: TensorEntry, allow_pickle: bool) -> np.ndarray:
    import numpy as np

    value = entry.read()
    items: Iterator[Any] = (bytes(x) if not isinstance(x, bytes) else x for x in value.reshape(-1))
    flat = list(items)
    if any(x.endswith(b"\x00") for x in flat):
        if not allow_pickle:
            raise ExtractError(entry.key, f"{entry.dtype} tensor has elements ending in NUL bytes, which .npy "
                               "fixed-width bytes would drop", hint="pass allow_pickle=True to write an object array instead")
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(value.shape)
    width = max((len(x) for x in flat), default=1) or 1
    return np.array(flat, dtype=f"S{width}").reshape(value.shape)
