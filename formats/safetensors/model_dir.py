"""A transformers model directory: ``config.json`` and ``model.safetensors``, or shards
``model-00001-of-0000N.safetensors`` with ``model.safetensors.index.json`` (``{"metadata": {"total_size": N},
"weight_map": {name: file}}``), as ``save_pretrained`` writes them.

:func:`open_model_dir` opens one as a single checkpoint (every shard's tensors); :func:`write_model_dir` writes
one: shards of at most ``max_shard_size`` bytes cut as transformers cuts them (a tensor goes to the current
shard unless it would pass the limit), each safetensors file with ``__metadata__ = {"format": "pt"}`` (what
transformers requires), every file read back and compared, the whole directory staged beside the output and
put in place at once (:func:`~formats.io.atomic.publish_dir`: a new directory by one exclusive rename, a
replaced one, with ``force``, exchanged with the new one in one step). Shards carry the write's generation
id in their metadata, as the index does: a shard of another write beside the index is reported.
"""
from __future__ import annotations

import json
import math
import os

from formats.core.bounded_json import load_json
from formats.core.dtypes import by_name
from formats.core.errors import CorruptCheckpointError, InvalidOutputError, OutputExistsError
from formats.core.model import Checkpoint, CheckpointProblem, FormatName, TensorEntry
from formats.io.atomic import GENERATION_KEY
from formats.io.writing import WriteReport, guard_output

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any
    from collections.abc import Callable, Mapping, Sequence

    from formats.core.format import Row

__all__ = ["CONFIG", "WEIGHTS", "INDEX", "DEFAULT_SHARD_SIZE", "open_model_dir", "write_model_dir",
           "shard_rows", "ModelDirCheckpoint"]

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
DEFAULT_SHARD_SIZE = 5 * 10**9
"""transformers' ``save_pretrained(max_shard_size="5GB")``: shards of at most 5e9 bytes."""


class ModelDirCheckpoint(Checkpoint):
    """A transformers model directory's tensors (from every shard); ``metadata["config"]`` is its config."""

    def __init__(self, path: str, entries: dict[str, TensorEntry], parts: list[Checkpoint],
                 metadata: dict[str, Any], problems: list[CheckpointProblem] | None = None) -> None:
        super().__init__(path, FormatName.HF, entries, metadata=metadata, problems=problems)
        self._parts = parts

    @property
    def files(self) -> list[str]:
        """The config, the index and every shard."""
        return [os.path.join(self.path, CONFIG), *(f for part in self._parts for f in [part.path])]

    def close(self) -> None:
        """Close every shard."""
        for part in self._parts:
            part.close()


MAX_JSON_BYTES = 64 << 20
"""Largest config.json or index read (transformers' are a few hundred KB at most)."""


def _shard_files(path: str) -> tuple[list[str], str | None]:
    """The shard files of the model directory at ``path``, and the generation id its index names (if any)."""
    index = os.path.join(path, INDEX)
    if not os.path.isfile(index):
        return [os.path.join(path, WEIGHTS)], None
    try:
        with open(index, "rb") as f:
            data = load_json(f.read(MAX_JSON_BYTES + 1), index, "the index", max_bytes=MAX_JSON_BYTES)
        weight_map = data["weight_map"]
        files = [os.path.join(path, name) for name in sorted(set(weight_map.values()))]
    except CorruptCheckpointError as exc:
        raise CorruptCheckpointError(index, f"not a safetensors index: {exc.message}") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptCheckpointError(index, f"not a safetensors index: {exc}") from None
    meta = data.get("metadata")
    generation = meta.get(GENERATION_KEY) if isinstance(meta, dict) else None
    return files, generation if isinstance(generation, str) else None


def _mix_problems(parts: Sequence[Checkpoint], generation: str | None) -> list[CheckpointProblem]:
    """Shards whose generation id is not the index's: files of two writes side by side."""
    if generation is None:
        return []
    problems = []
    for part in parts:
        theirs = (part.metadata.get("metadata") or {}).get(GENERATION_KEY)
        if theirs != generation:
            problems.append(CheckpointProblem(part.path, (
                f"written by another write than {INDEX} names (generation {theirs or 'none'}, the index's "
                f"{generation}): a mix of two outputs' files")))
    return problems


