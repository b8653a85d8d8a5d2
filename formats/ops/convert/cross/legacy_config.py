"""A Keras 2 layer's config as Keras 3 builds it: the objects of a ``model_config`` one by one.

Keras 3 configs name every object by ``module``, ``class_name`` and ``registered_name``
(``{"module": "keras.layers", "class_name": "Dense", "config": {...}, "registered_name": None}``); Keras 2 wrote
``class_name`` and ``config`` only, with arguments Keras 3 refuses. :class:`Translator` turns one object at a
time into Keras 3's form, from the tables of :mod:`formats.concepts.keras_layers`:

- the class: a built-in Keras 3 class (aliases such as ``Convolution2D`` under the name Keras 3 saves,
  ``Model`` as ``Functional``), else a refusal naming it (a custom class, or one Keras 3 dropped);
- its arguments: those Keras 3 refuses are left out when their value changes nothing (``groups=1``,
  ``time_major=False``), renamed where Keras 3 renamed them (``LeakyReLU``'s ``alpha``); ``batch_input_shape``
  becomes an ``InputLayer``'s ``batch_shape`` and leaves the other layers; a one-element ``axis`` list is an int
  (as Keras 3's own legacy loader reads it); the dtype a ``DTypePolicy``; initializers, regularizers and
  constraints in Keras 3's form; wrapped layers (``Bidirectional``, ``TimeDistributed``, an ``RNN``'s cell)
  translated alike, a ``Bidirectional``'s forward and backward layers both written and named as Keras 3 writes
  them (:func:`bidirectional`); activations checked (Keras 3's ``hard_sigmoid`` computes something else).

Models (their layers, calls and names) are :mod:`formats.ops.convert.cross.legacy_model`'s. Whatever cannot be
translated is a refusal (:attr:`Translator.refusals`), never a guess.
"""
from __future__ import annotations

import copy

from formats.concepts.keras_layers import (ANY_VALUE, CHANGED_ACTIVATIONS, DTYPE_POLICY, KERAS2_ARGUMENTS,
                                           KERAS2_CLASSES, KERAS2_CONSTANT_OPERATIONS, KERAS2_OPERATIONS,
                                           KERAS2_RENAMED_ARGUMENTS,
                                           KERAS3_ACTIVATIONS, KERAS3_CLASSES, KERAS3_LAYERS, KERAS3_LAYERS_MODULE,
                                           KERAS3_OBJECTS)
from formats.ops.convert.cross.legacy_checks import argument_problems

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Translator", "keras3_class", "layer_object", "dtype_policy", "bidirectional", "MODELS", "WRAPPED_LAYERS"]

MODELS = ("Functional", "Sequential")
"""The model classes whose configs hold layers (translated by the model translator)."""
WRAPPED_LAYERS = ("layer", "backward_layer", "cell")
"""Layer arguments holding one serialized layer (``Bidirectional``, ``TimeDistributed``, ``RNN``)."""
_LAYER_LISTS = ("cells",)
_KEYS = ("class_name", "config")


def keras3_class(class_name: str) -> str:
    """The Keras 3 class a Keras 2 ``class_name`` names (``Convolution2D`` -> ``Conv2D``; itself otherwise)."""
    return KERAS2_CLASSES.get(class_name, class_name)


def layer_object(cls: str, config: dict[str, Any]) -> dict[str, Any]:
    """``{"module", "class_name", "config", "registered_name"}`` of a built-in Keras 3 class."""
    module, registered = KERAS3_CLASSES.get(cls, (KERAS3_LAYERS_MODULE, None))
    return {"module": module, "class_name": cls, "config": config, "registered_name": registered}


def dtype_policy(name: str) -> dict[str, Any]:
    """Keras 3's serialized ``DTypePolicy`` of ``name`` (``float32``, ``mixed_float16``)."""
    module, cls = DTYPE_POLICY
    return {"module": module, "class_name": cls, "config": {"name": name}, "registered_name": None}


