"""Benchmark inputs, written with ckpt's own writer (no TensorFlow needed).

- ``bert``: a BERT-base-like name-based checkpoint (~0.9 GB): embeddings and encoder layers with
  Adam slots (``<var>/Adam``, ``<var>/Adam_1``), ``global_step`` and ``beta{1,2}_power``.
- ``many``: 50,000 small tensors (index parsing must not be quadratic).
- ``partitioned``: a 4-way partitioned embedding stored as slice entries, as TF1 writes it.
- ``keras3``: a Keras 3 ``.weights.h5`` of about the same size as ``bert``'s variables.
- ``bert_large``: the same with 24 layers of width 1024 (~4 GB).
- ``bert_object``: ``bert`` converted by ``ckpt convert --to tf-object``: a ``tf.train.Checkpoint``-like
  object-based bundle of the same bytes (slots as slot variables, the object graph last in the data
  file, as TensorFlow writes it).
- ``million``: 1,000,000 small tensors; ``directory``: a run directory of 1,000 small checkpoints.

Values are generated tensor by tensor, so generating stays within bounded memory too.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

HIDDEN, FFN, VOCAB = 768, 3072, 30522


def _bert_variables(layers: int, hidden: int = HIDDEN, ffn: int = FFN) -> Iterator[tuple[str, tuple[int, ...]]]:
    yield "bert/embeddings/word_embeddings", (VOCAB, hidden)
    yield "bert/embeddings/position_embeddings", (512, hidden)
    yield "bert/embeddings/token_type_embeddings", (2, hidden)
    for i in range(layers):
        base = f"bert/encoder/layer_{i}"
        for part in ("query", "key", "value"):
            yield f"{base}/attention/self/{part}/kernel", (hidden, hidden)
            yield f"{base}/attention/self/{part}/bias", (hidden,)
        yield f"{base}/attention/output/dense/kernel", (hidden, hidden)
        yield f"{base}/intermediate/dense/kernel", (hidden, ffn)
        yield f"{base}/intermediate/dense/bias", (ffn,)
        yield f"{base}/output/dense/kernel", (ffn, hidden)
        yield f"{base}/output/LayerNorm/gamma", (hidden,)


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape, dtype=np.float32) * 0.02


def bert(out: Path, layers: int = 7, hidden: int = HIDDEN, ffn: int = FFN, name: str = "bert") -> str:
    """Write the BERT-like checkpoint under ``out`` and return its prefix."""
    from formats import write_checkpoint

    def tensors() -> Iterator[tuple[str, np.ndarray]]:
        for i, (name, shape) in enumerate(_bert_variables(layers, hidden, ffn)):
            for suffix in ("", "/Adam", "/Adam_1"):
                yield name + suffix, _values(shape, i * 3 + len(suffix))
        yield "global_step", np.array(1000, dtype=np.int64)
        yield "beta1_power", np.array(0.9 ** 1000, dtype=np.float32)
        yield "beta2_power", np.array(0.999 ** 1000, dtype=np.float32)

    prefix = str(out / name / "model.ckpt-1000")
    write_checkpoint(prefix, tensors(), force=True, verify=False)
    return prefix


def bert_large(out: Path) -> str:
    """A BERT-large-like checkpoint with Adam slots (~4 GB): 24 layers of width 1024."""
    return bert(out, layers=24, hidden=1024, ffn=4096, name="bert-large")


def bert_object(out: Path) -> str:
    """``bert`` as an object-based checkpoint, written by ckpt's own converter (one data file, graph last)."""
    import subprocess
    import sys

    source = generate(out, ("bert",))["bert"]
    prefix = str(out / "bert-object" / "ckpt-1000")
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "ckpt_cli", "convert", source, "-o", prefix, "--to", "tf-object", "--force"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return prefix


