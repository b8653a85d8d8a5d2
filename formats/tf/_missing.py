"""What the stand-in says about the parts of TensorFlow it does not have: one clear error, naming them."""
from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["NeedsTensorFlowError", "NeedsTensorFlowImportError", "needs_tensorflow", "module_getattr"]


def needs_tensorflow(what: str) -> str:
    """The message for a TensorFlow name ``what`` (``tf.keras``) the stand-in lacks."""
    return (f"{what} is not part of ckpt's TensorFlow stand-in (formats.tf), which only reads checkpoints: "
            f"this needs TensorFlow itself (pip install tensorflow)")


class NeedsTensorFlowError(AttributeError):
    """An attribute of TensorFlow that the stand-in does not provide (an ``AttributeError``, so
    ``hasattr(tf, name)`` and ``getattr(tf, name, default)`` keep working)."""


class NeedsTensorFlowImportError(ModuleNotFoundError):
    """A TensorFlow module the stand-in does not provide (``import tensorflow.keras``)."""


def module_getattr(public: str) -> Callable[[str], NoReturn]:
    """A module ``__getattr__`` (PEP 562) for a stand-in module shown to users as ``public`` (``tf.train``)."""

    def __getattr__(name: str) -> NoReturn:
        raise NeedsTensorFlowError(needs_tensorflow(f"{public}.{name}"), name=name)

    return __getattr__
