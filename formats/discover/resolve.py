"""Turn what people type (a prefix, an ``.index``/``.data`` file, a weights file, a directory)
into one checkpoint, and sniff what a file is before any reader touches it."""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

from formats.io import storage
from formats.core.errors import (AmbiguousCheckpointError, CheckpointNotFoundError, NotACheckpointError,
                     UnsupportedError)
from formats.concepts.state import STATE_FILE, CheckpointState, read_state

__all__ = ["Target", "resolve", "sniff_file", "bundle_prefixes", "WEIGHT_SUFFIXES"]

_BUNDLE_FILE = re.compile(r"^(.*)\.(index|data-\d{5}-of-\d{5})$")
_SSTABLE_MAGIC = bytes.fromhex("57fb808b247547db")
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
WEIGHT_SUFFIXES = (".h5", ".hdf5", ".keras")


@dataclass(frozen=True)
class Target:
    """A resolved checkpoint: ``kind`` is ``tf-bundle`` (``path`` is the prefix), ``hdf5`` or ``zip``."""

    kind: str
    path: str


def resolve(path: str | os.PathLike[str]) -> Target:
    """Resolve a user-supplied path to one checkpoint, or raise a CheckpointError saying why not."""
    p = os.fspath(path)
    if storage.is_url(p):
        try:
            return _resolve_url(p.rstrip("/"))
        except UnsupportedError as exc:  # name the URL as typed, not the object probed
            raise UnsupportedError(p, exc.message) from None
    if p != os.sep:
        p = p.rstrip(os.sep) or p
    if os.path.isdir(p):
        return _resolve_dir(p)
    match = _BUNDLE_FILE.match(p)
    if match and os.path.isfile(p):
        prefix = match.group(1)
        if os.path.isfile(prefix + ".index"):
            return Target("tf-bundle", prefix)
        raise CheckpointNotFoundError(prefix + ".index", f"index file missing (needed to read {os.path.basename(p)})")
    if os.path.isfile(p + ".index"):
        return Target("tf-bundle", p)
    if p.endswith(".meta") and os.path.isfile(p[:-len(".meta")] + ".index"):
        return Target("tf-bundle", p[:-len(".meta")])  # the MetaGraph's weights share its prefix
    if os.path.isfile(p):
        return Target(sniff_file(p), p)
    raise CheckpointNotFoundError(p, "no such file, directory or checkpoint prefix", hint=_did_you_mean(p))


def _did_you_mean(p: str) -> str | None:
    near = sorted(glob.glob(glob.escape(p) + "*.index"))[:3]
    if not near:
        return None
    return "did you mean " + ", ".join(n[:-len(".index")] for n in near) + "?"


def sniff_file(path: str) -> str:
    """``hdf5`` or ``zip`` for files a reader handles; otherwise a NotACheckpointError saying what the file is."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
            size = os.fstat(f.fileno()).st_size
            f.seek(max(size - 8, 0))
            tail = f.read(8)
    except OSError as exc:
        raise CheckpointNotFoundError(path, f"cannot read ({exc.strerror})") from None
    if head.startswith(_HDF5_MAGIC) or (size > 512 and _has_hdf5_userblock(path)):
        return "hdf5"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    raise NotACheckpointError(path, describe_foreign(head, tail, size, path))


def _has_hdf5_userblock(path: str) -> bool:
    with open(path, "rb") as f:
        for offset in (512, 1024, 2048, 4096):
            f.seek(offset)
            if f.read(8) == _HDF5_MAGIC:
                return True
    return False


def describe_foreign(head: bytes, tail: bytes, size: int, path: str) -> str:
    """A one-line description of a file that is not a checkpoint ckpt can read."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    if size == 0:
        return "file is empty"
    if head.startswith(b"version https://git-lfs"):
        return "is a Git LFS pointer, not the file itself (run `git lfs pull`)"
    if text.startswith((b"<!doctype html", b"<html", b"<?xml")) or (text.startswith(b"<") and b"<html" in text):
        return "is an HTML/XML page, not a checkpoint (a failed download?)"
    if tail == _SSTABLE_MAGIC:
        if path.endswith(".index"):
            return "is an index file without its prefix layout"
        return "is a single-file TensorFlow table: a V1 checkpoint (not supported; re-save with TF2)"
    if head.startswith(b"model_checkpoint_path"):
        return "is a checkpoint state file; pass its directory instead"
    if head.startswith(b"\x93NUMPY"):
        return "is a numpy .npy file, not a checkpoint"
    return "not a checkpoint: unrecognised content (expected a TensorFlow bundle or a Keras weights file)"