def bidirectional(config: dict[str, Any]) -> dict[str, Any]:
    """A translated ``Bidirectional`` config as Keras 3 writes it (``keras/src/layers/rnn/bidirectional.py``:
    ``get_config``): ``layer`` the forward layer, named ``forward_<name>``, and ``backward_layer`` always (Keras 2
    wrote it only when given; otherwise it was the layer's config with ``go_backwards`` flipped), named
    ``backward_<name>``: the names both Keras versions give the two layers, which Keras 3 saves as their ``vars``
    groups' ``name``. Both return sequences with ``zero_output_for_mask`` set as the wrapper forces it."""
    forward = config.get("layer")
    if not isinstance(forward, dict) or not isinstance(forward.get("config"), dict):
        return config  # refused already
    backward = config.get("backward_layer")
    if not isinstance(backward, dict) or not isinstance(backward.get("config"), dict):
        backward = copy.deepcopy(forward)
        backward["config"]["go_backwards"] = not forward["config"].get("go_backwards", False)
    for layer, prefix in ((forward, "forward_"), (backward, "backward_")):
        inner = layer["config"] = dict(layer["config"])
        name = str(inner.get("name", ""))
        inner["name"] = prefix + (name[len(prefix):] if name.startswith(prefix) else name)
        if "return_sequences" in inner:
            inner["zero_output_for_mask"] = bool(inner["return_sequences"])
    return {**config, "layer": forward, "backward_layer": backward}


def _is_object(value: Any) -> bool:
    return isinstance(value, dict) and all(k in value for k in _KEYS) and isinstance(value["class_name"], str)


