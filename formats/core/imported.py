"""Whether the process has imported numpy already (issue 38). Array code for many tiny entries - an index's blocks
found, a table's runs laid, tiny tensors' checksums - is used where numpy is imported, or where the input is large
enough to repay its import (about 0.13 s of CPU and 17 MiB); a small command never imports it for them."""
from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["imported_numpy"]


def imported_numpy() -> Any | None:
    """numpy, when the process has imported it already; else None (not imported for this)."""
    return sys.modules.get("numpy")
