"""Writing checkpoints to object storage: write and verify locally, then upload, index last.

A bundle becomes visible under its prefix only when its ``.index`` exists, and every object
store here publishes an object only when its upload completes (a single PUT, or the final call
of a multipart/resumable upload), so no partial object ever appears under a final name. The
data files go first and the index last; a failed upload removes what it had put.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from formats.io import storage
from formats.core.errors import OutputExistsError, OutputIsInputError

__all__ = ["upload_checkpoint", "write_checkpoint_to"]


def _local_files(local_prefix: str) -> list[str]:
    directory, name = os.path.split(local_prefix)
    data = sorted(f for f in os.listdir(directory or ".") if f.startswith(name + ".data-"))
    return [os.path.join(directory, f) for f in data] + [local_prefix + ".index"]


def upload_checkpoint(local_prefix: str, url_prefix: str, *, force: bool = False) -> list[str]:
    """Upload a finished local bundle to ``url_prefix``: data files first, index last; return the URLs."""
    fs, _ = storage.filesystem(url_prefix)
    index_url = url_prefix + ".index"
    if not force and storage.isfile(index_url):
        raise OutputExistsError(url_prefix, "output checkpoint exists", hint="pass force=True to replace it")
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


def _refuse_input(url_prefix: str, tensors: Any, inputs: Any) -> None:
    """Refuse an output URL that is one of the checkpoints being read (a source's bundle or an input)."""
    from collections.abc import Mapping

    if isinstance(tensors, Mapping):
        sources = list(tensors.values())
    elif isinstance(tensors, (list, tuple)):
        sources = [pair[1] for pair in tensors]
    else:
        sources = []  # a one-shot iterator is not consumed here; ``inputs`` still guards it
    named = [getattr(getattr(s, "_reader", None), "prefix", None) for s in sources]
    named += [i if isinstance(i, str) else getattr(i, "path", None) for i in inputs]
    if url_prefix.rstrip("/") in {str(n).rstrip("/") for n in named if n}:
        raise OutputIsInputError(url_prefix, "output is the checkpoint being read; write elsewhere")


def write_checkpoint_to(url_prefix: str, tensors: Any, object_graph: Any = None, *, force: bool = False,
                        **options: Any) -> Any:
    """``write_checkpoint`` for a URL: written and verified in a local temporary directory, then uploaded."""
    from formats.tf_bundle.writer import write_checkpoint

    _refuse_input(url_prefix, tensors, options.get("inputs", ()))
    if not force and storage.isfile(url_prefix + ".index"):
        raise OutputExistsError(url_prefix, "output checkpoint exists", hint="pass force=True to replace it")
    scratch = tempfile.mkdtemp(prefix="ckpt-upload-")
    try:
        local = os.path.join(scratch, storage.basename(url_prefix))
        report = write_checkpoint(local, tensors, object_graph, **options)
        report.files = upload_checkpoint(local, url_prefix, force=force)
        report.prefix = url_prefix
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