class Translator:
    """Translates the objects of one Keras 2 model config; what cannot be translated is added to
    :attr:`refusals` (each a sentence naming the layer). ``model(obj, where)`` is called for a nested model
    (set by the model translator)."""

    def __init__(self) -> None:
        self.refusals: list[str] = []
        self.model: Any = None

    def refuse(self, where: str, message: str) -> None:
        """Record why the layer ``where`` cannot be translated."""
        self.refusals.append(f"layer {where!r}: {message}" if where else message)

    # -- layers ---------------------------------------------------------------------------------------
    def layer(self, obj: Any, where: str) -> dict[str, Any] | None:
        """A serialized Keras 2 layer (a model too) in Keras 3's form; None when refused."""
        if not _is_object(obj) or not isinstance(obj["config"], (dict, list)):
            self.refuse(where, "not a serialized Keras layer")
            return None
        cls = keras3_class(obj["class_name"])
        if cls in MODELS:
            return self.model(obj, where)
        if not self.known(cls, where):
            return None
        if not isinstance(obj["config"], dict):
            self.refuse(where, f"the config of a {cls} layer is a {type(obj['config']).__name__}, not an object")
            return None
        config = self.arguments(cls, dict(obj["config"]), where)
        return layer_object(cls, bidirectional(config) if cls == "Bidirectional" else config)

    def known(self, cls: str, where: str) -> bool:
        """Whether Keras 3 has the layer class ``cls``; a refusal saying why not otherwise."""
        if cls in KERAS3_LAYERS or cls in KERAS3_CLASSES:
            if cls == "Lambda":
                self.refuse(where, "a Lambda layer holds Python bytecode, which Keras 3 loads only with "
                                   "safe_mode=False; ckpt does not translate it")
                return False
            return True
        if cls in ("TFOpLambda", "SlicingOpLambda"):
            self.refuse(where, f"a TensorFlow operation ({cls}) that Keras 3 cannot rebuild (ckpt translates "
                               f"{', '.join(sorted(KERAS2_OPERATIONS))} between two layer outputs, and "
                               f"{', '.join(sorted(KERAS2_CONSTANT_OPERATIONS))} with a number)")
        elif cls in ("LocallyConnected1D", "LocallyConnected2D", "DenseFeatures", "ThresholdedReLU", "RandomHeight",
                     "RandomWidth"):
            self.refuse(where, f"class {cls} is a Keras 2 layer that Keras 3 does not have")
        else:
            self.refuse(where, f"class {cls} is not built into Keras (a custom layer: Keras 3 needs its code, "
                               "which a config does not hold)")
        return False

    def arguments(self, cls: str, config: dict[str, Any], where: str) -> dict[str, Any]:
        """A layer's config with Keras 3's arguments (see the module docstring)."""
        if cls != "InputLayer":  # an InputLayer's is renamed below; the model places the others' (Sequential)
            config.pop("batch_input_shape", None)
            config.pop("batch_size", None)
        if isinstance(config.get("name"), str) and "/" in config["name"]:
            config["name"] = config["name"].replace("/", "_")  # Keras 3 refuses "/" (a model makes it unique)
        for arg, safe in KERAS2_ARGUMENTS.get(cls, {}).items():
            if arg in config:
                value = config.pop(arg)
                if safe is not ANY_VALUE and value != safe:
                    self.refuse(where, f"{cls} with {arg}={value!r}, which Keras 3 does not have "
                                       f"(only {arg}={safe!r} translates)")
        for old, new in KERAS2_RENAMED_ARGUMENTS.get(cls, {}).items():
            if old in config:
                config[new] = config.pop(old)
        if config.get("activity_regularizer", 0) is None:
            del config["activity_regularizer"]  # Keras 3 writes it only when set
        axis = config.get("axis")
        if isinstance(axis, list) and len(axis) == 1 and isinstance(axis[0], int):
            config["axis"] = axis[0]
        for key, value in list(config.items()):
            config[key] = self.value(cls, key, value, where)
        for problem in argument_problems(cls, config):
            self.refuse(where, f"{cls}'s {problem} (Keras 3 refuses it)")
        return config

    def value(self, cls: str, key: str, value: Any, where: str) -> Any:
        """One argument's value in Keras 3's form."""
        if key == "dtype":
            return value if cls == "InputLayer" else self.dtype(value, where)
        if key in ("activation", "recurrent_activation"):
            return self.activation(value, where)
        if key in WRAPPED_LAYERS and value is not None:
            return self.layer(value, f"{where}/{key}")
        if key in _LAYER_LISTS and isinstance(value, list):
            return [self.layer(v, f"{where}/{key}/{i}") for i, v in enumerate(value)]
        kind = next((k for k in KERAS3_OBJECTS if key.endswith(f"_{k}")), None)
        if kind is not None and _is_object(value):
            return self.keras_object(kind, value, where)
        if _is_object(value) and isinstance(value["config"], dict):
            self.refuse(where, f"argument {key} holds a {value['class_name']} object, which ckpt does not translate")
        return value

    # -- what layers hold -----------------------------------------------------------------------------
    def dtype(self, value: Any, where: str) -> Any:
        """A layer's ``dtype`` (a name, or a Keras 2 ``Policy``) as Keras 3's ``DTypePolicy``."""
        if value is None:
            return None
        if isinstance(value, str):
            return dtype_policy(value)
        if _is_object(value) and isinstance(value["config"], dict) and isinstance(value["config"].get("name"), str) \
                and value["class_name"] in ("Policy", DTYPE_POLICY[1]):
            return dtype_policy(value["config"]["name"])
        self.refuse(where, f"dtype {value!r} is not a dtype policy ckpt knows")
        return None

    def activation(self, value: Any, where: str) -> Any:
        """An activation name, checked: Keras 3 has it and computes what Keras 2 computed."""
        if value is None:
            return None
        if not isinstance(value, str):
            self.refuse(where, f"activation {value!r} is not a built-in activation")
        elif value in CHANGED_ACTIVATIONS:
            self.refuse(where, f"activation {value!r} differs in Keras 3 ({CHANGED_ACTIVATIONS[value]}): the model "
                               "would predict otherwise")
        elif value not in KERAS3_ACTIVATIONS:
            self.refuse(where, f"activation {value!r} is not built into Keras 3 (a custom function?)")
        return value

    def keras_object(self, kind: str, value: dict[str, Any], where: str) -> dict[str, Any] | None:
        """An initializer, regularizer or constraint in Keras 3's form."""
        module, classes = KERAS3_OBJECTS[kind]
        cls = value["class_name"]
        config = value["config"]
        if cls not in classes or not isinstance(config, dict):
            self.refuse(where, f"{kind} {cls} is not built into Keras 3")
            return None
        config = dict(config)
        if kind == "initializer":
            config.pop("dtype", None)  # TF1-era initializers named theirs; Keras 3 takes it from the variable
            if cls == "VarianceScaling" and config.get("distribution") == "normal":
                config["distribution"] = "truncated_normal"  # what Keras 2 (and Keras 3) draw for "normal"
        return {"module": module, "class_name": cls, "config": config, "registered_name": None}
