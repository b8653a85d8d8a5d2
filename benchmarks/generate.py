"""Benchmark inputs, written with ckpt's own writer (no TensorFlow needed).

- ``bert``: a BERT-base-like name-based checkpoint (~0.9 GB): embeddings and encoder layers with
  Adam slots (``<var>/Adam``, ``<var>/Adam_1``), ``global_step`` and ``beta{1,2}_power``.
- ``many``: 50,000 small tensors (index parsing must not be quadratic).
- ``partitioned``: a 4-way partitioned embedding stored as slice entries, as TF1 writes it.
- ``keras3``: a Keras 3 ``.weights.h5`` of about the same size as ``bert``'s variables.
- ``bert_large``: the same with 24 layers of width 1024 (~4 GB).
- ``bert_large_pretraining``: google-research/bert's BERT-large pretraining checkpoint, every variable
  (heads, ``adam_m``/``adam_v``; ~4 GB) and its ``bert_config.json``: ``convert --to hf``'s input.
- ``bert_large_tf_h5``: a BERT-large ``TFBertModel.save_pretrained`` directory (``tf_model.h5`` of 1.3 GB float32 in
  the Keras 2 HDF5 layout transformers 4.x wrote, and its ``config.json``): ``convert --to hf``'s hub input.
- ``bert_object``: ``bert`` converted by ``ckpt convert --to tf-object``: a ``tf.train.Checkpoint``-like
  object-based bundle of the same bytes (slots as slot variables, the object graph last in the data
  file, as TensorFlow writes it).
- ``million``: 1,000,000 small tensors; ``directory``: a run directory of 1,000 small checkpoints.
- ``scale_name_10k``, ``scale_name_100k``, ``scale_name_1m``: a name-based bundle of N tiny tensors (the per-tensor
  cost rows, issue 38); ``scale_object_10k`` ... ``scale_object_1m``: the same converted to an object-based bundle;
  ``scale_slots_10k`` ... ``scale_slots_1m``: an object-based bundle of N tiny tensors, a third of them variables and
  two thirds their Adam slots (slot variables, as a TF1-style or legacy Keras optimizer's are saved).

Values are generated tensor by tensor, so generating stays within bounded memory too.
"""
from __future__ import annotations

import os
import shutil
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


