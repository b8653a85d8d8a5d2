"""Turn what people type (a prefix, an ``.index``/``.data`` file, a weights file, a directory) into one
checkpoint, by asking the format registry; directories follow their ``checkpoint`` state file."""
from __future__ import annotations

import os

from formats.core import registry
from formats.core.memo import remembered
from formats.core.model import Checkpoint, FormatName
from formats.core.errors import (AmbiguousCheckpointError, CheckpointNotFoundError, NotACheckpointError,
                                 UnsupportedError)
from formats.core.value_tuples import ValueTuple
from formats.io import storage

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from formats.concepts.state import CheckpointState

__all__ = ["Target", "open_checkpoint", "resolve", "claim", "claim_directory", "find_checkpoints", "locate_named",
           "latest_from_state", "identity", "normalize", "latest_version", "resolve_many"]


class Target(ValueTuple):
    """A resolved checkpoint: ``format``, the registry name of the format that opens it (a *format* is a registry
    entry; what its reader reports, ``Checkpoint.format``, is a *layout*: ``FormatName``), and ``path``, what that
    format opens."""

    format: str
    path: str

    def open(self) -> Any:
        """Open it with its format."""
        return registry.get_format(self.format).open(self.path)


def normalize(path: str) -> str:
    """``path`` without ``.``/``..``/doubled separators (``./a//b/`` -> ``a/b``), URLs without a trailing
    ``/``; a bundle prefix whose basename is empty (``dir/``, as ``Saver.save(sess, "dir/")`` writes
    ``dir/.index``) keeps its trailing separator."""
    if storage.is_url(path):
        return path.rstrip("/") or path
    norm = os.path.normpath(path)
    return norm + os.sep if path.endswith(os.sep) and norm != os.sep else norm


def identity(path: str) -> str:
    """What two spellings of one checkpoint have in common (absolute, symlinks resolved), to list it once."""
    if storage.is_url(path):
        return path.rstrip("/")
    folder, name = os.path.split(path)
    if name and name not in (os.curdir, os.pardir) and not os.path.islink(path):
        real = os.path.join(_real_folder(os.getcwd(), folder), name)  # one realpath per folder, not per path
    else:
        real = os.path.realpath(path)
    return real + os.sep if path.endswith(os.sep) and real != os.sep else real


@remembered(256)
def _real_folder(cwd: str, folder: str) -> str:
    """``os.path.realpath`` of ``folder`` (relative to ``cwd``), remembered: a directory of a thousand
    checkpoints is resolved once."""
    return os.path.realpath(os.path.join(cwd, folder))


def resolve(path: str | os.PathLike[str]) -> Target:
    """Resolve a user-supplied path to one checkpoint, or raise a CheckpointError saying why not."""
    p = os.fspath(path)
    if storage.is_url(p):
        return _resolve_url(p.rstrip("/"))
    if p != os.sep:
        p = p.rstrip(os.sep) or p
    if os.path.isdir(p):
        return _resolve_dir(normalize(p))
    found = claim(p)
    if found is not None:
        return found
    if os.path.isfile(p):
        from formats.core.foreign import describe_file  # (what a file that is no checkpoint is: an error only)

        raise NotACheckpointError(p, describe_file(p))
    odd = storage.not_regular(p + ".index")
    if odd is not None:  # a FIFO, a folder, a link to nothing or a loop under the index's name
        raise NotACheckpointError(p + ".index", f"{odd}, not a bundle index")
    raise CheckpointNotFoundError(p, "no such file, directory or checkpoint prefix", hint=_did_you_mean(p))