def _resolve_url(url: str) -> Target:
    """Resolution for fsspec URLs: the same rules as local paths, with as few requests as possible."""
    match = _BUNDLE_FILE.match(url)
    if match and storage.isfile(match.group(1) + ".index"):
        return Target("tf-bundle", match.group(1))
    if storage.isfile(url + ".index"):
        return Target("tf-bundle", url)
    if storage.isfile(url):
        if url.endswith(WEIGHT_SUFFIXES):
            raise UnsupportedError(url, "Keras/HDF5 files are read from local disk only; download it first")
        raise NotACheckpointError(url, "not a checkpoint (pass a bundle prefix or a directory)")
    if storage.isdir(url):
        return _resolve_dir(url)
    raise CheckpointNotFoundError(url, "no such object, directory or checkpoint prefix")


def bundle_prefixes(directory: str) -> list[str]:
    """Prefixes of every bundle (``*.index``) directly inside ``directory`` (path or URL), sorted."""
    return sorted(p[:-len(".index")] for p in storage.glob(directory, "*.index"))


def weight_files(directory: str) -> list[str]:
    """Keras weight files (``*.h5``, ``*.hdf5``, ``*.keras``) directly inside ``directory``, sorted."""
    if storage.is_url(directory):
        return []
    found = []
    for suffix in WEIGHT_SUFFIXES:
        found += glob.glob(os.path.join(glob.escape(directory), "*" + suffix))
    return sorted(found)


def locate_named(directory: str, named: str, known: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The existing prefix a state file's path ``named`` means: as written (relative to ``directory``),
    else its basename in ``directory`` (absolute paths go stale when runs are copied); None if neither.
    Prefixes in ``known`` are taken as existing without probing the storage."""
    if storage.is_url(directory):
        options = [storage.join(directory, named.lstrip("/")), storage.join(directory, os.path.basename(named))]
        for option in dict.fromkeys(options):
            if option in known or storage.isfile(option + ".index"):
                return option
        return None
    candidate = named if os.path.isabs(named) else os.path.join(directory, named)
    for option in (candidate, os.path.join(directory, os.path.basename(named))):
        if os.path.isfile(option + ".index") and not os.path.isdir(option):
            return os.path.normpath(option)
    return None


def latest_from_state(directory: str, state: CheckpointState | None = None) -> str | None:
    """The prefix the directory's state file (or ``state``, already read) names as latest, or None."""
    state = read_state(directory) if state is None else state
    if state is None:
        return None
    named = state.model_checkpoint_path
    found = locate_named(directory, named)
    if found is not None:
        return found
    raise CheckpointNotFoundError(storage.join(directory, STATE_FILE),
                                  f"names {named!r} as the latest checkpoint, but {named}.index does not exist")


def _resolve_dir(directory: str) -> Target:
    latest = latest_from_state(directory)
    if latest is not None:
        return Target("tf-bundle", latest)
    found = [Target("tf-bundle", p) for p in bundle_prefixes(directory)]
    found += [Target(_kind_of(f), f) for f in weight_files(directory)]
    if len(found) == 1:
        return found[0]
    if not found and storage.is_url(directory):
        raise NotACheckpointError(directory, "no checkpoint under this prefix (no 'checkpoint' state file, no *.index)")
    if not found:
        nested = glob.glob(os.path.join(glob.escape(directory), "**", "*.index"), recursive=True)
        raise NotACheckpointError(directory, "no checkpoint in this directory "
                                  "(no 'checkpoint' state file, no *.index, no Keras weights file)",
                                  hint="its subdirectories hold checkpoints: try `ckpt ls -r`" if nested else None)
    names = ", ".join(os.path.basename(t.path) for t in found)
    raise AmbiguousCheckpointError(directory, f"holds {len(found)} checkpoints and no state file names one: "
                                   f"{names}", hint="pass one of them")


def _kind_of(path: str) -> str:
    try:
        return sniff_file(path)
    except NotACheckpointError:
        return "unknown"


def check_supported(target: Target) -> None:
    """Raise for targets no reader handles."""
    if target.kind not in ("tf-bundle", "hdf5", "zip"):
        raise UnsupportedError(target.path, "not a checkpoint ckpt can read")
