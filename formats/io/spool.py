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
        """What was written, from the start, in chunks of at most ``size`` bytes."""
        if self._file is None:
            data = b"".join(self._pieces)
            for at in range(0, len(data), size):
                yield data[at:at + size]
            return
        self._file.seek(0)
        while chunk := self._file.read(size):
            yield chunk

    def close(self) -> None:
        """Let go of the bytes (the temporary file is deleted)."""
        self._pieces = []
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
