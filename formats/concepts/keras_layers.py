"""What ckpt knows of Keras' built-in layers, written down once as data.

- :data:`VARIABLES`: each class's variables in the order the layer creates them, which is the order both
  Keras 2 (``layer.weights``: trainable first) and Keras 3 (``vars/0, 1, ...``) store them; a variable
  that a config flag can leave out names that flag (``("gamma", "scale")``: no ``gamma`` when
  ``scale=False``).
- :data:`KERAS2_NAMES`: the variables Keras 2 named differently (``DepthwiseConv2D``'s ``depthwise_kernel``
  is Keras 3's ``kernel``; ConvNeXt's ``LayerScale`` held an unnamed ``tf.Variable``).
- :data:`SUB_OBJECTS`: the objects a layer saves its variables under, by the attribute name Keras 3 uses
  (``MultiHeadAttention``'s ``query_dense``, an RNN's ``cell``) and their class.
- :func:`is_automatic`: whether a layer name is one Keras gave by itself (``dense_3``); such a name says
  only which class and in which order a layer was created in one process, never which layer it is.
"""
from __future__ import annotations

import re

__all__ = ["VARIABLES", "KERAS2_NAMES", "SUB_OBJECTS", "NON_TRAINABLE", "CELLS", "to_snake_case", "by_snake_name",
           "keras3_names", "keras3_spelling", "KERAS3_WORDS",
           "is_automatic", "automatic_family"]

_BIAS = ("bias", "use_bias")
_KERNEL_BIAS = [("kernel", None), _BIAS]
_NORM: list[tuple[str, str | None]] = [("gamma", "scale"), ("beta", "center")]
_RNN_CELL = [("kernel", None), ("recurrent_kernel", None), _BIAS]

VARIABLES: dict[str, list[tuple[str, str | None]]] = {
    "Dense": _KERNEL_BIAS, "EinsumDense": [("kernel", None), ("bias", "bias_axes")],
    "Conv1D": _KERNEL_BIAS, "Conv2D": _KERNEL_BIAS, "Conv3D": _KERNEL_BIAS,
    "Conv1DTranspose": _KERNEL_BIAS, "Conv2DTranspose": _KERNEL_BIAS, "Conv3DTranspose": _KERNEL_BIAS,
    "DepthwiseConv1D": _KERNEL_BIAS, "DepthwiseConv2D": _KERNEL_BIAS,
    "SeparableConv1D": [("depthwise_kernel", None), ("pointwise_kernel", None), _BIAS],
    "SeparableConv2D": [("depthwise_kernel", None), ("pointwise_kernel", None), _BIAS],
    "Embedding": [("embeddings", None)],
    "BatchNormalization": [*_NORM, ("moving_mean", None), ("moving_variance", None)],
    "LayerNormalization": _NORM, "GroupNormalization": _NORM,
    "LSTMCell": _RNN_CELL, "GRUCell": _RNN_CELL, "SimpleRNNCell": _RNN_CELL,
    "PReLU": [("alpha", None)],
    "LayerScale": [("gamma", None)],
}
"""Class name -> ``(variable, config flag that can leave it out)`` in creation (= storage) order."""

KERAS2_NAMES: dict[str, dict[str, str]] = {
    "DepthwiseConv1D": {"depthwise_kernel": "kernel"},
    "DepthwiseConv2D": {"depthwise_kernel": "kernel"},
    "LayerScale": {"Variable": "gamma"},
}
"""Class name -> {Keras 2 variable name: Keras 3 variable name} where the two differ."""

CELLS = {"LSTM": "LSTMCell", "GRU": "GRUCell", "SimpleRNN": "SimpleRNNCell"}
"""Recurrent layer class -> the class of the ``cell`` it saves its variables under."""

SUB_OBJECTS: dict[str, dict[str, str | None]] = {
    "MultiHeadAttention": {"query_dense": "EinsumDense", "key_dense": "EinsumDense", "value_dense": "EinsumDense",
                           "output_dense": "EinsumDense"},
    "Bidirectional": {"forward_layer": None, "backward_layer": None},
    **{rnn: {"cell": cell} for rnn, cell in CELLS.items()},
}
"""Class name -> {Keras 3 attribute a sub-object is saved under: its class (None: the wrapped layer's)}."""

NON_TRAINABLE = frozenset({"moving_mean", "moving_variance"})
"""Variables of these names are never trainable (batch normalization statistics)."""