def open_model_dir(path: str) -> ModelDirCheckpoint:
    """Open a transformers model directory: its config and every shard's header (values read when asked)."""
    from formats.safetensors.reader import open_safetensors

    try:
        with open(os.path.join(path, CONFIG), "rb") as f:
            config = load_json(f.read(MAX_JSON_BYTES + 1), os.path.join(path, CONFIG), "the config",
                               max_bytes=MAX_JSON_BYTES)
    except CorruptCheckpointError as exc:
        raise CorruptCheckpointError(os.path.join(path, CONFIG), f"cannot read the model config: {exc.message}") from None
    except OSError as exc:
        raise CorruptCheckpointError(os.path.join(path, CONFIG), f"cannot read the model config: {exc}") from None
    parts: list[Checkpoint] = []
    entries: dict[str, TensorEntry] = {}
    try:
        files, generation = _shard_files(path)
        for file in files:
            part: Checkpoint = open_safetensors(file)
            parts.append(part)
            for key in part:
                entries[key] = part[key]
    except BaseException:
        for part in parts:
            part.close()
        raise
    return ModelDirCheckpoint(path, entries, parts, {"config": config, "shards": len(parts)},
                              _mix_problems(parts, generation))


def shard_rows(rows: Sequence[Row], max_shard_size: int) -> list[list[Row]]:
    """``rows`` cut into shards as transformers cuts a state dict: in order, a new shard when the next tensor
    would take the current one past ``max_shard_size`` bytes (a larger tensor gets a shard of its own)."""
    shards: list[list[Row]] = [[]]
    size = 0
    for row in rows:
        nbytes = math.prod(row.shape) * by_name(row.dtype).itemsize
        if shards[-1] and size + nbytes > max_shard_size:
            shards.append([])
            size = 0
        shards[-1].append(row)
        size += nbytes
    return shards


def write_model_dir(output: str, rows: Sequence[Row], *, layout: str = FormatName.HF.value, force: bool = False,
                    verify: bool = True, inputs: Sequence[Any] = (), progress: Callable[[int, int], None] | None = None,
                    jobs: int | None = None, link: bool = False, options: Mapping[str, Any] | None = None) -> WriteReport:
    """Write a transformers model directory at ``output``: ``options["config"]`` as ``config.json``, ``rows`` as
    ``model.safetensors`` (or shards of ``options["max_shard_size"]`` bytes and their index), a copy of each
    file ``options["copy_files"]`` names (a tokenizer's, beside the weights it came with) and each of
    ``options["files"]`` (name -> bytes: a tokenizer the conversion wrote)."""
    from formats.io.atomic import make_parents, publish_dir, refuse_url, remove_created, sweep_temporaries, temp_name

    refuse_url(output)
    options = dict(options or {})
    if os.path.lexists(output) and not os.path.isdir(output):
        raise InvalidOutputError(output, "output exists and is not a directory")
    shards = shard_rows(rows, int(options.get("max_shard_size") or DEFAULT_SHARD_SIZE))
    names = [WEIGHTS] if len(shards) == 1 else \
        [f"model-{n + 1:05d}-of-{len(shards):05d}.safetensors" for n in range(len(shards))]
    copies = [os.fspath(c) for c in options.get("copy_files") or ()]
    files = [os.path.join(output, n) for n in [CONFIG, *names, *([INDEX] if len(shards) > 1 else []),
                                               *(os.path.basename(c) for c in copies), *(options.get("files") or {})]]
    guard_output(output, files, inputs=list(inputs), sources=[r.value for r in rows], force=force, directory=True)
    _refuse_inputs_inside(output, inputs, rows)
    if os.path.isdir(output) and not force and os.listdir(output):
        raise OutputExistsError(output, "output directory exists and is not empty", hint="pass force=True to replace it")
    report = WriteReport(output, FormatName.HF.value, files)
    final = os.path.abspath(output)
    created = make_parents(os.path.join(final, CONFIG)) if not os.path.isdir(final) else []
    sweep_temporaries(final)
    stage = temp_name(final)
    try:
        os.mkdir(stage)
        _stage(stage, shards, names, options, report, verify, progress)
        publish_dir(stage, final, replace=force, what="output directory")
    except BaseException as exc:
        _discard(stage)
        remove_created(created)
        _name_the_output(exc, stage, final)
        raise
    return report


