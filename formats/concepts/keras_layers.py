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
- What a Keras 2 model config becomes in Keras 3 (``ckpt convert --to keras``): the classes Keras 3 has
  (:data:`KERAS3_LAYERS`, :data:`KERAS3_CLASSES`, :data:`KERAS3_OBJECTS`, :data:`KERAS3_ACTIVATIONS`), the class
  names Keras 2 wrote that Keras 3 spells otherwise (:data:`KERAS2_CLASSES`, :data:`KERAS2_OPERATIONS`), the
  arguments Keras 3 refuses or renames (:data:`KERAS2_ARGUMENTS`, :data:`KERAS2_RENAMED_ARGUMENTS`) and the
  activations that compute something else in Keras 3 (:data:`CHANGED_ACTIVATIONS`).
"""
from __future__ import annotations

import re

__all__ = ["VARIABLES", "KERAS2_NAMES", "SUB_OBJECTS", "SUB_OBJECT_CONFIGS", "SUB_OBJECT_NAMES", "NON_TRAINABLE",
           "CELLS", "to_snake_case", "by_snake_name", "keras3_names", "keras3_spelling", "KERAS3_WORDS",
           "is_automatic", "automatic_family", "has_variable", "KERAS3_LAYERS", "KERAS3_CLASSES", "KERAS3_OBJECTS",
           "KERAS3_ACTIVATIONS", "KERAS2_CLASSES", "KERAS2_OPERATIONS", "KERAS2_CONSTANT_OPERATIONS",
           "KERAS3_OPERATIONS_MODULE", "KERAS2_ARGUMENTS", "KERAS2_RENAMED_ARGUMENTS", "CHANGED_ACTIVATIONS",
           "ANY_VALUE", "KERAS3_LAYERS_MODULE", "DTYPE_POLICY"]

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
    "Normalization": [("mean", "!mean"), ("variance", "!mean"), ("count", "!mean")],
    "Attention": [("scale", "use_scale"), ("concat_score_weight", "score_mode=concat")],
    "AdditiveAttention": [("scale", "use_scale")],
}
"""Class name -> ``(variable, config flag that can leave it out)`` in creation (= storage) order; a flag
``"!name"`` leaves the variable out when the config sets ``name`` (a ``Normalization`` given its ``mean`` has
no variables), ``"name=value"`` keeps it only for that value: see :func:`has_variable`."""

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
    "RNN": {"cell": None},
    "TimeDistributed": {"layer": None},
}
"""Class name -> {Keras 3 attribute a sub-object is saved under: its class (None: the wrapped layer's)}, in the
order the layer creates them (which is the order Keras 2 lists their weights in)."""

SUB_OBJECT_CONFIGS: dict[str, dict[str, tuple[str, ...] | dict[str, str]]] = {
    "MultiHeadAttention": {attr: {"bias_axes": "use_bias"} for attr in SUB_OBJECTS["MultiHeadAttention"]},
    "Bidirectional": {"forward_layer": ("layer",), "backward_layer": ("backward_layer", "layer")},
    "RNN": {"cell": ("cell",)},
    "TimeDistributed": {"layer": ("layer",)},
}
"""Where a sub-object's config comes from: a tuple names the entries of the layer's config holding it (the first
one set; a serialized layer, whose class is the sub-object's), a dict builds it from the layer's config
({sub-object flag: the layer's flag}: a ``MultiHeadAttention``'s projections have a bias when it has
``use_bias``). A recurrent layer's ``cell`` takes the layer's own config (Keras keeps the cell's arguments there)."""

SUB_OBJECT_NAMES: dict[str, dict[str, str]] = {
    "MultiHeadAttention": {"query_dense": "query", "key_dense": "key", "value_dense": "value",
                           "output_dense": "attention_output"},
    "LSTM": {"cell": "lstm_cell"}, "GRU": {"cell": "gru_cell"}, "SimpleRNN": {"cell": "simple_rnn_cell"},
}
"""The name a layer gives its sub-object (``keras/src/layers/attention/multi_head_attention.py``: ``EinsumDense(...,
name="query")``; ``rnn/lstm.py``: ``LSTMCell(..., name="lstm_cell")``), which Keras 3 saves as the ``name`` attribute
of the sub-object's ``vars`` group and Keras 2 put in its weights' names. A wrapped layer (``Bidirectional``'s,
``TimeDistributed``'s, an ``RNN``'s cell) keeps the name in its own config."""

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


def has_variable(flag: str | None, config: dict[str, object]) -> bool:
    """Whether a variable of :data:`VARIABLES` with ``flag`` exists in a layer with ``config``: no flag, a flag the
    config sets true (or leaves out: every flag defaults to true), ``"!name"`` with ``name`` unset (None), or
    ``"name=value"`` with ``name`` set to ``value``."""
    if flag is None:
        return True
    if flag.startswith("!"):
        return config.get(flag[1:]) is None
    if "=" in flag:
        name, _, value = flag.partition("=")
        return config.get(name) == value
    return bool(config.get(flag, True))


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


# -- a Keras 2 model config in Keras 3 (ckpt convert --to keras) ---------------------------------------------
KERAS3_LAYERS = frozenset("""
Activation ActivityRegularization AdaptiveAveragePooling1D AdaptiveAveragePooling2D AdaptiveAveragePooling3D
AdaptiveMaxPooling1D AdaptiveMaxPooling2D AdaptiveMaxPooling3D Add AdditiveAttention AlphaDropout Attention AugMix
AutoContrast Average AveragePooling1D AveragePooling2D AveragePooling3D BatchNormalization Bidirectional
CategoryEncoding CenterCrop Concatenate ContrastLimitedAdaptiveHistogramEqualization Conv1D Conv1DTranspose Conv2D
Conv2DTranspose Conv3D Conv3DTranspose ConvLSTM1D ConvLSTM2D ConvLSTM3D Cropping1D Cropping2D Cropping3D CutMix Dense
DepthwiseConv1D DepthwiseConv2D Discretization Dot Dropout ELU EinsumDense Embedding Equalization Flatten GRU GRUCell
GaussianDropout GaussianNoise GlobalAveragePooling1D GlobalAveragePooling2D GlobalAveragePooling3D GlobalMaxPooling1D
GlobalMaxPooling2D GlobalMaxPooling3D GroupNormalization GroupedQueryAttention HashedCrossing Hashing Identity
InputLayer IntegerLookup LSTM LSTMCell Lambda LayerNormalization LeakyReLU Masking MaxNumBoundingBoxes MaxPooling1D
MaxPooling2D MaxPooling3D Maximum MelSpectrogram Minimum MixUp MultiHeadAttention Multiply Normalization PReLU
Permute Pipeline RMSNormalization RNN RandAugment RandomBrightness RandomColorDegeneration RandomColorJitter
RandomContrast RandomCrop RandomElasticTransform RandomErasing RandomFlip RandomGaussianBlur RandomGrayscale RandomHue
RandomInvert RandomPerspective RandomPosterization RandomRotation RandomSaturation RandomSharpness RandomShear
RandomTranslation RandomZoom ReLU RepeatVector Rescaling Reshape Resizing ReversibleEmbedding STFTSpectrogram
SeparableConv1D SeparableConv2D SimpleRNN SimpleRNNCell Softmax Solarization SpatialDropout1D SpatialDropout2D
SpatialDropout3D SpectralNormalization StackedRNNCells StringLookup Subtract TextVectorization TimeDistributed
UnitNormalization UpSampling1D UpSampling2D UpSampling3D ZeroPadding1D ZeroPadding2D ZeroPadding3D
""".split())
"""The layer classes of Keras 3's ``keras.layers`` (3.15), by class name: a config names them with ``module``
:data:`KERAS3_LAYERS_MODULE`."""
KERAS3_LAYERS_MODULE = "keras.layers"
"""The ``module`` a Keras 3 config gives the classes of :data:`KERAS3_LAYERS`."""
DTYPE_POLICY = ("keras", "DTypePolicy")
"""``(module, class_name)`` of a layer's dtype policy in a Keras 3 config."""

KERAS3_CLASSES: dict[str, tuple[str, str | None]] = {
    "Functional": ("keras.src.models.functional", "Functional"),
    "Sequential": ("keras", None),
    "LayerScale": ("keras.src.applications.convnext", "LayerScale"),
}
"""Built-in Keras 3 classes outside ``keras.layers`` -> ``(module, registered_name)`` as Keras 3 configs name
them (ConvNeXt's ``LayerScale`` is a layer of ``keras.applications``)."""

KERAS3_OBJECTS: dict[str, tuple[str, frozenset[str]]] = {
    "initializer": ("keras.initializers", frozenset(
        "Constant GlorotNormal GlorotUniform HeNormal HeUniform Identity IdentityInitializer LecunNormal LecunUniform "
        "Ones Orthogonal OrthogonalInitializer RandomNormal RandomUniform STFT STFTInitializer TruncatedNormal "
        "VarianceScaling Zeros".split())),
    "regularizer": ("keras.regularizers", frozenset("L1 L1L2 L2 OrthogonalRegularizer".split())),
    "constraint": ("keras.constraints", frozenset("MaxNorm MinMaxNorm NonNeg UnitNorm".split())),
}
"""What a layer argument ``*_initializer``, ``*_regularizer`` or ``*_constraint`` holds -> ``(module, the class
names Keras 3 has there)``."""

KERAS3_ACTIVATIONS = frozenset("""
celu elu exponential gelu glu hard_shrink hard_sigmoid hard_silu hard_swish hard_tanh leaky_relu linear log_sigmoid
log_softmax mish relu relu6 selu sigmoid silu soft_shrink softmax softplus softsign sparse_plus sparse_sigmoid
sparsemax squareplus swish tanh tanh_shrink threshold
""".split())
"""The activation functions Keras 3 has, by the name a config gives them."""

CHANGED_ACTIVATIONS: dict[str, str] = {
    "hard_sigmoid": "Keras 2's hard_sigmoid is clip(0.2x + 0.5, 0, 1), Keras 3's clip(x/6 + 0.5, 0, 1)",
}
"""Activations of the same name that compute something else in Keras 3 -> how they differ."""

KERAS2_CLASSES: dict[str, str] = {
    "Model": "Functional",
    **{alias: cls for cls, aliases in {
        "AveragePooling1D": ("AvgPool1D",), "AveragePooling2D": ("AvgPool2D",), "AveragePooling3D": ("AvgPool3D",),
        "MaxPooling1D": ("MaxPool1D",), "MaxPooling2D": ("MaxPool2D",), "MaxPooling3D": ("MaxPool3D",),
        "GlobalAveragePooling1D": ("GlobalAvgPool1D",), "GlobalAveragePooling2D": ("GlobalAvgPool2D",),
        "GlobalAveragePooling3D": ("GlobalAvgPool3D",), "GlobalMaxPooling1D": ("GlobalMaxPool1D",),
        "GlobalMaxPooling2D": ("GlobalMaxPool2D",), "GlobalMaxPooling3D": ("GlobalMaxPool3D",),
        "Conv1D": ("Convolution1D",), "Conv2D": ("Convolution2D",), "Conv3D": ("Convolution3D",),
        "Conv1DTranspose": ("Convolution1DTranspose",), "Conv2DTranspose": ("Convolution2DTranspose", "Deconv2D"),
        "Conv3DTranspose": ("Convolution3DTranspose", "Deconv3D"),
        "SeparableConv1D": ("SeparableConvolution1D",), "SeparableConv2D": ("SeparableConvolution2D",),
    }.items() for alias in aliases},
}
"""Class names a Keras 2 config may give -> the Keras 3 class (the name Keras 3 saves it by)."""

KERAS2_OPERATIONS: dict[str, str] = {
    "__operators__.add": "Add", "math.add": "Add", "math.subtract": "Subtract", "__operators__.sub": "Subtract",
    "math.multiply": "Multiply",
}
"""tf-keras ``TFOpLambda`` functions (``x + y`` between two layer outputs) -> the Keras 3 merge layer computing
the same from the two tensors."""

KERAS2_CONSTANT_OPERATIONS: dict[str, str] = {
    "__operators__.add": "Add", "math.add": "Add", "math.subtract": "Subtract", "__operators__.sub": "Subtract",
    "math.multiply": "Multiply", "math.truediv": "TrueDivide", "__operators__.truediv": "TrueDivide",
}
"""tf-keras ``TFOpLambda`` functions between a layer output and a number (MobileNetV3's ``x + 3.0`` and
``x * (1 / 6)``) -> the Keras 3 operation (:data:`KERAS3_OPERATIONS_MODULE`) computing the same, as Keras 3 itself
writes ``x + 3.0`` into a Functional model's config: ``{"args": [tensor, 3.0], "kwargs": {}}``."""

KERAS3_OPERATIONS_MODULE = "keras.src.ops.numpy"
"""The module Keras 3 names for the operations of :data:`KERAS2_CONSTANT_OPERATIONS` (``Add``, ``TrueDivide``);
an operation is no layer: it holds no variables and ``model.layers`` leaves it out."""

ANY_VALUE = object()
"""In :data:`KERAS2_ARGUMENTS`: the argument never changes what the model computes, whatever its value."""

_GROUPS: dict[str, object] = {"groups": 1}
_RNN: dict[str, object] = {"time_major": False}
_RANDOM: dict[str, object] = {"rng_type": ANY_VALUE, "force_generator": ANY_VALUE}
KERAS2_ARGUMENTS: dict[str, dict[str, object]] = {
    **{cls: _GROUPS for cls in ("Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "DepthwiseConv1D",
                                "DepthwiseConv2D")},
    **{cls: {**_GROUPS, "kernel_initializer": ANY_VALUE, "kernel_regularizer": ANY_VALUE,
             "kernel_constraint": ANY_VALUE} for cls in ("SeparableConv1D", "SeparableConv2D")},
    **{cls: _RNN for cls in ("LSTM", "GRU", "SimpleRNN", "RNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")},
    **{cls: _RANDOM for cls in ("Dropout", "AlphaDropout", "GaussianDropout", "GaussianNoise", "Attention",
                                "AdditiveAttention", "LSTMCell", "GRUCell", "SimpleRNNCell", "RandomBrightness",
                                "RandomContrast", "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation",
                                "RandomZoom")},
    **{cls: {**_RANDOM, "trainable": ANY_VALUE, "noise_shape": ANY_VALUE}
       for cls in ("SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")},
    "MultiHeadAttention": {"query_shape": ANY_VALUE, "key_shape": ANY_VALUE, "value_shape": ANY_VALUE,
                           "softmax_robust_masking": False},
    "Softmax": {"robust_masking": False},
    "BatchNormalization": {"fused": ANY_VALUE, "virtual_batch_size": ANY_VALUE, "adjustment": None},
    "Embedding": {"input_length": ANY_VALUE},
    "InputLayer": {"type_spec": None},
}
"""Class -> {argument a Keras 2 config holds that Keras 3 refuses: the value at which leaving it out changes
nothing (:data:`ANY_VALUE`: any value - random-number generators, initializers of a kernel SeparableConv never
creates, what only training uses)}. Another value cannot be translated."""

KERAS2_RENAMED_ARGUMENTS: dict[str, dict[str, str]] = {
    "LeakyReLU": {"alpha": "negative_slope"},
    "InputLayer": {"batch_input_shape": "batch_shape"},
}
"""Class -> {Keras 2 argument: the Keras 3 argument taking the same value}."""