BERT_LARGE_CONFIG = {"vocab_size": VOCAB, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                     "intermediate_size": 4096, "max_position_embeddings": 512, "type_vocab_size": 2,
                     "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                     "initializer_range": 0.02}


def _bert_pretraining_variables(config: dict[str, int]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Every variable of google-research/bert's BERT pretraining model (``run_pretraining.py``), as it names them."""
    h, f, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    yield "bert/embeddings/word_embeddings", (v, h)
    yield "bert/embeddings/position_embeddings", (config["max_position_embeddings"], h)
    yield "bert/embeddings/token_type_embeddings", (config["type_vocab_size"], h)
    yield from (("bert/embeddings/LayerNorm/" + p, (h,)) for p in ("gamma", "beta"))
    for i in range(config["num_hidden_layers"]):
        base = f"bert/encoder/layer_{i}"
        for part in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
            yield f"{base}/{part}/kernel", (h, h)
            yield f"{base}/{part}/bias", (h,)
        yield f"{base}/intermediate/dense/kernel", (h, f)
        yield f"{base}/intermediate/dense/bias", (f,)
        yield f"{base}/output/dense/kernel", (f, h)
        yield f"{base}/output/dense/bias", (h,)
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            yield from ((f"{base}/{norm}/{p}", (h,)) for p in ("gamma", "beta"))
    yield "bert/pooler/dense/kernel", (h, h)
    yield "bert/pooler/dense/bias", (h,)
    yield "cls/predictions/transform/dense/kernel", (h, h)
    yield "cls/predictions/transform/dense/bias", (h,)
    yield from (("cls/predictions/transform/LayerNorm/" + p, (h,)) for p in ("gamma", "beta"))
    yield "cls/predictions/output_bias", (v,)
    yield "cls/seq_relationship/output_weights", (2, h)
    yield "cls/seq_relationship/output_bias", (2,)


def bert_large_pretraining(out: Path) -> str:
    """google-research/bert's BERT-large pretraining checkpoint, complete (heads, ``adam_m``/``adam_v`` slots,
    ``global_step``; ~4 GB) with its ``bert_config.json``: the input of ``convert --to hf``."""
    import json

    from formats import write_checkpoint

    def tensors() -> Iterator[tuple[str, np.ndarray]]:
        for i, (name, shape) in enumerate(_bert_pretraining_variables(BERT_LARGE_CONFIG)):
            for suffix in ("", "/adam_m", "/adam_v"):
                yield name + suffix, _values(shape, i * 3 + len(suffix))
        yield "global_step", np.array(1000000, dtype=np.int64)

    folder = out / "bert-large-pretraining"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bert_config.json").write_text(json.dumps(BERT_LARGE_CONFIG, indent=2))
    prefix = str(folder / "bert_model.ckpt")
    write_checkpoint(prefix, tensors(), force=True, verify=False)
    return prefix


def _tf_bert_weights(config: dict[str, int]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Every weight of transformers 4.x's ``TFBertModel`` as its ``save_weights`` names them (its ``bert`` layer)."""
    h, f = config["hidden_size"], config["intermediate_size"]
    top = "tf_bert_model/bert"
    yield f"{top}/embeddings/word_embeddings/weight:0", (config["vocab_size"], h)
    yield f"{top}/embeddings/token_type_embeddings/embeddings:0", (config["type_vocab_size"], h)
    yield f"{top}/embeddings/position_embeddings/embeddings:0", (config["max_position_embeddings"], h)
    yield from ((f"{top}/embeddings/LayerNorm/{p}:0", (h,)) for p in ("gamma", "beta"))
    for i in range(config["num_hidden_layers"]):
        base = f"{top}/encoder/layer_._{i}"
        for part in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
            yield f"{base}/{part}/kernel:0", (h, h)
            yield f"{base}/{part}/bias:0", (h,)
        yield from ((f"{base}/attention/output/LayerNorm/{p}:0", (h,)) for p in ("gamma", "beta"))
        yield f"{base}/intermediate/dense/kernel:0", (h, f)
        yield f"{base}/intermediate/dense/bias:0", (f,)
        yield f"{base}/output/dense/kernel:0", (f, h)
        yield f"{base}/output/dense/bias:0", (h,)
        yield from ((f"{base}/output/LayerNorm/{p}:0", (h,)) for p in ("gamma", "beta"))
    yield f"{top}/pooler/dense/kernel:0", (h, h)
    yield f"{top}/pooler/dense/bias:0", (h,)


def bert_large_tf_h5(out: Path) -> str:
    """A BERT-large ``TFBertModel.save_pretrained`` directory: ``tf_model.h5`` (1.3 GB float32; the Keras 2 HDF5
    layout: the root's ``layer_names`` = ``["bert"]``, the group's ``weight_names``, a dataset per weight) and the
    ``config.json`` transformers 4.x wrote beside it. Returns the directory."""
    import json

    import h5py

    folder = out / "bert-large-tf"
    folder.mkdir(parents=True, exist_ok=True)
    config = {**BERT_LARGE_CONFIG, "architectures": ["TFBertModel"], "model_type": "bert", "layer_norm_eps": 1e-12,
              "pad_token_id": 0, "position_embedding_type": "absolute", "transformers_version": "4.57.6"}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    weights = list(_tf_bert_weights(config))
    with h5py.File(folder / "tf_model.h5", "w") as f:
        f.attrs["backend"], f.attrs["keras_version"] = "tensorflow", "2.21.0"
        f.attrs["layer_names"] = np.array(["bert"], dtype=object)
        group = f.create_group("bert")
        group.attrs["weight_names"] = np.array([name for name, _ in weights], dtype=object)
        for i, (name, shape) in enumerate(weights):
            group.create_dataset(name, data=_values(shape, i))
    return str(folder)


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


SCALES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
"""The sizes of the per-tensor scale inputs (``scale_name_<size>``, ``scale_object_<size>``)."""


def scale_name(out: Path, count: int) -> str:
    """A name-based bundle of ``count`` tiny tensors (4 float32 each, 100 per layer: ``model/layer_<i>/unit_<j>/w``)."""
    from formats import write_checkpoint

    pairs = ((f"model/layer_{i // 100}/unit_{i % 100}/w", np.full((4,), i, np.float32)) for i in range(count))
    prefix = str(out / f"scale-name-{count}" / "ckpt-1")
    write_checkpoint(prefix, pairs, force=True, verify=False)
    return prefix


HUGE_SHAPE = (262_144, 2_048)
"""The shape of the 2 GiB float32 tensor of ``huge_tensor`` (issue 38: no command may grow with a tensor's bytes)."""


def huge_tensor(out: Path, later: bool = False) -> str:
    """A name-based bundle holding one 2 GiB float32 tensor (``model/embedding/w``, :data:`HUGE_SHAPE`) and a step;
    ``later``: the same with every 7th row's every 3rd value moved by 1e-3 and the next step (``diff`` of the two
    compares every value)."""
    from formats import write_checkpoint

    values = np.empty(HUGE_SHAPE, dtype=np.float32)
    rng = np.random.default_rng(0)
    for start in range(0, HUGE_SHAPE[0], 8192):  # in pieces: the generator's own peak stays near the tensor's size
        values[start:start + 8192] = rng.standard_normal((8192, HUGE_SHAPE[1]), dtype=np.float32) * 0.02
    if later:
        values[::7, ::3] += np.float32(1e-3)
    step = 2 if later else 1
    prefix = str(out / ("huge-tensor-later" if later else "huge-tensor") / f"ckpt-{step}")
    write_checkpoint(prefix, [("model/embedding/w", values), ("global_step", np.array(step, np.int64))], force=True,
                     verify=False)
    return prefix


def scale_slots_name(out: Path, count: int) -> str:
    """A name-based bundle of about ``count`` tiny tensors: ``count // 3`` variables laid out as :func:`scale_name`'s
    (4 float32 each), each with its Adam slots ``<var>/Adam`` and ``<var>/Adam_1``, and the optimizer's
    ``global_step``, ``beta1_power`` and ``beta2_power``, as TF1's ``AdamOptimizer`` saves them."""
    from formats import write_checkpoint

    def pairs() -> Iterator[tuple[str, np.ndarray]]:
        for i in range(count // 3):
            name = f"model/layer_{i // 100}/unit_{i % 100}/w"
            yield name, np.full((4,), i, np.float32)
            yield name + "/Adam", np.full((4,), i * 0.5, np.float32)
            yield name + "/Adam_1", np.full((4,), i * 0.25, np.float32)
        yield "global_step", np.array(1000, np.int64)
        yield "beta1_power", np.array(0.9 ** 1000, np.float32)
        yield "beta2_power", np.array(0.999 ** 1000, np.float32)

    prefix = str(out / f"scale-slots-name-{count}" / "ckpt-1")
    write_checkpoint(prefix, pairs(), force=True, verify=False)
    return prefix


def scale_object(out: Path, count: int, size: str, slots: bool = False) -> str:
    """:func:`scale_name`'s bundle converted by ``ckpt convert --to tf-object`` (one object per layer and unit);
    ``slots``: :func:`scale_slots_name`'s (the Adam slots become slot variables of the optimizer's object)."""
    import subprocess
    import sys

    if slots:
        source = scale_slots_name(out, count)
        prefix = str(out / f"scale-slots-{count}" / "ckpt-1")
    else:
        source = generate(out, (f"scale_name_{size}",))[f"scale_name_{size}"]
        prefix = str(out / f"scale-object-{count}" / "ckpt-1")
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "ckpt_cli", "convert", source, "-o", prefix, "--to", "tf-object", "--force"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    if slots:
        shutil.rmtree(Path(source).parent)  # only the object-based bundle is measured
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
              "bert_object": bert_object, "bert_large_pretraining": bert_large_pretraining,
              "bert_large_tf_h5": bert_large_tf_h5,
              "million": lambda o: many(o / "million", 1_000_000), "directory": directory,
              "huge_tensor": huge_tensor, "huge_tensor_later": lambda o: huge_tensor(o, later=True)}
    for size, count in SCALES.items():
        makers[f"scale_name_{size}"] = lambda o, n=count: scale_name(o, n)
        makers[f"scale_object_{size}"] = lambda o, n=count, s=size: scale_object(o, n, s)
        makers[f"scale_slots_{size}"] = lambda o, n=count, s=size: scale_object(o, n, s, slots=True)
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

    folder = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CKPT_BENCH_DIR", "/tmp/ckpt-bench"))
    print(generate(folder, tuple(sys.argv[2:])) if len(sys.argv) > 2 else generate(folder))
