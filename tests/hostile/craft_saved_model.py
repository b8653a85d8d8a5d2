"""Build ``saved_model.pb`` files field by field (field numbers of TensorFlow's saved_model.proto,
meta_graph.proto, saved_object_graph.proto), independently of ckpt's decoder."""
from __future__ import annotations

import shutil
from pathlib import Path

from ..conftest import CORPUS
from formats.io.protowire import encode_varint

FLOAT, INT64, STRING = 1, 9, 7
MODULE = CORPUS / "saved_models" / "module" / "1"


def varint(n: int) -> bytes:
    """A varint as protobuf writes it (negative numbers as their 64-bit two's complement)."""
    return encode_varint(n & ((1 << 64) - 1))


def field(number: int, value: int | bytes | str) -> bytes:
    """One field: a varint for ints, length-delimited for bytes/str."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def shape(dims: list[int] | None) -> bytes:
    """A TensorShapeProto (None: unknown rank)."""
    if dims is None:
        return field(3, 1)
    return b"".join(field(2, field(1, d) if d else b"") for d in dims)


def tensor_info(name: str, dtype: int, dims: list[int] | None) -> bytes:
    return field(1, name) + field(2, dtype) + field(3, shape(dims))


def signature(inputs: dict[str, bytes], outputs: dict[str, bytes], method: str = "tensorflow/serving/predict") -> bytes:
    out = b"".join(field(1, field(1, k) + field(2, v)) for k, v in inputs.items())
    out += b"".join(field(2, field(1, k) + field(2, v)) for k, v in outputs.items())
    return out + field(3, method)


def ref(node_id: int, name: str) -> bytes:
    return field(1, node_id) + field(2, name)


def user_object(children: list[tuple[int, str]], identifier: str = "_generic_user_object",
                slots: list[tuple[int, str, int]] = ()) -> bytes:
    out = b"".join(field(1, ref(i, n)) for i, n in children)
    out += b"".join(field(3, field(1, v) + field(2, s) + field(3, n)) for v, s, n in slots)
    return out + field(4, field(1, identifier))


def variable(name: str, dtype: int, dims: list[int] | None) -> bytes:
    return field(7, field(1, dtype) + field(2, shape(dims)) + field(6, name))


def object_graph(nodes: list[bytes], functions: dict[str, bytes] | None = None) -> bytes:
    out = b"".join(field(1, n) for n in nodes)
    return out + b"".join(field(2, field(1, k) + field(2, v)) for k, v in (functions or {}).items())


def meta_graph(tags: list[str] = ("serve",), signatures: dict[str, bytes] | None = None,
               graph: bytes | None = None) -> bytes:
    out = field(1, b"".join(field(4, t) for t in tags) + field(5, "2.21.0"))
    out += field(2, b"\x0a\x00" * 4)  # a graph_def ckpt never reads
    out += b"".join(field(5, field(1, k) + field(2, v)) for k, v in (signatures or {}).items())
    return out + (field(7, graph) if graph is not None else b"")


def saved_model(*meta_graphs: bytes) -> bytes:
    return field(1, 1) + b"".join(field(2, m) for m in meta_graphs)


def module_graph(names: tuple[str, str, str, str] = ("w", "b", "steps", "vocab")) -> bytes:
    """The object graph of corpus ``module/1`` (dense/{w,b}, steps, vocab), its variables named ``names``."""
    w, b, steps, vocab = names
    return object_graph([
        user_object([(1, "dense"), (2, "steps"), (3, "vocab")]),
        user_object([(4, "w"), (5, "b")], "trackable_dict_wrapper"),
        variable(steps, INT64, []), variable(vocab, STRING, [3]),
        variable(w, FLOAT, [4, 7]), variable(b, FLOAT, [7])])


def saved_model_dir(directory: Path, pb: bytes, variables: Path | None = MODULE) -> Path:
    """A SavedModel directory holding ``pb`` and (a copy of) the variables of ``variables``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "saved_model.pb").write_bytes(pb)
    if variables is not None:
        shutil.copytree(variables / "variables", directory / "variables")
        for f in (directory / "variables").iterdir():
            f.chmod(0o644)
    return directory
