"""``tf.train`` and ``tf.compat.v1.train``: finding, listing and reading checkpoints.

Also TF1's ``NewCheckpointReader``, ``checkpoint_exists`` and ``get_checkpoint_mtimes``, which
TensorFlow 2 keeps only under ``tf.compat.v1.train``; everything else of ``tf.train`` (``Checkpoint``,
``CheckpointManager``, ``Saver``, ...) needs TensorFlow and says so when used.
"""
from __future__ import annotations

from formats.tf._missing import module_getattr
from formats.tf.checkpoint_management import (CheckpointState, checkpoint_exists, get_checkpoint_mtimes,
                                              get_checkpoint_state, latest_checkpoint)
from formats.tf.checkpoint_utils import checkpoints_iterator, list_variables, load_checkpoint, load_variable
from formats.tf.reader import CheckpointReader, NewCheckpointReader

__all__ = ["latest_checkpoint", "get_checkpoint_state", "CheckpointState", "list_variables", "load_variable",
           "load_checkpoint", "NewCheckpointReader", "CheckpointReader", "checkpoints_iterator", "checkpoint_exists",
           "get_checkpoint_mtimes"]

__getattr__ = module_getattr("tf.train")
