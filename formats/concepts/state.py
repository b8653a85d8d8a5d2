"""The ``checkpoint`` state file TensorFlow keeps in a checkpoint directory (text-format CheckpointState)."""
from __future__ import annotations

from formats.core.names import name_bytes
from formats.core.errors import CorruptCheckpointError

__all__ = ["CheckpointState", "read_state", "STATE_FILE", "format_state"]

STATE_FILE = "checkpoint"
_MAX_STATE_BYTES = 1 << 20
_FIELD = (rb'\s*([A-Za-z_]+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|([-+0-9.eE]+|inf|nan))\s*')
_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord('"'): 34, ord("'"): 39, ord("\\"): 92,
            ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("v"): 11, ord("?"): 63}


class CheckpointState:
    """``model_checkpoint_path`` (the latest) and ``all_model_checkpoint_paths`` (oldest first), as written.

    (A plain class rather than a dataclass: this module is on every command's start-up path.)"""

    __slots__ = ("model_checkpoint_path", "all_model_checkpoint_paths", "all_model_checkpoint_timestamps",
                 "last_preserved_timestamp")

    def __init__(self, model_checkpoint_path: str = "", all_model_checkpoint_paths: list[str] | None = None,
                 all_model_checkpoint_timestamps: list[float] | None = None,
                 last_preserved_timestamp: float = 0.0) -> None:
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = [] if all_model_checkpoint_paths is None else all_model_checkpoint_paths
        self.all_model_checkpoint_timestamps = ([] if all_model_checkpoint_timestamps is None
                                                else all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in zip(self.__slots__, self._fields()))
        return f"CheckpointState({args})"


def _unescape(raw: bytes) -> str:
    import re  # only for a state file that holds escapes, not at import (start-up)

    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        nxt = raw[i + 1]
        if 0x30 <= nxt <= 0x37:
            digits = re.match(rb"[0-7]{1,3}", raw[i + 1:i + 4]).group()  # type: ignore[union-attr]
            out.append(int(digits, 8) & 0xFF)
            i += 1 + len(digits)
        elif nxt == ord("x"):
            digits = re.match(rb"[0-9a-fA-F]{1,2}", raw[i + 2:i + 4])
            if digits is None:
                raise ValueError("bad \\x escape")
            out.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            raise ValueError(f"bad escape \\{chr(nxt)}")
    return out.decode("utf-8", "surrogateescape")


def parse_state(text: bytes, path: str = "") -> CheckpointState:
    """Parse the text format of a ``CheckpointState`` message."""
    import re  # on the first state file read, not at import (start-up)

    state = CheckpointState()
    field = re.compile(_FIELD)
    pos = 0
    while pos < len(text):
        match = field.match(text, pos)
        if match is None:
            if text[pos:].strip():
                raise CorruptCheckpointError(path, f"not a checkpoint state file (cannot parse byte {pos})")
            break
        pos = match.end()
        name, string, number = match.group(1).decode(), match.group(2), match.group(3)
        try:
            if name == "model_checkpoint_path" and string is not None:
                state.model_checkpoint_path = _unescape(string)
            elif name == "all_model_checkpoint_paths" and string is not None:
                state.all_model_checkpoint_paths.append(_unescape(string))
            elif name == "all_model_checkpoint_timestamps" and number is not None:
                state.all_model_checkpoint_timestamps.append(float(number))
            elif name == "last_preserved_timestamp" and number is not None:
                state.last_preserved_timestamp = float(number)
            else:
                raise ValueError(f"unexpected field {name}")
        except (ValueError, IndexError) as exc:
            raise CorruptCheckpointError(path, f"not a checkpoint state file ({exc})") from None
    if not state.model_checkpoint_path:
        raise CorruptCheckpointError(path, "checkpoint state file names no model_checkpoint_path")
    return state


def read_state(directory: str) -> CheckpointState | None:
    """The state file of ``directory`` (a path or URL), or None when it has none."""
    from formats.io import storage

    path = storage.join(directory, STATE_FILE)
    if not storage.isfile(path):
        return None
    text = storage.read_bytes(path, limit=_MAX_STATE_BYTES)
    if len(text) > _MAX_STATE_BYTES:
        raise CorruptCheckpointError(path, "checkpoint state file is implausibly large")
    return parse_state(text, path)


def _quote(value: str) -> str:
    raw = name_bytes(value)
    out = []
    for b in raw:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def format_state(state: CheckpointState) -> str:
    """The text TensorFlow writes for a state (used when ckpt updates a directory's state file)."""
    lines = [f"model_checkpoint_path: {_quote(state.model_checkpoint_path)}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp:
        lines.append(f"last_preserved_timestamp: {state.last_preserved_timestamp!r}")
    return "\n".join(lines) + "\n"
