"""Write the Orbax and T5X samples in this folder and the goldens of what Orbax itself reads back.

Run with JAX on CPU, orbax-checkpoint and tensorstore installed (not needed by the tests that read the
results):

    python tests/data/orbax/make_orbax.py [OUTPUT_DIR]

Writes (each small, together well under 1 MB):

* ``standard/``: ``StandardCheckpointer`` (OCDBT, the default);
* ``pytree_zarr/``: ``PyTreeCheckpointer`` with ``use_ocdbt=False`` (one zarr directory per array);
* ``pytree_zarr3/``: the same with ``use_zarr3=True`` (zarr v3 ``zarr.json``, sharded chunks ``c/0/0``);
* ``run/``: a ``CheckpointManager`` root with steps 1, 2 and 3 (OCDBT, ``StandardSave``);
* ``t5x/checkpoint_3/``: a tiny T5 1.1 written the way T5X's ``checkpoints.py`` writes it (a msgpack
  ``checkpoint`` whose partitioned leaves are ``ts.Spec`` dicts naming zarr arrays, gzip-compressed, in
  ``target.*`` and ``state.param_states.*`` directories; small leaves inline as flax's ndarray ext type);
* ``goldens.json``: for every sample, each key's shape, dtype and sha256 of its C-order bytes as Orbax's own
  ``restore()`` returns it (for T5X: as tensorstore and msgpack return them), and Orbax's ``metadata()``
  shapes and dtypes.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import msgpack  # noqa: E402
import numpy as np  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402
import tensorstore as ts  # noqa: E402

HERE = Path(__file__).resolve().parent


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def tree(step: int) -> dict[str, Any]:
    """A nested tree of dicts and lists, bfloat16, float8, int4 and integer arrays; values depend on ``step``."""
    rng = np.random.default_rng(step)
    return {
        "params": {
            "dense": {"kernel": jnp.asarray(rng.standard_normal((4, 3)), dtype=jnp.bfloat16),
                      "bias": jnp.asarray(rng.standard_normal(3), dtype=jnp.float32)},
            "layers": [{"w": jnp.arange(6, dtype=jnp.int32).reshape(2, 3) * step},
                       {"w": jnp.asarray([[-8, 7], [1, 0]], dtype=jnp.int8) * step}],
            "f8": jnp.asarray([0.5, -1.0, 2.0], dtype=jnp.float8_e4m3fn),
            "q4": jnp.asarray([-8, -1, 0, 7], dtype=jnp.int4),
        },
        "opt": {"count": jnp.asarray(step, dtype=jnp.int64), "mu": [jnp.zeros((2, 2), jnp.float16) + step]},
    }


def digest(value: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(value)).tobytes()).hexdigest()


def flat(restored: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(restored)[0]:
        key = "/".join(str(getattr(p, "key", getattr(p, "idx", getattr(p, "name", p)))) for p in path)
        value = np.asarray(leaf)
        out[key] = {"shape": list(value.shape), "dtype": value.dtype.name, "sha256": digest(value)}
    return out


def flat_metadata(meta: Any) -> dict[str, dict[str, Any]]:
    out = {}
    leaves = jax.tree_util.tree_flatten_with_path(meta, is_leaf=lambda x: hasattr(x, "shape") and hasattr(x, "dtype"))[0]
    for path, leaf in leaves:
        key = "/".join(str(getattr(p, "key", getattr(p, "idx", getattr(p, "name", p)))) for p in path)
        out[key] = {"shape": list(leaf.shape), "dtype": np.dtype(leaf.dtype).name}
    return out


def write_orbax(out: Path, goldens: dict[str, Any]) -> None:
    with ocp.StandardCheckpointer() as ckptr:
        ckptr.save(out / "standard", tree(1))
        ckptr.wait_until_finished()
        goldens["standard"] = {"restore": flat(ckptr.restore(out / "standard")),
                               "metadata": flat_metadata(ckptr.metadata(out / "standard").item_metadata)}
    zarr = ocp.Checkpointer(ocp.PyTreeCheckpointHandler(use_ocdbt=False))
    zarr.save(out / "pytree_zarr", tree(2))
    goldens["pytree_zarr"] = {"restore": flat(zarr.restore(out / "pytree_zarr")),
                              "metadata": flat_metadata(zarr.metadata(out / "pytree_zarr").item_metadata)}
    zarr3 = ocp.Checkpointer(ocp.PyTreeCheckpointHandler(use_ocdbt=False, use_zarr3=True))
    zarr3.save(out / "pytree_zarr3", tree(2))
    goldens["pytree_zarr3"] = {"restore": flat(zarr3.restore(out / "pytree_zarr3")),
                               "metadata": flat_metadata(zarr3.metadata(out / "pytree_zarr3").item_metadata)}
    options = ocp.CheckpointManagerOptions(max_to_keep=5)
    with ocp.CheckpointManager(out / "run", options=options) as mngr:
        for step in (1, 2, 3):
            mngr.save(step, args=ocp.args.StandardSave(tree(step)))
        mngr.wait_until_finished()
        for step in (1, 2, 3):
            goldens[f"run/{step}"] = {"restore": flat(mngr.restore(step, args=ocp.args.StandardRestore())),
                                      "metadata": flat_metadata(mngr.item_metadata(step))}


T5_DIMS = {"vocab": 32, "d_model": 8, "d_ff": 12, "heads": 2, "d_kv": 4, "layers": 1}


def t5_params(rng: np.random.Generator) -> dict[str, Any]:
    """A T5 1.1 parameter tree as T5X's ``t5.1_1`` model names it (tiny dimensions)."""
    d, f, h, k, v = (T5_DIMS[n] for n in ("d_model", "d_ff", "heads", "d_kv", "vocab"))

    def w(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def attention() -> dict[str, Any]:
        return {"query": {"kernel": w(d, h * k)}, "key": {"kernel": w(d, h * k)},
                "value": {"kernel": w(d, h * k)}, "out": {"kernel": w(h * k, d)}}

    def mlp() -> dict[str, Any]:
        return {"wi_0": {"kernel": w(d, f)}, "wi_1": {"kernel": w(d, f)}, "wo": {"kernel": w(f, d)}}

    encoder = {"layers_0": {"attention": attention(), "mlp": mlp(),
                            "pre_attention_layer_norm": {"scale": w(d)}, "pre_mlp_layer_norm": {"scale": w(d)}},
               "encoder_norm": {"scale": w(d)}, "relpos_bias": {"rel_embedding": w(h, 32)}}
    decoder = {"layers_0": {"self_attention": attention(), "encoder_decoder_attention": attention(), "mlp": mlp(),
                            "pre_self_attention_layer_norm": {"scale": w(d)},
                            "pre_cross_attention_layer_norm": {"scale": w(d)},
                            "pre_mlp_layer_norm": {"scale": w(d)}},
               "decoder_norm": {"scale": w(d)}, "relpos_bias": {"rel_embedding": w(h, 32)},
               "logits_dense": {"kernel": w(d, v)}}
    return {"encoder": encoder, "decoder": decoder, "token_embedder": {"embedding": w(v, d)}}


def _ndarray_ext(value: np.ndarray) -> msgpack.ExtType:
    """flax.serialization's ndarray ext (code 1): msgpack of (shape, dtype name, C-order bytes)."""
    return msgpack.ExtType(1, msgpack.packb((value.shape, value.dtype.name, value.tobytes()), use_bin_type=True))


def _walk(node: Any, prefix: tuple[str, ...]):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, prefix + (k,))
    else:
        yield prefix, node