def open_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Open a checkpoint from what a user would type: a prefix (``run/ckpt-10``), its ``.index`` or a
    ``.data-*`` file, a Keras weights file, or a directory (its latest checkpoint).

    Returns a read-only :class:`~formats.core.model.Checkpoint`; nothing is read from data files until an
    entry's ``read()`` is called. Raises a :class:`~formats.core.errors.CheckpointError` subclass on bad input.
    """
    return resolve(path).open()


def resolve_many(paths: Iterable[str | os.PathLike[str]], directories: bool = False) -> list[tuple[str, Target | None]]:
    """What several typed paths name, each checkpoint once, in the order given: a shell glob
    (``run/ckpt-*``) names a bundle by its ``.index`` and by each ``.data`` file, and ``.``, ``./`` or an
    absolute path may name one directory. With ``directories``, a directory that is not itself a
    checkpoint (not a SavedModel) comes back as ``(path, None)``, to be listed; else every path as
    ``(path, Target)``. Raises on the first path that names nothing."""
    out: list[tuple[str, Target | None]] = []
    seen: set[tuple[str, str]] = set()
    for raw in paths:
        path = os.fspath(raw)
        target: Target | None = None
        if not (directories and _is_listing(path)):
            target = resolve(path)
        key = (target.format, identity(target.path)) if target is not None else ("", identity(normalize(path)))
        if key not in seen:
            seen.add(key)
            out.append((path, target))
    return out


def _is_listing(path: str) -> bool:
    """A directory to list (one that is not itself a checkpoint)."""
    is_dir = storage.isdir(path) if storage.is_url(path) else os.path.isdir(path)
    return is_dir and claim_directory(path.rstrip("/") if storage.is_url(path) else path) is None


def claim(path: str, plugins: bool = True) -> Target | None:
    """The first format that claims ``path`` (built-in formats first, then plugins), or None."""
    local_file = not storage.is_url(path) and not os.path.isdir(path)
    for spec in registry.iter_builtin_formats(os.path.basename(path) if local_file else None):
        found = _claim_with(spec, path)
        if found is not None:
            return found
    if plugins:
        for spec in registry.plugin_formats():
            found = _claim_with(spec, path)
            if found is not None:
                return found
    return None


def _claim_with(spec: Any, path: str) -> Target | None:
    if storage.is_url(path) and not getattr(spec, "urls", False):
        return None
    claimed = registry.resolve_with(spec, path)
    return Target(spec.name, claimed) if claimed is not None else None


def claim_directory(directory: str) -> Target | None:
    """A format that takes the directory itself as one checkpoint (a SavedModel), or None. Plugins are asked
    only when no built-in format takes it."""
    for spec in registry.iter_builtin_formats():
        found = _claim_with(spec, directory) if registry.claims_directory(spec) else None
        if found is not None:
            return found
    for spec in registry.plugin_formats():
        found = _claim_with(spec, directory) if registry.claims_directory(spec) else None
        if found is not None:
            return found
    return None


def _did_you_mean(p: str) -> str | None:
    """The checkpoints ``p`` may have meant: prefixes it begins (``model.ckp`` -> ``model.ckpt-200``), else
    the closest names in its folder (``ckpt-44`` -> ``ckpt-4``, ``tf_ckpt`` -> ``tf_ckpts``)."""
    import glob  # only for an error or a recursive search (start-up)

    from formats.core.nearest import LIMIT, did_you_mean, nearest

    near = [n[:-len(".index")] for n in sorted(glob.glob(glob.escape(p) + "*.index"))[:LIMIT]]
    if not near:
        folder, name = os.path.split(p)
        close = nearest(name, {n: (n,) for n in _names_in(folder or os.curdir)}) if name else []
        near = [os.path.join(folder, c) for c, _ in close]
    near = [n for n in near if os.path.normpath(n) != os.path.normpath(p)]  # never the path itself
    return did_you_mean(near, quote=False)


def _names_in(folder: str) -> list[str]:
    """What a path in ``folder`` may name: its bundle prefixes, subdirectories and files of a known format."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    suffixes = registry.suffixes()
    names = [e.name[:-len(".index")] for e in entries if e.name.endswith(".index")]
    names += [e.name for e in entries if e.is_dir() or e.name.endswith(suffixes)]
    return sorted(set(names))


def _resolve_url(url: str) -> Target:
    """Resolution for fsspec URLs: the same rules as local paths, with as few requests as possible."""
    found = claim(url, plugins=False)
    if found is not None:
        return found
    if storage.isfile(url):
        if url.endswith(registry.suffixes()):
            raise UnsupportedError(url, "Keras/HDF5 files are read from local disk only; download it first")
        raise NotACheckpointError(url, "not a checkpoint (pass a bundle prefix or a directory)")
    if storage.isdir(url):
        return _resolve_dir(url)
    raise CheckpointNotFoundError(url, "no such object, directory or checkpoint prefix")


def find_checkpoints(directory: str) -> list[Target]:
    """Every checkpoint directly inside ``directory``, as the formats find them (plugins asked only for
    local files no built-in format claimed)."""
    found: list[Target] = []
    seen: set[str] = set()
    remote = storage.is_url(directory)
    for spec in registry.builtin_formats():
        if remote and not getattr(spec, "urls", False):
            continue
        for path in registry.find_with(spec, directory):
            _add_found(found, seen, spec.name, path)
    if not remote:
        found += _plugin_checkpoints(directory, seen)
    return found


def _add_found(found: list[Target], seen: set[str], format_name: str, path: str) -> None:
    from formats.io.atomic import is_temp_name  # atomic imports contextlib: not on a single file's path

    key = identity(path)
    if key not in seen and not is_temp_name(path):
        seen.add(key)
        found.append(Target(format_name, normalize(path)))


def _owned(name: str, owned: set[str]) -> bool:
    """Whether ``name`` is one of ``owned`` or a file of one (``owned`` + ``.`` + anything)."""
    if name in owned:
        return True
    dot = name.find(".")
    while dot >= 0:
        if name[:dot] in owned:
            return True
        dot = name.find(".", dot + 1)
    return False


