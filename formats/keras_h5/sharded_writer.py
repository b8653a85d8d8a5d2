"""Write sharded Keras 3 weights that Keras' ``model.load_weights(path.weights.json)`` reads.

The layout is what ``ShardedH5IOStore`` writes (see :mod:`formats.keras_h5.shards`): variables go,
in order, into ``<base>_00000.weights.h5``, ``<base>_00001.weights.h5``, ...; a new shard starts
when the next variable would take the current one past ``max_shard_size`` bytes (a variable larger
than that gets a shard of its own; Keras itself refuses to save it, but loads it). A ``vars``
group split over shards is created in each, its ``name`` attribute in the first. The index
``<base>.weights.json`` holds ``{"metadata": {"total_size": bytes}, "weight_map": {"/<path>/vars":
[shards]}}``.

Every file is written into a temporary directory beside the output, the set is opened back as one
checkpoint and compared with the sources, then put in place as every index-named set is
(:mod:`formats.io.publish`): the shards under names the live index does not use, then the index in one
rename - where the old weights use the same shard names, the new shards go first under stand-in names
carrying the write's generation id and take their own names after (``settle``). The index and every shard
carry that generation id (``metadata.ckpt_generation``, the root attribute ``ckpt_generation``), so shards of
two writes side by side are reported by ``verify``. The output exists when its index does: shards no index
names (a killed write's) are replaced.
"""
from __future__ import annotations

import json
import math
import os

from formats.core.errors import InvalidOutputError, UsageError, VerificationError
from formats.core.model import Checkpoint, FormatName
from formats.core.records import record
from formats.core.roundtrip import RoundTripReport, compare_checkpoints
from formats.core.sources import CHUNK, Source, describe
from formats.io.atomic import (GENERATION_KEY, ensure_space, fsync_file, make_parents, new_generation, publishing,
                               refuse_url, remove_created, remove_tree, sweep_temporaries, temp_name)
from formats.io.publish import publish_set, settle_set
from formats.io.writing import Stored, WriteReport, check_roundtrip, guard_output
from formats.keras_h5.shards import SHARD_SUFFIX
from formats.keras_h5.writer import Keras3Group, _dataset

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

__all__ = ["write_keras3_sharded", "shard_names", "assign_shards", "DEFAULT_MAX_SHARD_SIZE"]

DEFAULT_MAX_SHARD_SIZE = 5 * 1024 ** 3
"""Keras' default ``max_shard_size`` (5 GB)."""


def shard_names(index: str, count: int) -> list[str]:
    """Keras' shard file names for ``index`` (``m.weights.json`` -> ``m_00000.weights.h5``, ...)."""
    name = os.path.basename(index)
    base = (name.removesuffix(".json")).replace(".weights", "")
    return [f"{base}_{i:05}.weights.h5" for i in range(count)]


def _nbytes(source: Source) -> int:
    dt, shape = describe(source)
    return math.prod(shape) * dt.itemsize


def assign_shards(sizes: Sequence[int], max_shard_size: int) -> list[int]:
    """The shard of each variable, in order: a new shard starts when the next one would overflow."""
    shard, used, out = 0, 0, []
    for size in sizes:
        if used and used + size > max_shard_size:
            shard, used = shard + 1, 0
        used += size
        out.append(shard)
    return out


def _vars_path(group: Keras3Group) -> str:
    return f"{group.path}/vars" if group.path else "vars"


@record
class _Plan:
    """Which shard each variable goes to, where each (possibly empty) group is created, the weight map."""

    shards: int
    placed: list[list[tuple[Keras3Group, int, Source]]]  # per shard: (group, index, source)
    groups_in: list[list[Keras3Group]]  # per shard: groups to create there, in order
    weight_map: dict[str, list[str]]
    total: int


