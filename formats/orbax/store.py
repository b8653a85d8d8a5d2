"""tensorstore, the library Orbax and T5X write their arrays with, behind a few calls: open an array from a
spec, read it, list an OCDBT database's keys. tensorstore is the optional extra ``tfckpt[orbax]``; without it
these raise one :class:`~formats.core.errors.UnsupportedError` saying what to install.

Every spec built here names a local ``file`` kvstore under the checkpoint's directory (callers check names with
:func:`formats.orbax.layout.inside` first); every tensorstore failure becomes a
:class:`~formats.core.errors.CorruptCheckpointError` of one line.
"""
from __future__ import annotations


from formats.core.errors import CorruptCheckpointError, UnsupportedError

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["INSTALL", "tensorstore", "array_spec", "open_array", "open_many", "read", "list_keys", "read_values", "one_line"]

INSTALL = "pip install 'tfckpt[orbax]'"


def tensorstore(path: str, what: str = "reading Orbax and T5X arrays") -> Any:
    """The ``tensorstore`` module; an UnsupportedError naming the extra when it is not installed."""
    try:
        import tensorstore as ts
    except ImportError:
        raise UnsupportedError(path, f"{what} needs tensorstore: {INSTALL}") from None
    return ts


def one_line(exc: BaseException) -> str:
    """A tensorstore error as one line (its first line, without the source locations it appends)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text.split(" [source locations=")[0].strip()


def array_spec(driver: str, directory: str, name: str, ocdbt: bool) -> dict[str, Any]:
    """The spec of array ``name`` (a parameter name, ``a.b.c``) of the item at ``directory``: inside its OCDBT
    database, or in its own zarr directory ``directory/name``."""
    if ocdbt:
        kvstore: dict[str, Any] = {"driver": "ocdbt", "base": {"driver": "file", "path": directory.rstrip("/") + "/"},
                                   "path": name + "/"}
    else:
        kvstore = {"driver": "file", "path": directory.rstrip("/") + "/" + name + "/"}
    return {"driver": driver, "kvstore": kvstore, "recheck_cached_data": False, "recheck_cached_metadata": False}


def open_array(path: str, spec: dict[str, Any], what: str) -> Any:
    """The opened TensorStore of ``spec`` (existing data only, nothing created)."""
    ts = tensorstore(path)
    try:
        return ts.open(spec, open=True, create=False, read=True).result()
    except Exception as exc:  # tensorstore raises ValueError and its own types
        raise CorruptCheckpointError(path, f"{what}: tensorstore cannot open it ({one_line(exc)})") from None


def open_many(path: str, specs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Several arrays opened at once (tensorstore works on them concurrently)."""
    ts = tensorstore(path)
    futures = {}
    for key, spec in specs.items():
        try:
            futures[key] = ts.open(spec, open=True, create=False, read=True)
        except Exception as exc:
            raise CorruptCheckpointError(path, f"{key}: tensorstore cannot open it ({one_line(exc)})") from None
    out = {}
    for key, future in futures.items():
        try:
            out[key] = future.result()
        except Exception as exc:
            raise CorruptCheckpointError(path, f"{key}: tensorstore cannot open it ({one_line(exc)})") from None
    return out


def read(path: str, store: Any, what: str, index: Any = None) -> Any:
    """The values of ``store`` (``store[index]`` when given) as a numpy array."""
    try:
        view = store if index is None else store[index]
        return view.read().result()
    except Exception as exc:
        raise CorruptCheckpointError(path, f"{what}: cannot read its data ({one_line(exc)})") from None


def list_keys(path: str, directory: str) -> list[str]:
    """Every key of the OCDBT database at ``directory`` (``name/.zarray``, ``name/0.0``, ...)."""
    ts = tensorstore(path)
    try:
        kv = ts.KvStore.open({"driver": "ocdbt", "base": {"driver": "file", "path": directory.rstrip("/") + "/"}}).result()
        return [k.decode("utf-8", "surrogateescape") for k in kv.list().result()]
    except Exception as exc:
        raise CorruptCheckpointError(path, f"cannot list its OCDBT database ({one_line(exc)})") from None


def read_values(path: str, directory: str, keys: list[str], limit: int) -> dict[str, bytes]:
    """The values of ``keys`` in the OCDBT database at ``directory`` (each at most ``limit`` bytes)."""
    ts = tensorstore(path)
    try:
        kv = ts.KvStore.open({"driver": "ocdbt", "base": {"driver": "file", "path": directory.rstrip("/") + "/"}}).result()
        futures = {k: kv.read(k.encode("utf-8", "surrogateescape")) for k in keys}
        out = {}
        for key, future in futures.items():
            value = future.result().value
            if len(value) > limit:
                raise CorruptCheckpointError(path, f"{key} is {len(value):,} bytes, more than the {limit:,} accepted")
            out[key] = bytes(value)
        return out
    except CorruptCheckpointError:
        raise
    except Exception as exc:
        raise CorruptCheckpointError(path, f"cannot read its OCDBT database ({one_line(exc)})") from None
