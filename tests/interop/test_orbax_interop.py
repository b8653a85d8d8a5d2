"""Optional tier: orbax-checkpoint itself writes fresh checkpoints (JAX on CPU), and ckpt's read equals Orbax's
``restore()`` bit for bit: ``StandardCheckpointer`` and ``PyTreeCheckpointer`` (OCDBT and ``use_ocdbt=False``, zarr
v2 and ``use_zarr3=True``),
a ``CheckpointManager`` with several steps and two items, arrays big enough to span many chunks, bfloat16,
float8, int4 and integer arrays, nested dicts and lists. Needs jax (CPU) and orbax-checkpoint, e.g.:

    python -m venv /tmp/orbax && /tmp/orbax/bin/pip install 'jax[cpu]' orbax-checkpoint '.[test]'
    /tmp/orbax/bin/python -m pytest -m interop tests/interop/test_orbax_interop.py

Skipped where either is missing.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.interop

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
ocp = pytest.importorskip("orbax.checkpoint")
jnp = jax.numpy

import formats  # noqa: E402


@pytest.fixture(autouse=True)
def _x64() -> Any:
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


def tree(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {"embed": jnp.asarray(rng.standard_normal((300, 64)), dtype=jnp.bfloat16),
            "blocks": [{"w": jnp.asarray(rng.standard_normal((64, 64)), dtype=jnp.float32),
                        "b": jnp.arange(64, dtype=jnp.int32) * seed} for _ in range(3)],
            "quant": {"q4": jnp.asarray(rng.integers(-8, 8, 50), dtype=jnp.int4),
                      "f8": jnp.asarray(rng.standard_normal(20), dtype=jnp.float8_e5m2),
                      "count": jnp.asarray(seed, dtype=jnp.int64)}}


def flat(restored: Any, prefix: str = "") -> dict[str, np.ndarray]:
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(restored)[0]:
        key = "/".join(str(getattr(p, "key", getattr(p, "idx", p))) for p in path)
        out[prefix + key] = np.asarray(leaf)
    return out


def same_as(path: Path, want: dict[str, np.ndarray]) -> None:
    with formats.open_checkpoint(path) as ckpt:
        assert sorted(ckpt) == sorted(want)
        for key, value in want.items():
            got = ckpt[key].read()
            assert (got.shape, got.dtype) == (value.shape, value.dtype), key
            assert got.tobytes() == np.ascontiguousarray(value).tobytes(), key
            ckpt[key].check()


def test_standard_checkpointer(tmp_path: Path) -> None:
    with ocp.StandardCheckpointer() as ckptr:
        ckptr.save(tmp_path / "s", tree(1))
        ckptr.wait_until_finished()
        restored = ckptr.restore(tmp_path / "s")
    same_as(tmp_path / "s", flat(restored))


@pytest.mark.parametrize("ocdbt,zarr3", [(True, False), (False, False), (True, True), (False, True)])
def test_pytree_checkpointer(tmp_path: Path, ocdbt: bool, zarr3: bool) -> None:
    ckptr = ocp.Checkpointer(ocp.PyTreeCheckpointHandler(use_ocdbt=ocdbt, use_zarr3=zarr3))
    ckptr.save(tmp_path / "p", tree(2))
    same_as(tmp_path / "p", flat(ckptr.restore(tmp_path / "p")))


def test_checkpoint_manager_steps_and_items(tmp_path: Path) -> None:
    with ocp.CheckpointManager(tmp_path / "run", options=ocp.CheckpointManagerOptions(max_to_keep=2)) as mngr:
        for step in (10, 20, 30):
            mngr.save(step, args=ocp.args.Composite(params=ocp.args.StandardSave(tree(step)),
                                                    extra=ocp.args.StandardSave({"lr": jnp.asarray(0.1 * step)})))
        mngr.wait_until_finished()
        kept = sorted(mngr.all_steps())
        restored = {s: mngr.restore(s, args=ocp.args.Composite(params=ocp.args.StandardRestore(),
                                                              extra=ocp.args.StandardRestore())) for s in kept}
    assert kept == [20, 30]
    for step in kept:
        want = {**flat(restored[step]["params"], "params/"), **flat(restored[step]["extra"], "extra/")}
        same_as(tmp_path / "run" / str(step), want)
    with formats.open_checkpoint(tmp_path / "run") as latest:
        assert latest.path.endswith("30")