def _plan(groups: Sequence[Keras3Group], names_of: Any, max_shard_size: int) -> _Plan:
    flat = [(g, i, s) for g in groups for i, s in enumerate(g.variables)]
    sizes = [_nbytes(s) for _, _, s in flat]
    where = assign_shards(sizes, max_shard_size)
    count = max(where, default=0) + 1
    names = names_of(count)
    placed: list[list[tuple[Keras3Group, int, Source]]] = [[] for _ in range(count)]
    groups_in: list[list[Keras3Group]] = [[] for _ in range(count)]
    weight_map: dict[str, list[str]] = {}
    cursor = 0
    for group in groups:
        shards = [where[cursor + i] for i in range(len(group.variables))] or [where[cursor - 1] if cursor else 0]
        for i, source in enumerate(group.variables):
            placed[shards[i]].append((group, i, source))
        for shard in dict.fromkeys(shards):
            groups_in[shard].append(group)
        if group.variables:
            weight_map["/" + _vars_path(group)] = [names[s] for s in dict.fromkeys(shards)]
        cursor += len(group.variables)
    return _Plan(count, placed, groups_in, weight_map, sum(sizes))


def _fill_shard(h5: Any, plan: _Plan, shard: int, named: set[str], chunk: int) -> None:
    created: dict[str, Any] = {}
    for group in plan.groups_in[shard]:
        vars_group = h5.create_group(_vars_path(group))
        if group.name is not None and group.path not in named:
            vars_group.attrs["name"] = group.name
            named.add(group.path)
        created[group.path] = vars_group
    for group, index, source in plan.placed[shard]:
        _dataset(created[group.path], str(index), source, chunk, keras3=True)


def _expected(groups: Sequence[Keras3Group]) -> dict[str, Source]:
    expected: dict[str, Source] = {}
    seen: set[str] = set()
    for group in groups:
        if group.path in seen or group.path.startswith("/") or group.path.endswith("/") or "//" in group.path:
            raise ValueError(f"bad or repeated object path {group.path!r}")
        seen.add(group.path)
        expected.update({f"{_vars_path(group)}/{i}": s for i, s in enumerate(group.variables)})
    return expected


def write_keras3_sharded(path: str | os.PathLike[str], groups: Sequence[Keras3Group], *,
                         max_shard_size: int = DEFAULT_MAX_SHARD_SIZE, force: bool = False, verify: bool = True,
                         inputs: Iterable[str | Checkpoint] = (), chunk: int = CHUNK) -> WriteReport:
    """Write ``groups`` as sharded Keras 3 weights: the index at ``path`` (``*.weights.json``) and its
    shards beside it, each at most ``max_shard_size`` bytes of tensor data (unless one tensor is larger)."""
    out = os.fspath(path)
    refuse_url(out)
    if not out.endswith(".json"):
        raise InvalidOutputError(out, "sharded Keras 3 weights are named *.weights.json (Keras loads the shards "
                                      "through that index)")
    if max_shard_size <= 0:
        raise UsageError(out, f"max_shard_size must be positive, not {max_shard_size}")
    expected = _expected(groups)
    plan = _plan(groups, lambda n: shard_names(out, n), max_shard_size)
    directory = os.path.dirname(os.path.abspath(out))
    names = shard_names(out, plan.shards)
    guard_output(out, [out, *(os.path.join(directory, n) for n in names)], inputs=inputs,
                 sources=expected.values(), force=force, what="output weights", marker=out)
    created = make_parents(out)
    sweep_temporaries(out)
    generation = new_generation()
    temp = temp_name(out)
    try:
        ensure_space(directory, plan.total, expected.values())
        os.mkdir(temp)
        report = _write_all(temp, out, names, plan, expected, verify, chunk, generation)
        _publish(temp, out, names, plan, generation, force)
    except BaseException:
        remove_created(created)
        raise
    finally:
        remove_tree(temp)
    return report


def _family(out: str) -> list[str]:
    """The shard files of ``out``'s name in its directory: ``<base>_NNNNN.weights.h5``, and the stand-ins
    ``<base>_NNNNN.<generation>.weights.h5`` a replacement publishes first."""
    import re

    directory = os.path.dirname(os.path.abspath(out))
    base = re.escape(shard_names(out, 1)[0].removesuffix("_00000.weights.h5"))
    pattern = re.compile(rf"^{base}_\d{{5}}(\.[0-9a-f]{{16}})?\.weights\.h5$")
    try:
        return [os.path.join(directory, n) for n in sorted(os.listdir(directory)) if pattern.match(n)]
    except OSError:
        return []


