"""The table of Keras' built-in layers (formats/concepts/keras_layers.py): what the pairing reads from it."""
from __future__ import annotations

import pytest

from formats.concepts.keras_layers import (VARIABLES, automatic_family, by_snake_name, keras3_names,
                                           keras3_spelling)


@pytest.mark.parametrize(("name", "family"), [("dense", ("dense", 0)), ("dense_3", ("dense", 3)),
                                              ("batch_normalization_12", ("batch_normalization", 12)),
                                              ("conv2d_1", ("conv2d", 1)), ("conv1", None), ("block1_conv1", None),
                                              ("bn", None), ("forward_lstm", None), ("dense_head", None)])
def test_automatic_names_are_a_class_and_a_number(name: str, family: tuple[str, int] | None) -> None:
    assert automatic_family(name) == family


def test_keras2_variable_names_read_as_keras3_names_them() -> None:
    assert keras3_names(["depthwise_kernel", "bias"]) == ["kernel", "bias"]
    assert keras3_names(["depthwise_kernel"]) == ["kernel"]
    assert keras3_names(["Variable"]) == ["gamma"]  # ConvNeXt's LayerScale held an unnamed tf.Variable
    separable = ["depthwise_kernel", "pointwise_kernel", "bias"]
    assert keras3_names(separable) == separable == [r for r, _ in VARIABLES["SeparableConv2D"]]


def test_keras3_spelling_of_mobilenet_v3_layer_names() -> None:
    assert keras3_spelling("Conv/BatchNorm") == "conv_bn"
    assert keras3_spelling("expanded_conv_3/squeeze_excite/Conv_1") == "expanded_conv_3_squeeze_excite_conv_1"
    assert keras3_spelling("expanded_conv_depthwise_bn") == "expanded_conv_depthwise_bn"


def test_cells_are_known_by_their_snake_names() -> None:
    assert (by_snake_name("lstm_cell"), by_snake_name("gru_cell_2"), by_snake_name("cell")) == ("LSTMCell", "GRUCell", None)
