"""Progress bars on stderr for long work - only when stderr is a terminal and the work is large."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from collections.abc import Callable

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

LARGE = 64 << 20  # bytes of work below which no bar is worth drawing


@contextlib.contextmanager
def progress_for(ckpt: Any, label: str, total: int | None = None) -> Iterator[Callable[[int, int], None] | None]:
    """Yield a ``progress(bytes_done, tensors_done)`` callback, or None when no bar should show."""
    if total is None:
        total = sum(e.nbytes for e in ckpt.values())
    if not sys.stderr.isatty() or total < LARGE:
        yield None
        return
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)

    columns = [TextColumn(f"{label} [progress.description]{{task.description}}"), BarColumn(),
               DownloadColumn(binary_units=True), TransferSpeedColumn(), TimeRemainingColumn()]
    with Progress(*columns, transient=True, console=_stderr_console()) as bar:
        task = bar.add_task("", total=total)
        count = len(ckpt)

        def update(done: int, tensors: int) -> None:
            bar.update(task, completed=done, description=f"{tensors}/{count} tensors")

        yield update


def _stderr_console() -> Any:
    from .common import console

    return console(stderr=True)
