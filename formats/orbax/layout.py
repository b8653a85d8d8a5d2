"""What an Orbax or T5X directory is, found from its file names alone, and the rules every path it names obeys.

Orbax writes one *item* directory per saved PyTree (``_METADATA``, and either OCDBT's ``manifest.ocdbt`` with
``ocdbt.process_*/`` and ``d/``, or one zarr directory per array, each with a ``.zarray``/``zarr.json``); a
``CheckpointManager`` writes *step* directories (``_CHECKPOINT_METADATA``) holding one item per name
(``default`` for a single one) under a *root* of numbered steps. T5X writes one directory per step
(``checkpoint_<N>``) with a msgpack ``checkpoint`` file beside its arrays' zarr directories.

Every name a checkpoint gives (a parameter name, a T5X ``kvstore.path``) must stay inside its directory: no
absolute path, no ``..``, no symbolic link anywhere under the directory that points outside it.
"""
from __future__ import annotations

import os

from formats.core.errors import CorruptCheckpointError, UnsupportedError

__all__ = ["ITEM", "STEP", "T5X", "kind_of", "items_of", "inside", "check_links", "zarr_dtype", "TMP_MARK",
           "MAX_FILES", "MAX_KEY_DEPTH", "T5X_FILE", "METADATA_FILE", "CHECKPOINT_METADATA_FILE"]

ITEM, STEP, T5X = "item", "step", "t5x"
METADATA_FILE = "_METADATA"
CHECKPOINT_METADATA_FILE = "_CHECKPOINT_METADATA"
OCDBT_MANIFEST = "manifest.ocdbt"
T5X_FILE = "checkpoint"
TMP_MARK = ".orbax-checkpoint-tmp"
MAX_FILES = 1_000_000
"""Most files looked at under one checkpoint directory."""
MAX_KEY_DEPTH = 64
"""Deepest PyTree path accepted."""
MAX_DIR_DEPTH = 32
"""Deepest folder nesting under a checkpoint directory (Orbax and T5X write two or three levels)."""


def _is_file(path: str) -> bool:
    return os.path.isfile(path) and not os.path.islink(path)


def _t5x_file(directory: str) -> bool:
    """A msgpack ``checkpoint`` file (a map: its first byte 0x80-0x8f, 0xde or 0xdf), not TensorFlow's text
    state file of the same name."""
    path = os.path.join(directory, T5X_FILE)
    if not _is_file(path):
        return False
    try:
        with open(path, "rb") as f:
            first = f.read(1)
    except OSError:
        return False
    return bool(first) and (0x80 <= first[0] <= 0x8F or first[0] in (0xDE, 0xDF))


def is_item(directory: str) -> bool:
    """Whether ``directory`` is one Orbax item (a PyTree's ``_METADATA``, or an OCDBT manifest)."""
    return _is_file(os.path.join(directory, METADATA_FILE)) or _is_file(os.path.join(directory, OCDBT_MANIFEST))


def items_of(directory: str) -> list[str]:
    """The item directories directly inside a step directory, sorted by name."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [n for n in names if not n.startswith(".") and TMP_MARK not in n
            and os.path.isdir(os.path.join(directory, n)) and not os.path.islink(os.path.join(directory, n))
            and is_item(os.path.join(directory, n))]


def kind_of(directory: str) -> str | None:
    """:data:`ITEM`, :data:`STEP`, :data:`T5X` or None for a local directory. A step holds items and either
    ``_CHECKPOINT_METADATA`` or a step's name (``12``, ``checkpoint_12``: Orbax before 0.5 wrote no metadata)."""
    if not os.path.isdir(directory) or TMP_MARK in os.path.basename(directory.rstrip(os.sep)):
        return None
    if is_item(directory):
        return ITEM
    if _t5x_file(directory):
        return T5X
    name = os.path.basename(os.path.abspath(directory))
    named_as_step = name.isdigit() or name.rpartition("_")[2].isdigit()
    if (_is_file(os.path.join(directory, CHECKPOINT_METADATA_FILE)) or named_as_step) and items_of(directory):
        return STEP  # a folder that merely holds items (a data folder) is no step: it has neither
    return None


def inside(root: str, name: str, what: str) -> str:
    """``root/name`` for a relative ``name`` that stays under ``root`` (no absolute path, no ``..``, no empty or
    NUL component); else a :class:`CorruptCheckpointError` saying that ``what`` points outside, nothing followed."""
    parts = name.replace("\\", "/").split("/")
    if not name or "\0" in name or os.path.isabs(name) or name.startswith(("/", "\\")) or ".." in parts \
            or (len(name) > 1 and name[1] == ":"):
        raise CorruptCheckpointError(root, f"{what} names {name!r}, outside the checkpoint directory; refused, "
                                           "not followed")
    return os.path.join(root, *[p for p in parts if p not in ("", ".")])


def check_links(root: str) -> list[str]:
    """Every regular file under ``root`` (sorted); a :class:`CorruptCheckpointError` for a symbolic link whose
    target lies outside ``root`` (it is never followed), for a name that is not UTF-8, for folders nested deeper
    than :data:`MAX_DIR_DEPTH`, or past :data:`MAX_FILES` files."""
    real_root = os.path.realpath(root)
    files: list[str] = []
    base = root.rstrip(os.sep).count(os.sep)
    for folder, dirs, names in os.walk(root, followlinks=False):
        if dirs and folder.rstrip(os.sep).count(os.sep) - base >= MAX_DIR_DEPTH:
            raise CorruptCheckpointError(root, f"its folders nest deeper than {MAX_DIR_DEPTH} levels "
                                               f"({os.path.relpath(folder, root)[:80]}/...); not read")
        for name in dirs + names:
            path = os.path.join(folder, name)
            _check_name(root, path, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if os.path.commonpath([real_root, target]) != real_root:
                    raise CorruptCheckpointError(root, f"{os.path.relpath(path, root)} is a link to {target}, "
                                                       "outside the checkpoint directory; refused, not followed")
        files += [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]
        if len(files) > MAX_FILES:
            raise UnsupportedError(root, f"holds more than {MAX_FILES:,} files; not read")
    return sorted(files)


def _check_name(root: str, path: str, name: str) -> None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise CorruptCheckpointError(root, f"{os.path.relpath(path, root)!r} is not a UTF-8 name; "
                                           "not read") from None


_TYPESTR = {"f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16", "i4": "int32",
            "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "b1": "bool",
            "c8": "complex64", "c16": "complex128"}
_NAMED = {"bfloat16", "float16", "float32", "float64", "int4", "uint4", "int2", "uint2", "int8", "int16", "int32",
          "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "float8_e5m2",
          "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz", "float4_e2m1fn"}


def zarr_dtype(declared: object) -> str | None:
    """ckpt's dtype name (:mod:`formats.core.dtypes`) for a zarr v2 ``dtype`` (``<f4``, ``bfloat16``), a zarr v3
    ``data_type`` or a tensorstore dtype name; None when it has none (big-endian data is read through
    tensorstore, which swaps it, so ``>f4`` is ``float32`` too)."""
    if not isinstance(declared, str):
        return None
    if declared in _NAMED:
        return declared
    if len(declared) >= 3 and declared[0] in "<>|=":
        return _TYPESTR.get(declared[1:])
    return None
