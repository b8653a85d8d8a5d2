"""Saying what a file is when no format reads it (a Git LFS pointer, an HTML page, a V1 table...)."""
from __future__ import annotations

import os

__all__ = ["describe_foreign", "describe_file"]

_SSTABLE_MAGIC = bytes.fromhex("57fb808b247547db")


def describe_file(path: str) -> str:
    """A one-line description of a local file that no format claims."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
            size = os.fstat(f.fileno()).st_size
            f.seek(max(size - 8, 0))
            tail = f.read(8)
    except OSError as exc:
        return f"cannot read ({exc.strerror})"
    return describe_foreign(head, tail, size, path)


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
        return ("is a TensorFlow table but not a V1 checkpoint (its first entry lists no tensors); "
                "a bundle's .index file under another name?")
    if head.startswith(b"model_checkpoint_path"):
        return "is a checkpoint state file; pass its directory instead"
    if head.startswith(b"\x93NUMPY"):
        return "is a numpy .npy file, not a checkpoint"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "is a zip archive that holds no Keras model (no model.weights.h5) and is not named .npz"
    return "not a checkpoint: unrecognised content (expected a TensorFlow bundle or a Keras weights file)"
