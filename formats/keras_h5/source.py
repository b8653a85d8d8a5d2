"""Open the HDF5 image behind a Keras file, in place: a file on disk, or the ``model.weights.h5``
member of a ``.keras`` zip archive (never extracted, never held whole in memory: a stored member is
read at its offset, a deflated one inflated on demand).

The structure is probed by libhdf5 in an isolated child (:func:`formats.keras_h5.image.open_image`);
its failures come back as one-line :class:`~formats.core.errors.CheckpointError` messages.
"""
from __future__ import annotations

import os

from formats.core.bounded_json import load_json
from formats.core.errors import CorruptCheckpointError, NotACheckpointError, UnsupportedError
from formats.io.zipped import (MAX_EXPANSION, ByteRange, InflatedMember, check_expansion, crc_problem, member_start,
                               member_stream, open_zip, read_member, stored_member_start)
from formats.keras_h5.image import H5Image, open_image
from formats.keras_h5.probe import h5py_error_message

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["H5Image", "open_hdf5_file", "open_keras_zip", "open_keras_dir", "h5py_error_message",
           "WEIGHTS_MEMBER", "NPZ_WEIGHTS_MEMBER", "SHARDED_MEMBER", "JSON_MEMBERS", "MAX_EXPANSION",
           "MAX_JSON_BYTES", "read_json_file", "refuse_npz_weights", "json_members"]

WEIGHTS_MEMBER = "model.weights.h5"
NPZ_WEIGHTS_MEMBER = "model.weights.npz"
SHARDED_MEMBER = "model.weights.json"
JSON_MEMBERS = ("config.json", "metadata.json")
MAX_JSON_BYTES = 64 << 20
"""Largest ``config.json`` / ``metadata.json`` / ``*.weights.json`` read (real ones are kilobytes)."""


def open_hdf5_file(path: str) -> H5Image:
    """Open an ``.h5`` file on disk (a regular file: never a FIFO or a device)."""
    import h5py

    if not os.path.isfile(path):
        raise CorruptCheckpointError(path, "not a regular file")
    size = os.path.getsize(path)
    return open_image(path, size, "file", ByteRange(path, 0, size), lambda: h5py.File(path, "r"))


def read_json_file(path: str, what: str) -> Any:
    """A JSON file on disk, bounded in size and depth (:func:`~formats.core.bounded_json.load_json`)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            raw = f.read(min(size, MAX_JSON_BYTES) + 1)  # never a buffer larger than the file
    except OSError as exc:
        raise CorruptCheckpointError(path, f"cannot read {what} ({exc.strerror})") from None
    return load_json(raw, path, what, max_bytes=MAX_JSON_BYTES)


def json_members(path: str, kind: str) -> dict[str, bytes]:
    """The bytes of ``config.json`` / ``metadata.json`` of a ``.keras`` archive (``kind`` ``zip``) or
    model directory (``dir``), as stored; absent ones are left out. Each is bounded like the parsed ones."""
    found: dict[str, bytes] = {}
    if kind == "dir":
        for name in JSON_MEMBERS:
            file = os.path.join(path, name)
            if os.path.isfile(file):
                _bounded(file, os.path.getsize(file), name)
                with open(file, "rb") as f:
                    found[name] = f.read(MAX_JSON_BYTES + 1)
                _bounded(file, len(found[name]), name)
        return found
    archive_size = os.path.getsize(path)
    zf = open_zip(path)
    try:
        for name in JSON_MEMBERS:
            if name in zf.namelist():
                info = zf.getinfo(name)
                _bounded(path, info.file_size, name)
                found[name] = read_member(zf, info, archive_size, path)
    finally:
        zf.close()
    return found


def _bounded(path: str, size: int, name: str) -> None:
    """A JSON member larger than :data:`MAX_JSON_BYTES` is refused (real ones are kilobytes)."""
    if size > MAX_JSON_BYTES:
        raise CorruptCheckpointError(path, f"{name} holds {size:,} bytes, more than {MAX_JSON_BYTES:,}")


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
            image = _open_compressed(path, info, archive_size)
    finally:
        zf.close()
    image.extras, image.notes = extras, notes
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
    import h5py

    start = stored_member_start(path, info, archive_size)
    image = open_image(path, info.file_size, "zip", ByteRange(path, start, info.file_size),
                       lambda: h5py.File(ByteRange(path, start, info.file_size), "r"))
    image.crc_check = lambda: crc_problem(path, start, info)
    return image


def _open_compressed(path: str, info: Any, archive_size: int) -> H5Image:
    """A deflated member, inflated on demand (its size bounded by the compressed size; never whole)."""
    import zipfile

    import h5py

    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise UnsupportedError(path, f"{info.filename} is compressed with method {info.compress_type}; only "
                                     "stored and deflated members are read")
    check_expansion(info, archive_size, path)
    start = member_start(path, info, archive_size)
    member = InflatedMember(path, info, start)
    try:
        member.readinto_at(0, bytearray(min(info.file_size, 4096)))  # a stream that is not deflate fails here
    except BaseException:
        member.close()
        raise
    # the child opens its own inflater: the parent's may be mid-read (and locked) in another thread
    image = open_image(path, info.file_size, "zip", member, lambda: h5py.File(InflatedMember(path, info, start), "r"))
    image.crc_check = member.crc_problem
    return image
