"""What Keras 3 refuses in a translated model, checked before anything is written (``--to keras``).

A ``model_config`` is input like any other: a file can hold a config Keras cannot build, and an archive written
from it would "verify" (its weights read back) yet fail in ``keras.models.load_model``, or hang it. Three checks
(the graph's is :mod:`.legacy_graph`'s, beside the rest of what ckpt knows of Keras 3's graphs), each giving
sentences naming the layer (refusals, as :class:`~formats.ops.convert.cross.legacy_config.Translator`
gives):

- :func:`argument_problems`: one layer's arguments of the kinds Keras 3's constructors check - counts
  (``units``, ``filters``) positive integers, sizes (``kernel_size``, ``strides``) positive integers or lists of
  them, flags (``trainable``, ``use_bias``) booleans, a dropout ``rate`` in [0, 1];
- :func:`~formats.ops.convert.cross.legacy_graph.graph_problems`: a Functional model's calls as
  ``functional_from_config`` replays them - every call names a call of its layer that exists (node index) and an
  output that call has (tensor index), and no call depends on itself (Keras would loop for ever);
- :func:`weight_problem`: a stored weight's shape against what the layer's config makes (``units=20`` makes an
  LSTM kernel ``[input, 80]``).
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["argument_problems", "weight_problem", "VARIABLE_SHAPES"]

COUNTS = frozenset({"units", "filters", "input_dim", "output_dim", "num_heads", "key_dim", "depth_multiplier", "n"})
"""Arguments that are a count: a positive integer (``value_dim`` too, or None)."""
SIZES = frozenset({"kernel_size", "strides", "pool_size", "dilation_rate"})
"""Arguments that are one positive integer or a list of them (None: a pooling layer's strides default)."""
FLAGS = frozenset({"trainable", "use_bias", "return_sequences", "return_state", "go_backwards", "stateful",
                   "unroll", "mask_zero", "reset_after", "unit_forget_bias"})
"""Arguments that are booleans in every layer that has them."""
NORMALIZATIONS = frozenset({"BatchNormalization", "LayerNormalization", "GroupNormalization"})
"""Layers whose ``center`` and ``scale`` are flags (``Rescaling``'s ``scale`` is a number)."""
RATES = frozenset({"Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianDropout",
                   "AlphaDropout"})
"""Layers whose ``rate`` Keras 3 refuses outside [0, 1]."""

VARIABLE_SHAPES: dict[str, dict[str, dict[int, tuple[int, str]]]] = {
    "Dense": {"kernel": {-1: (1, "units")}, "bias": {0: (1, "units")}},
    "Embedding": {"embeddings": {0: (1, "input_dim"), 1: (1, "output_dim")}},
    "LSTMCell": {"kernel": {-1: (4, "units")}, "recurrent_kernel": {0: (1, "units"), -1: (4, "units")},
                 "bias": {-1: (4, "units")}},
    "GRUCell": {"kernel": {-1: (3, "units")}, "recurrent_kernel": {0: (1, "units"), -1: (3, "units")},
                "bias": {-1: (3, "units")}},
    "SimpleRNNCell": {"kernel": {-1: (1, "units")}, "recurrent_kernel": {0: (1, "units"), -1: (1, "units")},
                      "bias": {-1: (1, "units")}},
    **{f"Conv{n}D": {"kernel": {-1: (1, "filters")}, "bias": {0: (1, "filters")}} for n in (1, 2, 3)},
    **{f"Conv{n}DTranspose": {"kernel": {-2: (1, "filters")}, "bias": {0: (1, "filters")}} for n in (1, 2, 3)},
    **{f"SeparableConv{n}D": {"pointwise_kernel": {-1: (1, "filters")}, "bias": {0: (1, "filters")}}
       for n in (1, 2)},
}
"""Class -> variable -> {dimension: (multiple, count argument)}: the dimensions of a stored variable the layer's
config fixes (an LSTM cell's kernel is ``[input, 4 * units]``); the others depend on the input."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _size(value: Any) -> bool:
    return _count(value) or isinstance(value, list) and bool(value) and all(_count(v) for v in value)


def argument_problems(cls: str, config: dict[str, Any]) -> list[str]:
    """What Keras 3's constructor of ``cls`` would refuse in ``config`` (one sentence per argument)."""
    out = []
    for key, value in config.items():
        if key in COUNTS or key == "value_dim" and value is not None:
            if not _count(value):
                out.append(f"{key}={value!r} is not a positive integer")
        elif key in SIZES and value is not None:
            if not _size(value):
                out.append(f"{key}={value!r} is not a positive integer or a list of them")
        elif key in FLAGS or key in ("center", "scale") and cls in NORMALIZATIONS:
            if not isinstance(value, bool):
                out.append(f"{key}={value!r} is not true or false")
        elif key == "rate" and cls in RATES:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                out.append(f"rate={value!r} is not a number from 0 to 1")
    return out


# -- the weights ---------------------------------------------------------------------------------------------
def weight_problem(cls: str, variable: str, config: dict[str, Any], shape: tuple[int, ...]) -> str | None:
    """Why a stored ``variable`` of shape ``shape`` cannot be a ``cls`` layer's with ``config`` (None when it
    can, or when ckpt does not know what the config makes)."""
    fixed = VARIABLE_SHAPES.get(cls, {}).get(variable)
    if not fixed:
        return None
    values = {argument: config.get(argument) for _, argument in fixed.values()}
    if not all(_count(v) for v in values.values()):
        return None  # refused with the arguments
    said = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
    rank = max(d + 1 if d >= 0 else -d for d in fixed)
    if len(shape) < rank:
        return f"its config ({said}) makes {variable} of {rank} or more dimensions, the file holds {list(shape)}"
    wanted = list(shape)
    for dim, (multiple, argument) in fixed.items():
        wanted[dim] = multiple * int(values[argument] or 0)
    if wanted == list(shape):
        return None
    return f"its config ({said}) makes {variable} {wanted}, the file holds {list(shape)}"
