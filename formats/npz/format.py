"""The ``npz`` format's registry entry: NumPy ``.npz`` archives (``numpy.savez``, ``ckpt convert --to npz``,
``ckpt extract``), read without pickle."""
from __future__ import annotations

import os

from formats.core.model import Checkpoint, FormatName
from formats.io import storage

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from formats.core.format import Row
    from formats.core.model import TensorEntry
    from formats.io.writing import WriteReport

__all__ = ["FORMAT", "NpzFormat"]


class NpzFormat:
    """``.npz`` zip archives of ``.npy`` members."""

    name = FormatName.NPZ.value
    description = "NumPy .npz archive (numpy.savez, ckpt convert --to npz), read without pickle"
    suffixes = (".npz",)
    layouts = (FormatName.NPZ.value,)
    writes = (FormatName.NPZ.value,)
    streams_records = True

    def sniff(self, path: str) -> bool:
        """Whether ``path`` is a local zip archive named ``.npz``."""
        if not path.endswith(".npz") or storage.is_url(path) or not os.path.isfile(path):
            return False
        from formats.io.zipped import is_zip  # zlib and threading only for a .npz file

        return is_zip(path)

    def open(self, path: str) -> Checkpoint:
        """Open the archive (members are read when asked)."""
        from formats.npz import open_npz

        return open_npz(path)

    def write(self, output: str, rows: Sequence[Row], **how: Any) -> WriteReport:
        """Write an ``.npz`` (:func:`formats.npz.writer.write`)."""
        from formats.npz.writer import write

        return write(output, rows, **how)

    def unstorable(self, entry: TensorEntry) -> str | None:
        """Why ``entry`` cannot be an npz member (None when it can): a dtype numpy cannot describe, or
        strings whose fixed-width form would not be faithful or would be too large."""
        from formats.core.dtypes import by_name

        try:
            dt = by_name(entry.dtype)
        except ValueError:
            dt = None
        if dt is None or dt.numpy_name is None:
            return f"{entry.dtype} tensors cannot be stored in npz"
        if dt.fixed_width:  # (called once per tensor: nothing more imported for the usual case)
            return None
        from formats.core.sources import elements
        from formats.io.npy_output import fixed_width_problem

        return fixed_width_problem(entry.dtype, elements(entry))

    def storage_note(self, entry: TensorEntry) -> str:
        """How ``entry`` is stored when not as itself (a dtype numpy lacks, stored as its bits)."""
        from formats.io.npy_output import stored_name, stores_bits

        if stores_bits(entry.dtype):  # fixed-width ones only
            return f"stored as {stored_name(entry.dtype)} bits"
        return ""

    def key_problems(self, keys: Sequence[str]) -> dict[str, str]:
        """The ``keys`` that cannot name an npz member, each with why (in the order given)."""
        from formats.core.errors import InvalidOutputError
        from formats.io.npy_output import member_name, member_names_fine

        if member_names_fine(keys):
            return {}
        problems = {}
        for key in keys:
            try:
                member_name(key)
            except InvalidOutputError as exc:
                problems[key] = exc.message
        return problems


FORMAT = NpzFormat()
