"""Which files make up a V1 checkpoint, as TensorFlow resolves them.

A V1 checkpoint is named by a prefix that is itself the file (``model.ckpt-30``), or by a file
pattern matching every file of a sharded save (``model.ckpt-?????-of-00003``, what ``Saver.save``
returns and the state file records); TensorFlow globs the pattern. ckpt also takes any one shard,
the ``.meta`` beside a checkpoint, or a sharded save's prefix (``model.ckpt``), and names the
checkpoint by its canonical path: the file, or the ``-?????-of-NNNNN`` pattern.
"""
from __future__ import annotations

import os
import stat

from formats.core.errors import CheckpointNotFoundError
from formats.io.sstable.block import FOOTER_SIZE, MAGIC_BYTES, TRAILER_SIZE
from formats.io.protowire import WireError, read_varint

__all__ = ["looks_like_v1", "canonical", "files_of", "find_v1", "has_glob", "MAX_FILES"]

MAX_FILES = 1 << 14
"""The most files one pattern may match."""
_SHARD = r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})$"
_SHARD_PATTERN = r"^(?P<prefix>.+)-\?{5}-of-(?P<count>\d{5})$"
# (re and glob are imported where a name is matched: telling that a file of another format is not a V1
# checkpoint, which every command on such a file asks first, needs neither: about 15 ms of start-up)
_DIGITS = "[0-9]" * 5
_NOT_V1 = (".index", ".meta", ".json", ".h5", ".hdf5", ".keras", ".npz", ".npy", ".txt", ".pb", ".pbtxt",
           ".safetensors", ".py", ".md")


def has_glob(path: str) -> bool:
    """Whether ``path`` is a pattern: it holds glob characters and names no existing file."""
    return any(c in path for c in "*?[") and not os.path.lexists(path)