def directory(out: Path, count: int = 1000) -> str:
    """A run directory of ``count`` small checkpoints (20 tensors each) and its state file."""
    from formats import write_checkpoint
    from formats.tf_bundle.state_file import update_state_file

    folder = out / "thousand"
    folder.mkdir(parents=True, exist_ok=True)
    tensors = [(f"model/layer_{i}/kernel", _values((32, 32), i)) for i in range(20)]
    for step in range(1, count + 1):
        write_checkpoint(str(folder / f"ckpt-{step}"), tensors, force=True, verify=False)
    update_state_file(str(folder), str(folder / f"ckpt-{count}"))
    return str(folder)


def many(out: Path, count: int = 50_000) -> str:
    """Write a checkpoint of ``count`` tiny tensors and return its prefix."""
    from formats import write_checkpoint

    pairs = ((f"model/block_{i // 100:04d}/unit_{i % 100:02d}/w", np.full((4,), i, np.float32))
             for i in range(count))
    prefix = str(out / "many" / "ckpt-1")
    write_checkpoint(prefix, pairs, force=True, verify=False)
    return prefix


def partitioned(out: Path, rows: int = 1_000_000, dim: int = 64, parts: int = 4) -> str:
    """Write a name-based checkpoint whose embedding is stored as ``parts`` slices; return its prefix."""
    from formats.io.crc import crc32c, mask
    from formats.concepts.proto.messages import BUNDLE_ENTRY, encode
    from formats.tf_bundle.encode import HEADER, encode_entry
    from formats.concepts.slice_key import encode_slice_key
    from formats.io.sstable.writer import TableWriter

    folder = out / "partitioned"
    folder.mkdir(parents=True, exist_ok=True)
    prefix = str(folder / "model.ckpt-1")
    name = "input_layer/embedding/weights"
    slices: list[dict[str, object]] = []
    entries: dict[bytes, bytes] = {}
    offset = 0
    with open(prefix + ".data-00000-of-00001", "wb") as data:
        bounds = np.linspace(0, rows, parts + 1).astype(int)
        for i in range(parts):
            start, stop = int(bounds[i]), int(bounds[i + 1])
            part = _values((stop - start, dim), 100 + i).tobytes()
            data.write(part)
            extents = [(start, stop - start), (0, -1)]
            entries[encode_slice_key(name, extents)] = encode_entry(1, (stop - start, dim), offset, len(part),
                                                                    mask(crc32c(part)))
            slices.append({"extent": [{"start": start, "length": stop - start}, {}]})
            offset += len(part)
    entries[name.encode()] = encode(BUNDLE_ENTRY, {"dtype": 1, "shape": {"dim": [{"size": rows}, {"size": dim}]},
                                                   "slices": slices})
    with open(prefix + ".index", "wb") as index:
        table = TableWriter(index)
        table.add(b"", HEADER)
        for key in sorted(entries):
            table.add(key, entries[key])
        table.finish()
    return prefix


def keras3(out: Path, layers: int = 7) -> str:
    """Write a Keras 3 ``.weights.h5`` with BERT-sized dense layers; return its path."""
    import h5py

    path = out / "keras3" / "model.weights.h5"
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        for i, (name, shape) in enumerate(_bert_variables(layers)):
            layer = name.replace("/", "_")
            group = f.require_group(f"layers/{layer}/vars")
            group.attrs["name"] = layer
            for j in range(3):  # the variable, then its m and v slots
                group.create_dataset(str(j), data=_values(shape, i * 3 + j))
        f.require_group("optimizer/vars")
    return str(path)


def generate(out: Path, which: tuple[str, ...] = ("bert", "many", "partitioned", "keras3")) -> dict[str, str]:
    """Generate the named inputs (skipping ones already present) and return name -> path."""
    out.mkdir(parents=True, exist_ok=True)
    makers = {"bert": bert, "many": many, "partitioned": partitioned, "keras3": keras3, "bert_large": bert_large,
              "bert_object": bert_object,
              "million": lambda o: many(o / "million", 1_000_000), "directory": directory}
    done = {}
    for name in which:
        marker = out / f".{name}.done"
        if marker.exists():
            done[name] = marker.read_text()
            continue
        done[name] = makers[name](out)
        marker.write_text(done[name])
    return done


if __name__ == "__main__":
    import sys

    print(generate(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CKPT_BENCH_DIR", "/tmp/ckpt-bench"))))
