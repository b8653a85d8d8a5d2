"""Writing checkpoints to object storage: write and verify locally, then upload, index last.

A bundle becomes visible under its prefix only when its ``.index`` exists, and every object
store here publishes an object only when its upload completes (a single PUT, or the final call
of a multipart/resumable upload), so no partial object ever appears under a final name. The
data files go first and the index last; a failed upload removes what it had put. The output is
guarded like every other (:func:`formats.io.writing.guard_output`) before anything is written.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from formats.io import storage
from formats.io.writing import WriteReport, guard_output

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["upload_checkpoint", "write_then_upload"]


def _local_files(local_prefix: str) -> list[str]:
    directory, name = os.path.split(local_prefix)
    data = sorted(f for f in os.listdir(directory or ".") if f.startswith(name + ".data-"))
    return [os.path.join(directory, f) for f in data] + [local_prefix + ".index"]


def upload_checkpoint(local_prefix: str, url_prefix: str, *, force: bool = False) -> list[str]:
    """Upload a finished local bundle to ``url_prefix``: data files first, index last; return the URLs."""
    fs, _ = storage.filesystem(url_prefix)
    guard_output(url_prefix, [url_prefix + ".index"], force=force, what="output checkpoint")
    done: list[str] = []
    try:
        for local in _local_files(local_prefix):
            target = url_prefix + local[len(local_prefix):]
            fs.put_file(local, storage.filesystem(target)[1])
            done.append(target)
    except BaseException:
        for target in done:
            try:
                fs.rm_file(storage.filesystem(target)[1])
            except Exception:  # noqa: BLE001 - best effort clean-up; the original error matters
                pass
        raise
    return done


def write_then_upload(url_prefix: str, write_local: Callable[[str], WriteReport], *,
                      force: bool = False) -> WriteReport:
    """Write a bundle with ``write_local(local_prefix)`` (which writes and verifies it) in a local
    temporary directory, then upload it to ``url_prefix``; the report names the URLs."""
    scratch = tempfile.mkdtemp(prefix="ckpt-upload-")
    try:
        report = write_local(os.path.join(scratch, storage.basename(url_prefix)))
        report.files = upload_checkpoint(report.path, url_prefix, force=force)
        report.path = url_prefix
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
