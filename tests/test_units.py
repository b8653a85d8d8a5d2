"""How byte counts are written for people (formats.core.units.human_bytes): every unit up to YiB, never a
thousand-digit number of TiB for a crafted shape (noticed in issue 39's review: ``4398046511104.0 TiB``)."""
from __future__ import annotations

import pytest

from formats.core import units


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (1024 ** 2 - 1, "1024.0 KiB"),
    (5 * 1024 ** 3, "5.0 GiB"), (1024 ** 4, "1.0 TiB"), (1023 * 1024 ** 4, "1023.0 TiB"), (1024 ** 5, "1.0 PiB"),
    (1024 ** 6, "1.0 EiB"), (1024 ** 7, "1.0 ZiB"), (2 ** 40 * 2 ** 40 * 4, "4.0 YiB"),
    (2000 * 1024 ** 8, "2.0e+03 YiB"), (2 ** 100, "1.0e+06 YiB"),
])
def test_each_unit(n: int, text: str) -> None:
    assert units.human_bytes(n) == text