_AUTOMATIC_CLASSES = (
    *VARIABLES, *CELLS, *SUB_OBJECTS, "Activation", "Add", "AveragePooling1D", "AveragePooling2D", "Concatenate",
    "Conv2DTranspose", "Cropping2D", "Dot", "Dropout", "Flatten", "Functional", "GlobalAveragePooling1D",
    "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "InputLayer", "Lambda", "Masking",
    "MaxPooling1D", "MaxPooling2D", "Model", "Multiply", "Normalization", "Permute", "ReLU", "RepeatVector",
    "Rescaling", "Reshape", "Sequential", "SpatialDropout1D", "SpatialDropout2D", "Subtract", "TimeDistributed",
    "UpSampling2D", "ZeroPadding2D", "LeakyReLU", "Softmax", "ELU", "CategoryEncoding", "Hashing",
    "StringLookup", "IntegerLookup", "TextVectorization", "Discretization", "UnitNormalization", "Identity",
)


def to_snake_case(name: str) -> str:
    """Keras' ``to_snake_case`` (``BatchNormalization`` -> ``batch_normalization``, ``Conv2D`` -> ``conv2d``)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


_SNAKE = {to_snake_case(c): c for c in _AUTOMATIC_CLASSES}
_SNAKE.update(functional="Functional", model="Model", input_layer="InputLayer")
_NUMBERED = re.compile(r"^(.*?)(?:_(\d+))?$")


def by_snake_name(name: str) -> str | None:
    """The class Keras names objects after: ``batch_normalization_3`` -> ``BatchNormalization``, ``lstm_cell``
    -> ``LSTMCell``; None for any other name."""
    hit = _SNAKE.get(name)
    if hit is None:
        match = _NUMBERED.match(name)
        hit = _SNAKE.get(match.group(1)) if match and match.group(2) else None
    return hit


def automatic_family(name: str) -> tuple[str, int] | None:
    """``("dense", 3)`` for ``dense_3``, ``("dense", 0)`` for ``dense``: the class's snake name and the number
    Keras appended, for a name Keras gives by itself; None for a name someone chose."""
    match = _NUMBERED.match(name)
    if match is None or match.group(1) not in _SNAKE:
        return None
    return match.group(1), int(match.group(2)) if match.group(2) else 0


def is_automatic(name: str) -> bool:
    """Whether ``name`` has the form Keras gives unnamed layers (``dense``, ``dense_3``, ``conv2d_1``)."""
    return automatic_family(name) is not None


def _keras2_signatures() -> dict[tuple[str, ...], tuple[str, ...]]:
    """Keras 2's variable names of each layer in :data:`KERAS2_NAMES` (all of them, and the required ones)
    -> Keras 3's, for the classes whose Keras 2 names tell them from every other class."""
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    for cls, renames in KERAS2_NAMES.items():
        back = {new: old for old, new in renames.items()}
        table = VARIABLES[cls]
        for roles in ([r for r, _ in table], [r for r, flag in table if flag is None]):
            found[tuple(back.get(r, r) for r in roles)] = tuple(roles)
    return found


_KERAS2_SIGNATURES = _keras2_signatures()


def keras3_names(names: list[str]) -> list[str]:
    """One layer's variable names (in its order) as Keras 3 names them: ``["depthwise_kernel", "bias"]`` (a
    Keras 2 ``DepthwiseConv2D``) -> ``["kernel", "bias"]``; any other list is returned as it is."""
    return list(_KERAS2_SIGNATURES.get(tuple(names), names))


KERAS3_WORDS = {"batchnorm": "bn"}
"""Words of layer names Keras 3's applications spell otherwise than Keras 2's did (MobileNetV3's
``expanded_conv/depthwise/BatchNorm`` is Keras 3's ``expanded_conv_depthwise_bn``)."""
_WORD = re.compile(r"[^a-z0-9]+")


def keras3_spelling(name: str) -> str:
    """A layer name as Keras 3 spells it: lower case, words joined by ``_`` (Keras 3 refuses ``/`` in a name),
    and :data:`KERAS3_WORDS` respelled: ``Conv/BatchNorm`` -> ``conv_bn``."""
    words = [w for w in _WORD.split(name.lower()) if w]
    return "_".join(KERAS3_WORDS.get(w, w) for w in words)
