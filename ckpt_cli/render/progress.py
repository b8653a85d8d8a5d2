"""Progress bars on stderr for long work - only when stderr is a terminal and the work is large."""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

LARGE = 64 << 20  # bytes of work below which no bar is worth drawing


class progress_for:  # noqa: N801 - used as the function it was (``with progress_for(...)``); no contextlib (start-up)
    """``with progress_for(ckpt, label[, total]) as progress``: a ``progress(bytes_done, tensors_done)``
    callback drawing a bar on stderr, or None when no bar should show (stderr is no terminal, or the work is
    under :data:`LARGE` bytes). ``total`` defaults to the stored bytes of ``ckpt`` (and of ``also``)."""

    def __init__(self, ckpt: Any, label: str, total: int | None = None, also: Any = None) -> None:
        self.ckpt, self.label, self.also = ckpt, label, also
        self.total = total  # None: the checkpoint's stored bytes, added up only when a bar may show
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not sys.stderr.isatty():
            return None
        if self.total is None:
            self.total = self.ckpt.total_nbytes() + (0 if self.also is None else self.also.total_nbytes())
        if self.total < LARGE:
            return None
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        columns = [TextColumn(f"{self.label} [progress.description]{{task.description}}"), BarColumn(),
                   DownloadColumn(binary_units=True), TransferSpeedColumn(), TimeRemainingColumn()]
        self.bar = bar = Progress(*columns, transient=True, console=_stderr_console())
        bar.__enter__()
        task = bar.add_task("", total=self.total)
        count = len(self.ckpt)

        def update(done: int, tensors: int) -> None:
            bar.update(task, completed=done, description=f"{tensors}/{count} tensors")

        return update

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _stderr_console() -> Any:
    from .common import console

    return console(stderr=True)