def _name_the_output(exc: BaseException, stage: str, final: str) -> None:
    """An error about a file of the staging directory (a read-back that failed) names the file of the output
    the user asked for, which is what would have held it: the staging directory is gone."""
    from formats.core.errors import CheckpointError

    if isinstance(exc, CheckpointError) and (exc.path == stage or exc.path.startswith(stage + os.sep)):
        exc.path = final + exc.path[len(stage):]
        exc.args = (exc.path, exc.message)


def _refuse_inputs_inside(output: str, inputs: Sequence[Any], rows: Sequence[Row]) -> None:
    """Refuse an input that is the output directory or lies in it (``force`` replaces the whole directory)."""
    from formats.core.errors import OutputIsInputError
    from formats.io.writing import named_files

    root = os.path.realpath(os.path.abspath(output))
    paths: list[str] = []
    for item in inputs:
        paths += [item.path, *item.files] if isinstance(item, Checkpoint) else named_files(os.fspath(item))
    for row in rows:
        paths += list(getattr(row.value, "files", ()) or ())
    for path in paths:
        real = os.path.realpath(os.path.abspath(path))
        if real == root or real.startswith(root + os.sep):
            raise OutputIsInputError(output, f"output directory holds {path}, which is being read; write elsewhere")


def _stage(stage: str, shards: list[list[Row]], names: list[str], options: dict[str, Any], report: WriteReport,
           verify: bool, progress: Callable[[int, int], None] | None) -> None:
    from formats.io.atomic import new_generation
    from formats.io.writing import write_text
    from formats.safetensors.writer import write

    done = [0, 0]
    generation = new_generation() if len(shards) > 1 else None  # the index and each shard carry it (verify)
    metadata = {"format": "pt", **({GENERATION_KEY: generation} if generation else {})}

    def step(nbytes: int, tensors: int) -> None:
        if progress is not None:
            progress(done[0] + nbytes, done[1] + tensors)

    weight_map: dict[str, str] = {}
    contents = list(report.contents)
    for shard, name in zip(shards, names):
        part = write(os.path.join(stage, name), shard, verify=verify, progress=step,
                     options={"metadata": metadata})
        contents += part.contents
        report.contents = contents
        report.tensors += part.tensors
        report.bytes += part.bytes
        done[0], done[1] = report.bytes, report.tensors
        weight_map.update({row.key: name for row in shard})
    write_text(os.path.join(stage, CONFIG), json.dumps(options.get("config", {}), indent=2, sort_keys=True) + "\n",
               format="json")
    if len(shards) > 1:
        index = {"metadata": {"total_size": report.bytes, GENERATION_KEY: generation},
                 "weight_map": dict(sorted(weight_map.items()))}
        write_text(os.path.join(stage, INDEX), json.dumps(index, indent=2) + "\n", format="json")
    _copy_files(stage, [os.fspath(c) for c in options.get("copy_files") or ()])
    _write_files(stage, dict(options.get("files") or {}))
    report.verified = verify


def _copy_files(stage: str, paths: list[str]) -> None:
    """Copy each of ``paths`` into ``stage`` under its own name (bytes compared after the copy)."""
    import shutil

    for path in paths:
        target = os.path.join(stage, os.path.basename(path))
        if os.path.exists(target):
            raise InvalidOutputError(path, f"{os.path.basename(path)} is a file the writer makes itself")
        shutil.copyfile(path, target)
        with open(path, "rb") as a, open(target, "rb") as b:
            if a.read() != b.read():
                raise InvalidOutputError(target, f"the copy of {path} differs from it")


def _write_files(stage: str, files: dict[str, bytes]) -> None:
    """Write each of ``files`` (name -> bytes: a tokenizer's, made by the conversion) into ``stage``, read back
    and compared."""
    for name, data in files.items():
        target = os.path.join(stage, name)
        if os.path.basename(name) != name or os.path.exists(target):
            raise InvalidOutputError(target, f"{name} is not a file name of its own in the output")
        with open(target, "xb") as f:
            f.write(data)
        with open(target, "rb") as f:
            if f.read(len(data) + 1) != data:
                raise InvalidOutputError(target, f"{name} reads back other than it was written")


def _discard(path: str) -> None:
    from formats.io.atomic import remove_tree

    try:
        remove_tree(path)
    except OSError:  # left for the next write's sweep
        pass