def _live_names(out: str) -> set[str]:
    """The shard names the index at ``out`` names (every shard file of the family where it cannot be read)."""
    from formats.keras_h5.shards import read_shard_map

    if not os.path.lexists(out):
        return set()
    try:
        return set(read_shard_map(out).shards)
    except Exception:  # noqa: BLE001 - an index we cannot read: every shard file may be its
        return {os.path.basename(p) for p in _family(out)}


def _publish(temp: str, out: str, names: list[str], plan: _Plan, generation: str, force: bool) -> None:
    """Put the verified set in place (:mod:`formats.io.publish`): shards under names the live index does not
    use - their own, or stand-ins carrying the generation, settled under their own after - then the index."""
    directory = os.path.dirname(os.path.abspath(out))
    finals = [os.path.join(directory, n) for n in names]
    with publishing(directory):
        taken = _live_names(out) & set(names)
        staged = [f.removesuffix(SHARD_SUFFIX) + f".{generation}{SHARD_SUFFIX}" for f in finals] if taken else finals
        index = os.path.join(temp, os.path.basename(out))
        staged_index = index
        if taken:  # the index naming the stand-ins goes first; the one naming the final names once they exist
            staged_index = os.path.join(temp, "staged.json")
            _write_index(staged_index, plan, [os.path.basename(s) for s in staged], names, generation)
        keep = {os.path.abspath(f) for f in finals}
        publish_set(staged_index, out, [(os.path.join(temp, n), s) for n, s in zip(names, staged)],
                    stale=lambda: [f for f in _family(out) if os.path.abspath(f) not in keep], replace=force,
                    what="output weights")
        if taken:
            settle_set(index, out, staged, finals, temp_name(out))


def _write_index(path: str, plan: _Plan, staged: list[str], names: list[str], generation: str) -> None:
    """The index of ``plan`` naming each shard ``names[i]`` as ``staged[i]``, with the generation id."""
    rename = dict(zip(names, staged))
    weight_map = {k: [rename[n] for n in v] for k, v in plan.weight_map.items()}
    with open(path, "x", encoding="utf-8") as f:
        json.dump({"metadata": {"total_size": float(plan.total), GENERATION_KEY: generation},
                   "weight_map": weight_map}, f, indent=4)
    fsync_file(path)


def _write_all(temp: str, out: str, names: list[str], plan: _Plan, expected: dict[str, Source], verify: bool,
               chunk: int, generation: str) -> WriteReport:
    import h5py

    named: set[str] = set()
    for shard, name in enumerate(names):
        with h5py.File(os.path.join(temp, name), "w") as h5:
            h5.attrs[GENERATION_KEY] = generation  # the index's too: a shard of another write beside it is a mix
            _fill_shard(h5, plan, shard, named, chunk)
    index = os.path.join(temp, os.path.basename(out))
    for name in names:
        fsync_file(os.path.join(temp, name))
    _write_index(index, plan, names, names, generation)
    directory = os.path.dirname(os.path.abspath(out))
    report = WriteReport(out, FormatName.KERAS3_SHARDED.value, [os.path.join(directory, n) for n in names] + [out])
    for key, source in expected.items():
        dt, shape = describe(source)
        report.add(Stored(key, key, dt.name, dt.name, shape), math.prod(shape) * dt.itemsize)
    if verify:
        report.accept(_verify(index, out, expected, chunk))
    return report


def _verify(index: str, out: str, expected: dict[str, Source], chunk: int) -> RoundTripReport:
    from formats.keras_h5.opening import open_keras

    with open_keras(index, "sharded") as written:
        problems = written.problems()
        if problems:
            raise VerificationError(out, f"verification failed: {problems[0].where}: {problems[0].message}")
        report = compare_checkpoints(written, expected, path=out, against="sources", chunk=chunk)
    return check_roundtrip(out, report)
