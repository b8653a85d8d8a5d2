"""TensorFlow's ``checkpoint_utils``: ``load_checkpoint``, ``load_variable``, ``list_variables``, ``checkpoints_iterator``.

As ``tensorflow/python/training/checkpoint_utils.py``: a directory means its latest checkpoint
(:func:`~formats.tf.checkpoint_management.latest_checkpoint`), and a directory without one raises
``ValueError("Couldn't find 'checkpoint' file or checkpoints in given directory ...")``;
``load_variable`` strips a trailing ``:0``. Beyond TensorFlow: a directory that is itself a
checkpoint of some format (a SavedModel, a Keras 3 directory) opens as that checkpoint, and
``load_variable``/``list_variables`` keep one reader per checkpoint (reopened when its files
change), so a script loading variables one by one reads the index once.
"""
from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator

from formats.io import storage
from formats.tf.checkpoint_management import latest_checkpoint
from formats.tf.log import log
from formats.tf.reader import CheckpointReader

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["load_checkpoint", "load_variable", "list_variables", "checkpoints_iterator", "wait_for_new_checkpoint"]

_CACHE_SIZE = 4


def _checkpoint_filename(ckpt_dir_or_file: Any) -> str:
    """The prefix or file a directory stands for; the path itself otherwise."""
    if isinstance(ckpt_dir_or_file, os.PathLike):
        ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    if not isinstance(ckpt_dir_or_file, (str, bytes)):
        raise TypeError(f"Expected binary or unicode string, got {ckpt_dir_or_file!r}")
    path = ckpt_dir_or_file.decode("utf-8", "surrogateescape") if isinstance(ckpt_dir_or_file, bytes) \
        else ckpt_dir_or_file
    if not path or not storage.isdir(path):
        return path
    latest = latest_checkpoint(path)
    if latest is not None:
        return latest
    from formats.discover.resolve import claim_directory

    if claim_directory(path) is not None:
        return path
    raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}")


def load_checkpoint(ckpt_dir_or_file: Any) -> CheckpointReader:
    """``tf.train.load_checkpoint``: a :class:`~formats.tf.reader.CheckpointReader` for a prefix,
    a file, or a directory's latest checkpoint."""
    return CheckpointReader(_checkpoint_filename(ckpt_dir_or_file))


class _Readers:
    """Readers by checkpoint path, the most recently used few kept open, each reopened when the
    checkpoint's files change (size or modification time)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.open: OrderedDict[str, tuple[tuple[Any, ...], CheckpointReader]] = OrderedDict()

    def get(self, path: str) -> CheckpointReader:
        with self.lock:
            held = self.open.pop(path, None)
            if held is not None and held[0] == _signature(held[1]):
                self.open[path] = held
                return held[1]
            if held is not None:
                held[1].close()
            reader = CheckpointReader(path)
            self.open[path] = (_signature(reader), reader)
            while len(self.open) > self.size:
                self.open.popitem(last=False)[1][1].close()
            return reader

    def clear(self) -> None:
        with self.lock:
            while self.open:
                self.open.popitem()[1][1].close()


def _signature(reader: CheckpointReader) -> tuple[Any, ...]:
    out: list[tuple[Any, ...]] = []
    for path in reader.checkpoint.files:
        if storage.is_url(path):
            continue
        try:
            st = os.stat(path)
        except OSError:
            out.append((path, None))
            continue
        out.append((path, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


_READERS = _Readers(_CACHE_SIZE)


def load_variable(ckpt_dir_or_file: Any, name: str) -> Any:
    """``tf.train.load_variable``: the value of ``name`` (a trailing ``:0`` is dropped) as numpy."""
    if name.endswith(":0"):
        name = name[:-2]
    return _READERS.get(_checkpoint_filename(ckpt_dir_or_file)).get_tensor(name)


def list_variables(ckpt_dir_or_file: Any) -> list[tuple[str, list[int]]]:
    """``tf.train.list_variables``: sorted ``(key, shape)`` pairs, shapes as lists of ints."""
    shapes = _READERS.get(_checkpoint_filename(ckpt_dir_or_file)).get_variable_to_shape_map()
    return [(key, shapes[key]) for key in sorted(shapes)]


def wait_for_new_checkpoint(checkpoint_dir: Any, last_checkpoint: str | None = None, seconds_to_sleep: float = 1,
                            timeout: float | None = None) -> str | None:
    """The directory's latest checkpoint once it is not ``last_checkpoint``; None when ``timeout``
    seconds (forever when None) would pass before the next look."""
    log.info("Waiting for new checkpoint at %s", checkpoint_dir)
    deadline = None if timeout is None else time.time() + timeout
    while True:
        found = latest_checkpoint(checkpoint_dir)
        if found is not None and found != last_checkpoint:
            log.info("Found new checkpoint at %s", found)
            return found
        if deadline is not None and time.time() + seconds_to_sleep > deadline:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir: Any, min_interval_secs: float = 0, timeout: float | None = None,
                         timeout_fn: Callable[[], bool] | None = None) -> Iterator[str]:
    """``tf.train.checkpoints_iterator``: each new latest checkpoint of the directory as it appears.

    Waits at most ``timeout`` seconds for the next one (forever when None), then stops unless
    ``timeout_fn`` is given and returns False. As in TensorFlow, ``timeout_fn`` is also asked after
    every checkpoint yielded, and at least ``min_interval_secs`` pass between two yields.
    """
    last = None
    while True:
        found = wait_for_new_checkpoint(checkpoint_dir, last, timeout=timeout)
        if found:
            yielded_at = time.time()
            last = found
            yield found
            pause = yielded_at + min_interval_secs - time.time()
            if pause > 0:
                time.sleep(pause)
        elif timeout_fn is None:
            log.info("Timed-out waiting for a checkpoint (without timeout_fn).")
            return
        if timeout_fn is not None and timeout_fn():
            log.info("Done. No new checkpoints will be generated.")
            return
