"""The checkpoints and command lines of ``test_render_scale.py``: small name-based bundles whose rows cover
what the table renderers meet (hostile and non-ASCII keys, NaN and Inf, ints, bools, several dtypes and
shapes), and the command lines whose exact output ``tests/data/render_scale/`` holds (written by ckpt at
f5c3622, before the column-at-a-time renderers: the same bytes must come out)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from formats import write_checkpoint

HOSTILE = ["evil/\x1b[31mred", "evil/bell\x07", "evil/tab\there", "uni/\u00e9t\u00e9/\u00df", "uni/\u202eright",
           "bytes/\udcff", "model/layer_10/unit_2/w", "model/layer_2/unit_10/w"]
"""Keys a table must escape or align with care (a control character, a format character, an undecodable
byte, non-ASCII letters), and keys that sort differently in natural order."""


def _tensors(n: int, changed: bool = False) -> list[tuple[str, np.ndarray]]:
    out: list[tuple[str, np.ndarray]] = []
    for i in range(n):
        key = f"model/layer_{i // 10}/unit_{i % 10}/{'w' if i % 3 else 'b'}"
        kind = i % 6
        if kind == 0:
            value = np.arange(i % 5 + 1, dtype=np.float32) * (i + 0.5) - 3
        elif kind == 1:
            value = np.full((2, 3), i, np.int32)
        elif kind == 2:
            value = np.array([True, False, i % 2 == 0])
        elif kind == 3:
            value = np.linspace(-1e-7, 1e9, 7).astype(np.float64) * (i + 1)
        elif kind == 4:
            value = np.zeros((3, 1, 2), np.float16)
        else:
            value = np.array([1.0, np.nan if i % 4 == 1 else 2.0, np.inf if i % 5 == 0 else -3.25], np.float32)
        if changed and i % 7 == 3:
            value = value.astype(np.float64) + 1 if value.dtype != bool else ~value
        if changed and i % 11 == 5:
            value = np.concatenate([value.reshape(-1), value.reshape(-1)])
        if changed and i % 13 == 4:
            continue
        out.append((key, value))
    for j, key in enumerate(HOSTILE):
        out.append((key, np.full((j + 1,), j - 2.5, np.float32)))
    if changed:
        out.append(("extra/only_in_b", np.ones((2,), np.float32)))
    return out


def make_bundles(folder: Path, n: int = 60) -> dict[str, str]:
    """``{"a": prefix, "b": prefix, "o": prefix}``: a bundle of ``n`` tensors plus :data:`HOSTILE`, one with
    some of them changed (values, dtypes, shapes), some left out and one added, and ``a`` object-based."""
    out = {}
    for name, changed in (("a", False), ("b", True)):
        prefix = str(folder / name / "ckpt-1")
        write_checkpoint(prefix, _tensors(n, changed), force=True, verify=False)
        out[name] = prefix
    from click.testing import CliRunner

    from tests.conftest import SHIPPED

    out["o"] = str(folder / "o" / "ckpt-1")
    result = CliRunner().invoke(SHIPPED, ["convert", out["a"], "--to", "tf-object", "-o", out["o"]])
    assert result.exit_code == 0, result.output
    return out


COMMANDS = {
    "tree": ["ls", "--tree", "{a}"],
    "tree_object": ["ls", "--tree", "{o}"],
    "stats": ["stats", "--jobs", "1", "{a}"],
    "stats_finite": ["stats", "--jobs", "1", "--check-finite", "--names", "{a}"],
    "stats_columns": ["stats", "--jobs", "1", "--columns", "mean,NaN,shape", "{b}"],
    "rename_dry": ["rename", "{a}", "-o", "{out}/r/ckpt-1", "--map", "model=net", "--dry-run"],
    "rename_dry_all": ["rename", "{a}", "-o", "{out}/r/ckpt-1", "--map", "model/layer_1=net", "--dry-run", "--all"],
    "edit_dry": ["edit", "{a}", "-o", "{out}/e/ckpt-1", "--dry-run", "--exclude", "model/layer_1*"],
    "edit_cast_dry": ["edit", "{a}", "-o", "{out}/e/ckpt-1", "--dry-run", "--cast", "float32=float16"],
    "diff": ["diff", "--jobs", "1", "{a}", "{b}"],
    "diff_names": ["diff", "--jobs", "1", "--names", "{a}", "{b}"],
    "diff_keys": ["diff", "--jobs", "1", "--keys-only", "{b}", "{a}"],
}
"""Name -> the command line (``{a}``, ``{b}``: the bundles; ``{out}``: a scratch folder)."""

WRITERS = {
    "rename": ["rename", "{a}", "-o", "{out}/r/ckpt-1", "--map", "model=net"],
    "edit": ["edit", "{a}", "-o", "{out}/e/ckpt-1", "--exclude", "model/layer_1*"],
    "edit_cast": ["edit", "{a}", "-o", "{out}/e/ckpt-1", "--cast", "float32=float16"],
}
"""Name -> a command line writing ``{out}/r`` or ``{out}/e``: the files it writes are compared by hash."""


def argv(line: list[str], paths: dict[str, str], out: str) -> list[str]:
    """``line`` with its placeholders filled in."""
    return [word.format(out=out, **paths) for word in line]