def _plugin_checkpoints(directory: str, seen: set[str]) -> list[Target]:
    from formats.concepts.state import STATE_FILE  # (directories only: not on a prefix's path)

    owned = {os.path.basename(p.rstrip(os.sep)) for p in seen}
    unclaimed = [n for n in sorted(os.listdir(directory))
                 if not _owned(n, owned) and not n.startswith(STATE_FILE)]
    if not unclaimed:
        return []
    found: list[Target] = []
    for spec in registry.plugin_formats():
        for path in registry.find_with(spec, directory):
            _add_found(found, seen, spec.name, path)
    return found


def locate_named(directory: str, named: str, known: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The existing checkpoint a state file's path ``named`` means: as written (relative to ``directory``),
    else its basename in ``directory`` (absolute paths go stale when runs are copied); None if neither.
    Paths in ``known`` are taken as existing without probing the storage."""
    if storage.is_url(directory):
        options = [storage.join(directory, named.lstrip("/")), storage.join(directory, os.path.basename(named))]
    else:
        candidate = named if os.path.isabs(named) else os.path.join(directory, named)
        options = [normalize(candidate), normalize(os.path.join(directory, os.path.basename(named)))]
        # a prefix with an empty basename ("dir/" -> dir/.index), however the state file spells it
        options += [normalize(o) + os.sep for o in options if os.path.isdir(o)]
    ids = {identity(k): k for k in known}
    for option in dict.fromkeys(options):
        if identity(option) in ids:
            return ids[identity(option)]
        if not storage.is_url(option) and os.path.isdir(option) and not option.endswith(os.sep):
            continue
        found = claim(option, plugins=False)
        if found is not None:
            return found.path
    return None


def latest_from_state(directory: str, state: CheckpointState | None = None) -> str | None:
    """The checkpoint the directory's state file (or ``state``, already read) names as latest, or None."""
    from formats.concepts.state import STATE_FILE, read_state  # (directories only)

    state = read_state(directory) if state is None else state
    if state is None:
        return None
    named = state.model_checkpoint_path
    found = locate_named(directory, named)
    if found is not None:
        return found
    existing = [os.path.basename(t.path) or t.path for t in find_checkpoints(directory)]
    hint = ("the directory holds " + ", ".join(existing[:5]) + (", ..." if len(existing) > 5 else "")
            + ": pass one of them") if existing else None
    raise CheckpointNotFoundError(storage.join(directory, STATE_FILE),
                                  f"names {named!r} as the latest checkpoint, but it does not exist", hint=hint)


def latest_version(targets: list[Target]) -> Target | None:
    """In a model base directory (TF Serving's layout: only SavedModels named by a version number,
    ``model/1``, ``model/2``), the highest version, the one TF Serving serves; else None."""
    versions = [(int(name), t) for t in targets
                if t.format == FormatName.SAVED_MODEL and (name := os.path.basename(t.path.rstrip(os.sep))).isdigit()]
    versions += _orbax_steps(targets)
    if not versions or len(versions) != len(targets):
        return None
    return max(versions, key=lambda v: v[0])[1]


def _orbax_steps(targets: list[Target]) -> list[tuple[int, Target]]:
    """An Orbax ``CheckpointManager`` root's steps (``1``, ``2``; T5X's ``checkpoint_3``): like a model base
    directory, its highest step is the latest (Orbax's ``latest_step``)."""
    steps = []
    for t in targets:
        name = os.path.basename(t.path.rstrip(os.sep))
        digits = name[len(name.rstrip("0123456789")):]
        if t.format == "orbax" and digits:
            steps.append((int(digits), t))
    return steps if len(steps) == len(targets) else []


def _resolve_dir(directory: str) -> Target:
    own = claim_directory(directory)
    if own is not None:
        return own
    latest = latest_from_state(directory)
    if latest is not None:
        found = claim(latest, plugins=False)
        if found is not None:
            return found
    found_all = find_checkpoints(directory)
    if len(found_all) == 1:
        return found_all[0]
    version = latest_version(found_all)
    if version is not None:
        return version
    if not found_all and storage.is_url(directory):
        raise NotACheckpointError(directory, "no checkpoint under this prefix (no 'checkpoint' state file, no *.index)")
    if not found_all:
        import glob

        nested = glob.glob(os.path.join(glob.escape(directory), "**", "*.index"), recursive=True)
        raise NotACheckpointError(directory, "no checkpoint in this directory "
                                  "(no 'checkpoint' state file, no *.index, no Keras weights file)",
                                  hint="its subdirectories hold checkpoints: try `ckpt ls -r`" if nested else None)
    names = ", ".join(os.path.basename(t.path) for t in found_all)
    raise AmbiguousCheckpointError(directory, f"holds {len(found_all)} checkpoints and no state file names one: "
                                   f"{names}", hint="pass one of them")
