"""Bytes written in pieces and read again from the start once their length is known: a header that must name its
own length (a safetensors header, an npz record's ``.npy`` header) before it is written out. In memory up to a
limit, then in an anonymous temporary file; :mod:`tempfile` (which imports :mod:`random`, :mod:`shutil` and
:mod:`re`) is imported only then, so a small write's start-up does not pay for it."""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import IO, Any

__all__ = ["Spool"]


class Spool:
    """Bytes kept in the order written: a list of pieces up to ``limit`` bytes, then a temporary file (deleted
    when closed). ``size`` is the number of bytes written."""

    __slots__ = ("limit", "size", "_pieces", "_file")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._pieces: list[bytes] = []
        self._file: IO[bytes] | None = None

    def write(self, data: bytes) -> int:
        """Keep ``data`` after what was written; return its length."""
        if self._file is None and self.size + len(data) > self.limit:
            import tempfile

            self._file = tempfile.TemporaryFile()
            self._file.writelines(self._pieces)
            self._pieces = []
        if self._file is not None:
            self._file.write(data)
        else:
            self._pieces.append(data)
        self.size += len(data)
        return len(data)

    def chunks(self, size: int) -> Iterator[bytes]:
        """What was written, from the start, in chunks of ``size`` bytes (the last of at most ``size``); pieces held
        in memory are joined a chunk at a time, not all at once (a second copy of what is held was the peak of an
        npz's close)."""
        if self._file is None:
            chunk: list[memoryview] = []
            held = 0
            for piece in self._pieces:
                view = memoryview(piece)
                while view:
                    part = view[:size - held]
                    chunk.append(part)
                    held += len(part)
                    view = view[len(part):]
                    if held == size:
                        yield b"".join(chunk)
                        chunk, held = [], 0
            if chunk:
                yield b"".join(chunk)
            return
        self._file.seek(0)
        while data := self._file.read(size):
            yield data

    def cut(self, at: int, size: int) -> None:
        """Leave out the ``size`` bytes written from ``at`` on (what was written is copied a chunk at a time)."""
        rest = Spool(self.limit)
        done = 0
        for chunk in self.chunks(1 << 20):
            end = done + len(chunk)
            if end <= at or done >= at + size:
                rest.write(chunk)
            else:
                rest.write(chunk[:max(0, at - done)] + chunk[max(0, at + size - done):])
            done = end
        self.close()
        self.size, self._pieces, self._file = rest.size, rest._pieces, rest._file

    def close(self) -> None:
        """Let go of the bytes (the temporary file is deleted)."""
        self._pieces = []
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
