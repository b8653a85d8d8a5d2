"""GPT-1's release (``openai-npy``) is read in bounded memory: a 300 MiB token table that straddles two shards is
verified and converted ``--to hf`` under an address-space limit below the table's size, and its bytes are
never assembled whole when read a piece at a time. Runs in a child process under RLIMIT_AS."""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from .limits import MiB, assert_clean, run_limited

LIMIT = 250 * MiB
"""Less than the token table itself (300 MiB); the conversion passed at 150 MiB, and failed at this limit when each
shard's part of an array was read in one piece (November 2026)."""
EMBD = 768
TOKENS = 300 * MiB // (4 * EMBD)
BLOCK = [[1, EMBD, 3 * EMBD], [3 * EMBD], [1, EMBD, EMBD], [EMBD], [EMBD], [EMBD], [1, EMBD, 4 * EMBD], [4 * EMBD],
         [1, 4 * EMBD, EMBD], [EMBD], [EMBD], [EMBD]]


def _write_shard(path: Path, values: int) -> None:
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, dtype="<f4"))
    header["shape"] = (values,)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        block = bytes(4 * MiB)
        left = 4 * values
        while left:
            f.write(block[:min(left, len(block))])
            left -= min(left, len(block))


@pytest.fixture(scope="module")
def big_release(tmp_path_factory) -> Iterator[Path]:
    """One block of GPT-1 at its real width with a 300 MiB token table, zeros, split into two shards (the reader takes
    any number; OpenAI's has ten); removed after the module's tests."""
    folder = tmp_path_factory.mktemp("gpt1") / "model"
    folder.mkdir()
    shapes = [[16, EMBD], [TOKENS, EMBD], *BLOCK]
    (folder / "params_shapes.json").write_text(json.dumps(shapes))
    total = sum(int(np.prod(s)) for s in shapes)
    sizes = [total // 2, total - total // 2]  # two shards: the table straddles their boundary
    for n, values in enumerate(sizes):
        _write_shard(folder / f"params_{n}.npy", values)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_large_release_converts_in_bounded_memory(big_release: Path, tmp_path: Path) -> None:
    limit = LIMIT
    assert_clean(run_limited("verify", big_release, memory=limit, seconds=240), 0)
    out = tmp_path / "hf"
    done = run_limited("convert", big_release, "-o", out, "--to", "hf", "--hparam", "n_head=12", memory=limit,
                       seconds=240)
    assert_clean(done, 0)
    assert done.stdout.splitlines()[-1] == (f"wrote {out}: 14 tensors, 327.1 MiB (hf), verified; 4 transformed; 0 errors, "
                                            "4 warnings")
    assert json.loads((out / "config.json").read_text())["vocab_size"] == TOKENS


def test_byte_chunks_never_read_an_array_whole(big_release: Path, monkeypatch) -> None:
    import formats
    from formats.openai_npy.reader import OpenAINpyTensor

    with formats.open_checkpoint(big_release) as ckpt:
        entry = ckpt["model/we/tokens"]
        assert len(set(entry.files)) == 2  # it straddles the shard boundary
        monkeypatch.setattr(OpenAINpyTensor, "read", lambda self: pytest.fail("read whole"))
        sizes = [len(c) for c in entry.byte_chunks(8 * MiB)]
    assert max(sizes) == 8 * MiB and sum(sizes) == 4 * TOKENS * EMBD
