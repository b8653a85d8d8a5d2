"""The names of transformers 4.x TensorFlow weights (``tf_model.h5``) as PyTorch state-dict names.

One rule for every architecture, learnt from transformers 4.x (``modeling_tf_pytorch_utils``): a TF variable's
scopes are the PyTorch module path. ``tf_bert_model/bert/encoder/layer_._0/attention/self/query/kernel:0``:

- ``:0`` (the device suffix) goes; ``a___b`` (a TF scope standing for another PyTorch path) is ``b``; ``_._`` is a
  level separator (TF has no list scopes: ``layer_._0`` is ``layer.0``); empty levels go;
- level zero (the TF model's own scope, ``tf_bert_model``) goes, unless the name has no other level
  (BART's ``final_logits_bias``);
- the last level ``kernel``, ``embeddings`` or ``gamma`` is ``weight``, ``beta`` is ``bias``;
  ``pointwise_kernel`` / ``depthwise_kernel`` (separable convolutions) are ``pointwise.weight`` / ``depthwise.weight``;
- a ``kernel`` is transposed by rank: 2-D ``[in, out]`` -> ``[out, in]``; 3-D (conv1d) ``(k, in, out)`` ->
  ``(out, in, k)``; 4-D (conv2d) ``(kh, kw, in, out)`` -> ``(out, in, kh, kw)``; as are the separable kernels and
  Transformer-XL's ``emb_projs`` / ``out_projs``;
- a PyTorch base class (``BertModel``) has no ``base_model_prefix.`` (``bert.``) before its names.

Where a file keeps a name (the key ckpt shows): a single ``tf_model.h5`` (Keras 2 ``save_weights``) keys each
weight ``<layer>/<variable name>``; the shards of ``save_pretrained(max_shard_size=...)`` store each variable
without its level zero, except names holding ``model.`` and names of one level, which they keep whole (their
index's ``weight_map`` has the whole names).
"""
from __future__ import annotations

import re

from formats.core.records import record

__all__ = ["TfName", "variable_name", "stored_shard_name", "level_zero", "translate", "snake_case", "CONV2D",
           "TRANSPOSE"]

TRANSPOSE = "transpose"
"""Every axis reversed (a 2-D kernel; a 3-D conv1d kernel ``(k, in, out)`` -> ``(out, in, k)``)."""
CONV2D = "conv2d"
"""A 4-D conv2d kernel ``(kh, kw, in, out)`` -> ``(out, in, kh, kw)``."""

_RENAMED = {"kernel": "weight", "embeddings": "weight", "gamma": "weight", "beta": "bias"}
_SEPARABLE = ("pointwise_kernel", "depthwise_kernel")
_SKIP_SCOPE = re.compile(r"/[^/]*___([^/]*)/")


@record
class TfName:
    """A TF variable's PyTorch name and the axis change its value needs (``""``, :data:`TRANSPOSE`, :data:`CONV2D`)."""

    name: str
    op: str


def variable_name(key: str) -> str:
    """The variable name of a single ``tf_model.h5``'s key (``<layer>/<variable name>``)."""
    return key.split("/", 1)[1] if "/" in key else key


def stored_shard_name(whole_name: str) -> str:
    """The name transformers 4.x's sharded ``save_pretrained`` stores a variable under."""
    if "model." in whole_name or len(whole_name.split("/")) == 1:
        return whole_name
    return "/".join(whole_name.split("/")[1:])


def level_zero(variable: str) -> str | None:
    """A variable's level-zero scope (None for a name of one level)."""
    parts = [p for p in variable.split("/") if p]
    return parts[0] if len(parts) > 1 else None


def translate(variable: str, rank: int, strip: str = "") -> TfName:
    """The PyTorch name of TF variable ``variable`` (a value of ``rank`` dimensions), ``strip`` (a base class's
    ``base_model_prefix.``) taken off its start, and how its value's axes change."""
    name = variable.replace(":0", "")
    if len(name) > 4096 or name.count("___") > 16:
        raise ValueError(f"variable name too long or with too many '___' scopes: {variable[:200]!r}")
    name = _SKIP_SCOPE.sub(r"/\1/", name).replace("_._", "/")
    parts = [p for p in name.split("/") if p]
    if len(parts) > 1:
        parts = parts[1:]
    last = parts[-1]
    if last == "kernel" and rank == 4:
        op = CONV2D
    elif last in ("kernel", *_SEPARABLE) or "emb_projs" in parts or "out_projs" in parts:
        op = TRANSPOSE if rank > 1 else ""
    else:
        op = ""
    if last in _RENAMED:
        parts[-1] = _RENAMED[last]
    elif last in _SEPARABLE:
        parts[-1] = last.replace("_kernel", ".weight")
    out = ".".join(parts)
    if strip and out.startswith(strip):
        out = out[len(strip):]
    return TfName(out, op)


def snake_case(class_name: str) -> str:
    """Keras's default scope of an instance of ``class_name`` (``TFGPT2LMHeadModel`` -> ``tfgpt2lm_head_model``)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