def _glob(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted. An existing directory part is taken literally (``run[1]/``),
    and so is the prefix of a sharded save's pattern (``m[1]-?????-of-00003`` matches ``m[1]-00000-of-00003``)."""
    import glob
    import re

    directory, name = os.path.split(pattern)
    if directory and os.path.isdir(directory):
        directory = glob.escape(directory)
    shards = re.match(_SHARD_PATTERN, name)
    if shards is not None:
        name = f"{glob.escape(shards['prefix'])}-{_DIGITS}-of-{shards['count']}"
    return sorted(glob.glob(os.path.join(directory, name)))


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def looks_like_v1(path: str) -> bool:
    """Whether ``path`` is a regular file that starts like a V1 table: its first entry, under the empty
    key, holds a ``SavedTensorSliceMeta``. Reads 16 bytes (and the first block only when it is compressed)."""
    if not _regular(path) or path.endswith(".index"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            size = os.fstat(f.fileno()).st_size
            f.seek(max(size - 8, 0))
            tail = f.read(8)
    except OSError:
        return False
    if _head_is_meta(head):
        return True  # even when truncated: opening it then says what is wrong
    return size >= FOOTER_SIZE + TRAILER_SIZE and tail == MAGIC_BYTES and _first_entry_is_meta(path)


def _head_is_meta(head: bytes) -> bool:
    """An uncompressed first block: shared 0, key length 0, a value that opens ``meta`` (field 1), whose
    first field is a tensor (1) or the versions (2)."""
    if len(head) < 6 or head[0] != 0 or head[1] != 0:
        return False
    try:
        _, pos = read_varint(head, 2, len(head))
        if pos >= len(head) or head[pos] != 0x0A:
            return False
        length, pos = read_varint(head, pos + 1, len(head))
    except WireError:
        return False
    return length == 0 or (pos < len(head) and head[pos] in (0x0A, 0x12))


def _first_entry_is_meta(path: str) -> bool:
    """For tables whose first block is compressed: open the table and look at its first entry."""
    from formats.core.errors import CheckpointError
    from formats.tf_v1.meta import is_meta_value
    from formats.tf_v1.reader import open_table

    try:
        mm, table = open_table(path)
    except CheckpointError:
        return False
    try:
        first = table.entries(0)[:1] if table.blocks else []
        return bool(first) and first[0][0] == b"" and is_meta_value(first[0][1])
    except CheckpointError:
        return False
    finally:
        table.close()
        try:
            mm.close()
        except BufferError:
            pass


def _pattern_of(path: str) -> str | None:
    """``d/model.ckpt-00001-of-00003`` -> ``d/model.ckpt-?????-of-00003``; None for other names."""
    import re

    match = re.match(_SHARD, os.path.basename(path))
    if match is None:
        return None
    return os.path.join(os.path.dirname(path), f"{match['prefix']}-?????-of-{match['count']}")


def check_shards(pattern: str) -> None:
    """Raise unless every shard a ``-?????-of-NNNNN`` pattern promises exists."""
    import re

    match = re.match(_SHARD_PATTERN, os.path.basename(pattern))
    if match is None:
        return
    count = int(match["count"])
    stem = os.path.join(os.path.dirname(pattern), match["prefix"])
    for index in range(count):
        shard = f"{stem}-{index:05d}-of-{count:05d}"
        if not _regular(shard):
            raise CheckpointNotFoundError(shard, f"shard {index + 1} of {count} of V1 checkpoint "
                                          f"{os.path.basename(pattern)} is missing")


def files_of(path: str) -> list[str]:
    """The files of the V1 checkpoint named ``path`` (a file, or a pattern: its matches, sorted)."""
    if not has_glob(path):
        return [path]
    check_shards(path)
    matches = _glob(path)
    if not matches:
        raise CheckpointNotFoundError(path, "no file matches this V1 checkpoint pattern")
    if len(matches) > MAX_FILES:
        raise CheckpointNotFoundError(path, f"matches {len(matches)} files, more than the {MAX_FILES} "
                                      "of one checkpoint")
    return matches


def canonical(path: str) -> str | None:
    """The V1 checkpoint ``path`` names (the file, or a sharded save's pattern), None when it names none.
    A sharded save missing shards is still named (opening it says which shard is missing)."""
    if has_glob(path):
        return _from_pattern(path)
    if path.endswith(".meta") and _regular(path):
        path = path[:-len(".meta")]  # the MetaGraph's weights share its prefix
    if os.path.isfile(path + ".index"):
        return None  # a V2 bundle's prefix: TensorFlow reads that first
    if looks_like_v1(path):
        return _pattern_of(path) or path
    if os.path.exists(path):
        return None
    return _from_prefix(path)


def _from_pattern(pattern: str) -> str | None:
    matches = _glob(pattern)[:MAX_FILES + 1]
    if not matches or len(matches) > MAX_FILES or not all(looks_like_v1(m) for m in matches):
        return None
    return pattern


def _from_prefix(prefix: str) -> str | None:
    """A sharded save's prefix (``model.ckpt``) -> its pattern, when exactly one set of shards has it."""
    import glob

    shards = glob.glob(f"{glob.escape(prefix)}-{_DIGITS}-of-{_DIGITS}")
    patterns = sorted({p for p in map(_pattern_of, shards) if p is not None})
    if len(patterns) != 1 or not looks_like_v1(min(shards)):
        return None
    return patterns[0]


def find_v1(directory: str) -> list[str]:
    """Every V1 checkpoint directly inside ``directory``: single files, and each sharded save once (by
    its pattern), sorted."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found: list[str] = []
    patterns: set[str] = set()
    for name in names:
        if name == "checkpoint" or name.endswith(_NOT_V1) or ".data-" in name or ".tfevents." in name:
            continue
        path = os.path.join(directory, name)
        pattern = _pattern_of(path)
        if pattern in patterns or os.path.isfile(path + ".index") or not looks_like_v1(path):
            continue
        if pattern is None:
            found.append(path)
        else:
            patterns.add(pattern)
            found.append(pattern)
    return sorted(found)
