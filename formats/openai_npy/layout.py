"""The file names of OpenAI's GPT-1 release and the format's name (shared by the registry entry and the reader)."""
from __future__ import annotations

__all__ = ["OPENAI_NPY", "SHAPES_FILE", "NAMES_FILE"]

OPENAI_NPY = "openai-npy"
"""The format's (and the layout's) name."""
SHAPES_FILE = "params_shapes.json"
"""Every array's shape, in order."""
NAMES_FILE = "parameters_names.json"
"""transformers' loader's list of variable names (huggingface/pytorch-openai-transformer-lm), when present."""
