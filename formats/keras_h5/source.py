"""Open the HDF5 image behind a Keras file, in place: a file on disk, or the ``model.weights.h5``
member of a ``.keras`` zip archive (never extracted to disk).

h5py's own exceptions (``OSError``, ``ValueError``, ``KeyError``) are turned into one-line
:class:`~formats.core.errors.CheckpointError` messages here.
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import Any

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError, NotACheckpointError, UnsupportedError
from formats.io.zipped import (MAX_EXPANSION, ByteRange, crc_problem, member_stream, open_zip, read_member,
                               stored_member_start)

__all__ = ["H5Image", "open_hdf5_file", "open_keras_zip", "open_keras_dir", "h5py_error_message",
           "WEIGHTS_MEMBER", "NPZ_WEIGHTS_MEMBER", "SHARDED_MEMBER", "JSON_MEMBERS", "MAX_EXPANSION",
           "MAX_JSON_BYTES", "read_json_file", "refuse_npz_weights"]

WEIGHTS_MEMBER = "model.weights.h5"
NPZ_WEIGHTS_MEMBER = "model.weights.npz"
SHARDED_MEMBER = "model.weights.json"
JSON_MEMBERS = ("config.json", "metadata.json")
MAX_JSON_BYTES = 64 << 20
"""Largest ``config.json`` / ``metadata.json`` / ``*.weights.json`` read (real ones are kilobytes)."""


@dataclass
class H5Image:
    """An opened HDF5 image: the h5py file, the size of its bytes, and what else the container held."""

    file: Any
    size: int
    container: str  # "file" or "zip"
    extras: dict[str, Any] = field(default_factory=dict)  # parsed config.json / metadata.json
    notes: list[tuple[str, str]] = field(default_factory=list)  # (where, problem) found while opening
    crc_check: Any = None  # callable returning an error message or None (zip members)
    _closers: list[Any] = field(default_factory=list)

    def close(self) -> None:
        """Close the h5py file, then whatever it was reading from."""
        for closer in [self.file.close, *self._closers]:
            try:
                closer()
            except Exception:  # noqa: BLE001 - closing must not raise
                pass


def h5py_error_message(exc: BaseException) -> str:
    """A short message for an h5py failure: ``truncated (1,000 of 65,908 bytes present)`` or h5py's detail."""
    text = str(exc)
    trunc = re.search(r"eof = (\d+).*stored_eof = (\d+)", text)
    if trunc:
        have, want = int(trunc.group(1)), int(trunc.group(2))
        return f"HDF5 file is truncated ({have:,} of {want:,} bytes present)"
    inner = re.search(r"\(([^()]*)\)[\s'\")]*$", text)
    detail = inner.group(1) if inner else text
    detail = " ".join(detail.split()) or type(exc).__name__
    return f"damaged HDF5 file ({detail})"


def _open_h5(name_or_file: Any, path: str) -> Any:
    import h5py

    try:
        return h5py.File(name_or_file, "r")
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise CorruptCheckpointError(path, h5py_error_message(exc)) from None


def open_hdf5_file(path: str) -> H5Image:
    """Open an ``.h5`` file on disk."""
    size = os.path.getsize(path)
    return H5Image(_open_h5(path, path), size, "file")


def read_json_file(path: str, what: str) -> Any:
    """A JSON file on disk, bounded in size and depth (:func:`~formats.core.bounded_json.load_json`)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            raw = f.read(min(size, MAX_JSON_BYTES) + 1)  # never a buffer larger than the file
    except OSError as exc:
        raise CorruptCheckpointError(path, f"cannot read {what} ({exc.strerror})") from None
    return load_json(raw, path, what, max_bytes=MAX_JSON_BYTES)


def _json_files(read: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``config.json`` / ``metadata.json`` parsed by ``read(name)`` (None when absent); damage is a note."""
    extras: dict[str, Any] = {}
    notes: list[tuple[str, str]] = []
    for name in JSON_MEMBERS:
        try:
            value = read(name)
        except CorruptCheckpointError as exc:
            notes.append((name, exc.message))
            continue
        if value is not None:
            extras[name] = value
    return extras, notes


