"""Issue 37 #6 / issue 38 (writers at the speed of a copy): a safetensors file (``--to safetensors``, each shard of
``--to hf``) is read back while its last pieces are still being flushed to disk, not after: the final flush starts
as soon as the last byte is written, the read-back runs beside it, and the file is published only once both are
done. Events are recorded in order, with a flush slowed down so that the order is not left to chance."""
from __future__ import annotations

import os
import threading
import time

import numpy as np

from formats import write_checkpoint


def _events(monkeypatch, slow: float = 0.3) -> list[tuple[str, float]]:
    """Record (what, when) of every fdatasync's start and end (each made to take ``slow`` s), of the call asking
    for the last flush, of the read-back's start and end, and of the publication."""
    from formats.io import atomic, background_sync, placed
    from formats.safetensors import writer

    events: list[tuple[str, float]] = []
    lock = threading.Lock()

    def note(what: str) -> None:
        with lock:
            events.append((what, time.monotonic()))

    real_sync, real_check, real_publish = os.fdatasync, placed.check_placed, atomic.publish_file
    real_rest = background_sync.BackgroundSync.flush_rest

    def flush_rest(self):  # type: ignore[no-untyped-def]
        note("last flush asked")
        return real_rest(self)

    def fdatasync(fd: int) -> None:
        note("flush starts")
        time.sleep(slow)
        real_sync(fd)
        note("flush ends")

    def check_placed(*args, **kwargs):
        note("read-back starts")
        try:
            return real_check(*args, **kwargs)
        finally:
            note("read-back ends")

    def publish_file(*args, **kwargs):
        note("published")
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(background_sync.os, "fdatasync", fdatasync)
    monkeypatch.setattr(background_sync.BackgroundSync, "EVERY", 1 << 20)
    monkeypatch.setattr(background_sync.BackgroundSync, "SMALL", 1 << 16, raising=False)
    monkeypatch.setattr(background_sync.BackgroundSync, "flush_rest", flush_rest)
    monkeypatch.setattr(writer, "check_placed", check_placed)
    monkeypatch.setattr(atomic, "publish_file", publish_file)
    return events


def test_the_read_back_runs_while_the_last_pieces_are_flushed(tmp_path, monkeypatch):
    """The last flush is under way when the read-back starts (before: the read-back waited for the flush in
    progress, and the bytes after it waited for the final fsync); the file is published after both, and it holds
    what was written."""
    from safetensors.numpy import load_file

    from formats import verbs

    values = {f"layer_{i}/w": np.arange(i, i + 300_000, dtype=np.float32) for i in range(8)}  # 9.6 MB
    prefix = str(tmp_path / "in" / "ckpt-1")
    write_checkpoint(prefix, values.items())
    events = _events(monkeypatch)
    out = str(tmp_path / "out.safetensors")
    result = verbs.convert(prefix, out, to="safetensors")
    assert result.ok and result.written.verified
    names = [what for what, _ in events]
    assert names.count("read-back starts") == 1 and names[-1] == "published", names
    start = names.index("read-back starts")
    assert names.count("last flush asked") == 1 and names.index("last flush asked") < start, names
    # the final flush was asked for before the read-back began (its thread may enter fdatasync a moment after the
    # read-back starts, on a busy machine)... and it ended after the read-back had begun
    last_flush = max(i for i, what in enumerate(names) if what == "flush starts")
    assert last_flush > names.index("last flush asked"), names
    assert names.index("flush ends", last_flush) > start, names
    assert names.index("published") > names.index("read-back ends")
    loaded = load_file(out)
    for key, value in values.items():
        np.testing.assert_array_equal(loaded[key], value)


def test_a_small_file_starts_no_flushing_thread(tmp_path, monkeypatch):
    """Under :attr:`BackgroundSync.SMALL` bytes, nothing is flushed in the background: the final fsync alone."""
    from formats import verbs

    prefix = str(tmp_path / "in" / "ckpt-1")
    write_checkpoint(prefix, [("w", np.arange(100, dtype=np.float32))])
    events = _events(monkeypatch)
    result = verbs.convert(prefix, str(tmp_path / "out.safetensors"), to="safetensors")
    assert result.ok and result.written.verified
    assert [what for what, _ in events] == ["last flush asked", "read-back starts", "read-back ends", "published"]


def test_the_last_flush_is_not_lost_when_asked_for_during_another(tmp_path, monkeypatch):
    """flush_rest() while a periodic flush is under way, and close() before that flush ends: the thread flushes once
    more (the bytes written after the first flush began), rather than returning when the first one ends."""
    from formats.io import background_sync

    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def fdatasync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            entered.set()
            assert release.wait(10)

    monkeypatch.setattr(background_sync.os, "fdatasync", fdatasync)
    with open(tmp_path / "f", "wb") as f:
        fd = f.fileno()
        syncer = background_sync.BackgroundSync(fd)
        syncer.wrote(syncer.EVERY)  # the periodic flush starts, and is held
        assert entered.wait(10)
        syncer.flush_rest()  # more bytes were written meanwhile: flush them too
        closing = threading.Thread(target=syncer.close)
        closing.start()
        while not syncer.done:
            time.sleep(0.001)
        release.set()
        closing.join(10)
        assert not closing.is_alive()
    assert calls == [fd, fd]
