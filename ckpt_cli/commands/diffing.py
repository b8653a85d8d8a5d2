"""What ``ckpt diff A B`` does, without click: the click command (:mod:`ckpt_cli.commands.diff`) and the
start-up fast path (:mod:`ckpt_cli.fast`) both call :func:`run_diff`."""
from __future__ import annotations

import sys

from formats.core.errors import ExitCode


def run_diff(a: str, b: str, *, match: str = "key", patterns: tuple[str, ...] = (), maps: tuple[str, ...] = (),
             regexes: tuple[str, ...] = (), rules_file: str | None = None, strip_prefix_a: str | None = None,
             strip_prefix_b: str | None = None, atol: float | None = None, rtol: float | None = None,
             equal_nan: bool = False, keys_only: bool = False, quiet: bool = False, as_json: bool = False,
             jobs: int | None = 0, names: bool = False) -> int:
    """Compare ``a`` with ``b`` (pairs on ``jobs`` threads; 0 or None: every core), print what differs unless
    ``quiet`` (with ``names``, each key's name and role beside it), and return the exit status (0 equal,
    1 different)."""
    from formats.api import open_checkpoint
    from formats.ops.compare.diff import Tolerance, diff_checkpoints

    rules = None
    if maps or regexes or rules_file:
        from formats.ops.rules import build_rules

        rules = build_rules(maps, regexes, rules_file) or None
    tolerance = Tolerance.of(atol, rtol, equal_nan)
    with open_checkpoint(a) as ca, open_checkpoint(b) as cb:
        from ..render.progress import progress_for

        total = sum(e.nbytes for e in ca.values()) + sum(e.nbytes for e in cb.values())
        with progress_for(ca, "comparing", total=0 if quiet or keys_only else total) as progress:
            result = diff_checkpoints(ca, cb, match=match, rules=rules, strip_prefix_a=strip_prefix_a,
                                      strip_prefix_b=strip_prefix_b, tolerance=tolerance, keys_only=keys_only,
                                      progress=progress, patterns=patterns, jobs=jobs)
        hint = _match_hint(ca, cb) if match == "key" and not (result.same or result.changed) else None
        named = _names(result, ca, cb) if names and not quiet else None
    if not quiet:
        if hint:
            print(f"ckpt: hint: {hint}", file=sys.stderr, flush=True)
        for note in result.notes + [f"rule {r} matched nothing" for r in result.unused_rules]:
            print(f"ckpt: warning: {note}", file=sys.stderr, flush=True)
        if as_json:
            from ..render.common import print_json

            doc = result.to_json()
            if named is not None:
                doc["names"] = {side: {k: {"name": n, "role": r} for k, (n, r) in sorted(found.items())}
                                for side, found in zip("ab", named)}
            print_json(doc)
        else:
            from ..render.diff import render_diff

            render_diff(result, tolerance, keys_only, named)
    return int(ExitCode.OK if result.equal else ExitCode.PROBLEMS)


def _match_hint(ca: object, cb: object) -> str | None:
    """When no key pairs but variable names do (name-based vs object-based, bundle vs Keras): say so."""
    names_b = {e.name for e in cb.values()}  # type: ignore[attr-defined]
    paired = sum(1 for e in ca.values() if e.name in names_b)  # type: ignore[attr-defined]
    if not paired:
        return None
    return f"no key is in both checkpoints, but {paired} tensors pair by variable name: try --match name"


def _names(result: object, ca: object, cb: object) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """The name and role of every key the result shows, A's and B's (``ls --names``' columns)."""
    from formats.ops.inspect.summary import names_and_roles

    changed = result.changed  # type: ignore[attr-defined]
    return (names_and_roles(ca, [c.a.key for c in changed] + result.only_in_a),  # type: ignore[arg-type,attr-defined]
            names_and_roles(cb, [c.b.key for c in changed] + result.only_in_b))  # type: ignore[arg-type,attr-defined]