def _set(root: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for k in path[:-1]:
        root = root.setdefault(k, {})
    root[path[-1]] = value


def write_t5x(out: Path, goldens: dict[str, Any]) -> None:
    """T5X's Checkpointer.save: ``{'version': 3, 'optimizer': {'target': ..., 'state': {'step': ...,
    'param_states': ...}}}``; partitioned leaves (here: every array of rank >= 1 above 16 elements) written
    by tensorstore to ``<dir>/<name with . for />`` as zarr v2 with gzip, their leaf a ts.Spec dict with a
    relative ``kvstore.path``; the rest inline."""
    step_dir = out / "t5x" / "checkpoint_3"
    step_dir.mkdir(parents=True)
    rng = np.random.default_rng(5)
    params = t5_params(rng)
    state = {"target": params,
             "state": {"step": np.array(3, np.int32),
                       "param_states": {"encoder": {"encoder_norm": {"scale": {"v": np.ones(8, np.float32)}}},
                                        "token_embedder": {"embedding": {"v_row": np.full(32, 0.5, np.float32),
                                                                         "v_col": np.full(8, 0.25, np.float32)}}}}}
    written: dict[str, Any] = {}
    restore: dict[str, Any] = {}
    for path, value in _walk(state, ()):
        name = "/".join(path)
        restore[name] = {"shape": list(value.shape), "dtype": value.dtype.name, "sha256": digest(value)}
        if value.ndim >= 1 and value.size > 16:
            chunks = list(value.shape)
            chunks[0] = max(1, chunks[0] // 2)
            spec = {"driver": "zarr", "dtype": value.dtype.name,
                    "kvstore": {"driver": "file", "path": name.replace("/", ".")},
                    "metadata": {"compressor": {"id": "gzip"}, "shape": list(value.shape), "chunks": chunks}}
            absolute = json.loads(json.dumps(spec))
            absolute["kvstore"]["path"] = str(step_dir / spec["kvstore"]["path"])
            ts.open(absolute, create=True, open=True).result().write(value).result()
            _set(written, path, ts.Spec(spec).to_json())
        else:
            _set(written, path, _ndarray_ext(value))
    blob = msgpack.packb({"version": 3, "optimizer": written}, use_bin_type=True)
    (step_dir / "checkpoint").write_bytes(blob)
    goldens["t5x/checkpoint_3"] = {"restore": restore, "dims": T5_DIMS}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for name in ("standard", "pytree_zarr", "pytree_zarr3", "run", "t5x"):
        shutil.rmtree(out / name, ignore_errors=True)
    goldens: dict[str, Any] = {"versions": {"orbax-checkpoint": _version("orbax-checkpoint"),
                                            "jax": jax.__version__, "tensorstore": _version("tensorstore")}}
    write_orbax(out, goldens)
    write_t5x(out, goldens)
    (out / "goldens.json").write_text(json.dumps(goldens, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