def open_keras_dir(directory: str) -> H5Image:
    """Open ``model.weights.h5`` of an unzipped Keras 3 model directory, plus its JSON files."""
    names = set(os.listdir(directory))
    if WEIGHTS_MEMBER not in names:
        if NPZ_WEIGHTS_MEMBER in names:
            refuse_npz_weights(os.path.join(directory, NPZ_WEIGHTS_MEMBER))
        raise NotACheckpointError(directory, f"Keras model directory without {WEIGHTS_MEMBER}")

    def read(name: str) -> Any:
        path = os.path.join(directory, name)
        return read_json_file(path, name) if os.path.isfile(path) else None

    extras, notes = _json_files(read)
    image = open_hdf5_file(os.path.join(directory, WEIGHTS_MEMBER))
    image.extras, image.notes = extras, notes
    return image


def refuse_npz_weights(where: str, header: bytes = b"") -> None:
    """Refuse Keras' npz weights format: a dict per layer, pickled (never unpickled here)."""
    pickled = b"'descr': '|O'" in header
    how = "holds pickled Python objects" if pickled else "is Keras' npz weights format (a pickled dict per layer)"
    raise UnsupportedError(where, f"{NPZ_WEIGHTS_MEMBER} {how}; ckpt never unpickles, so it is not read "
                                  "(re-save the model with the default .h5 weights)")


def open_keras_zip(path: str) -> H5Image:
    """Open ``model.weights.h5`` inside a ``.keras`` archive, plus its ``config.json`` / ``metadata.json``."""
    import zipfile

    archive_size = os.path.getsize(path)
    zf = open_zip(path)
    try:
        info = _weights_member(zf, path, archive_size)
        names = set(zf.namelist())

        def read(name: str) -> Any:
            if name not in names:
                return None
            return load_json(read_member(zf, zf.getinfo(name), archive_size, path), path, name,
                             max_bytes=MAX_JSON_BYTES)

        extras, notes = _json_files(read)
        if info.compress_type == zipfile.ZIP_STORED:
            image = _open_stored(path, info, archive_size)
        else:
            image = _open_compressed(path, zf, info, archive_size)
    except BaseException:
        zf.close()
        raise
    image.extras, image.notes = extras, notes
    image._closers.append(zf.close)
    return image


def _weights_member(zf: Any, path: str, archive_size: int) -> Any:
    names = zf.namelist()
    if WEIGHTS_MEMBER in names:
        return zf.getinfo(WEIGHTS_MEMBER)
    if NPZ_WEIGHTS_MEMBER in names:
        with member_stream(zf, zf.getinfo(NPZ_WEIGHTS_MEMBER), archive_size, path) as member:
            head = member.read(4096)  # the first member's .npy header, if it is stored plainly
        refuse_npz_weights(path, head)
    if SHARDED_MEMBER in names:
        raise UnsupportedError(path, f"sharded .keras archive ({SHARDED_MEMBER}): not supported")
    raise NotACheckpointError(path, f"zip archive without {WEIGHTS_MEMBER}: not a Keras .keras file")


def _open_stored(path: str, info: Any, archive_size: int) -> H5Image:
    start = stored_member_start(path, info, archive_size)
    view = ByteRange(path, start, info.file_size)
    try:
        h5 = _open_h5(view, path)
    except BaseException:
        view.close()
        raise
    image = H5Image(h5, info.file_size, "zip", crc_check=lambda: crc_problem(path, start, info))
    image._closers.append(view.close)
    return image


def _open_compressed(path: str, zf: Any, info: Any, archive_size: int) -> H5Image:
    data = read_member(zf, info, archive_size, path)  # zipfile checks the CRC at the end of the stream
    return H5Image(_open_h5(io.BytesIO(data), path), len(data), "zip")
