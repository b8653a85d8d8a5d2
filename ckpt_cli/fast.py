"""The console script's entry: ``ckpt ls``, ``verify``, ``diff``, ``rename`` and ``convert`` run without click.

Importing click costs about as much as starting Python itself, and listing, verifying, comparing,
renaming or converting checkpoints needs none of it. :func:`main` runs a command line made only of what
:data:`COMMANDS` and :data:`GLOBAL_FLAGS` describe by calling the function the click command calls
(``run_ls``, ``run_verify``, ``run_diff``, ``run_rename``, ``run_convert`` in :mod:`ckpt_cli.commands`),
and hands everything else to the click CLI (:data:`ckpt_cli.main.cli`):
help, completion, every other command, and any option this parser does not know or that is
malformed, so click still parses, reports usage errors and prints help as always. Errors while
running go through the CLI's one error boundary (:func:`ckpt_cli.main.report_error`).
"""
from __future__ import annotations

import os
import sys

GLOBAL_FLAGS = {"--traceback": "traceback", "--no-color": "no_color", "-q": "quiet", "--quiet": "quiet"}
"""Root options the fast path understands (flag -> parameter name); any other goes to click."""

Spec = dict[str, tuple[str, "tuple[str, ...] | None"]]
LS_OPTIONS: Spec = {
    "-f": ("patterns", ()), "--filter": ("patterns", ()),
    "--sort": ("sort", ("key", "size")),
    "-r": ("recursive", None), "--recursive": ("recursive", None),
    "--tree": ("tree", None), "--names": ("names", None), "--no-optimizer": ("no_optimizer", None),
    "--json": ("as_json", None),
}
"""``ckpt ls`` options: option -> (parameter, values). ``None``: a flag; ``()``: any value, repeatable;
``("#",)``: a count (digits); otherwise the values allowed. ``tests/test_fast_path.py`` checks these tables
against the click commands."""

VERIFY_OPTIONS: Spec = {"--json": ("as_json", None), "--jobs": ("jobs", ("#",)), "-j": ("jobs", ("#",)),
                        "--allow-loader-refusals": ("allow_loader_refusals", None)}
"""``ckpt verify`` options (``--against`` is left to click)."""

DIFF_OPTIONS: Spec = {
    "--json": ("as_json", None), "-q": ("quiet", None), "--quiet": ("quiet", None),
    "--keys-only": ("keys_only", None), "--match": ("match", ("key", "name")),
    "-f": ("patterns", ()), "--filter": ("patterns", ()), "--jobs": ("jobs", ("#",)), "-j": ("jobs", ("#",)),
    "--names": ("names", None),
}
"""``ckpt diff`` options (rename rules, prefixes and tolerances are left to click)."""

RENAME_OPTIONS: Spec = {
    "-o": ("out", ("*",)), "--output": ("out", ("*",)), "--map": ("maps", ()), "--regex": ("regexes", ()),
    "--rules": ("rules_file", ("*",)), "--add-prefix": ("add_prefix", ("*",)), "--strip-prefix": ("strip_prefix", ("*",)),
    "--rename-full-names": ("rename_full_names", None), "--dry-run": ("dry_run", None), "--json": ("as_json", None),
    "--force": ("force", None), "--no-verify": ("no_verify", None), "--update-state": ("update_state", None),
    "--link": ("link", None), "--jobs": ("jobs", ("#",)), "-j": ("jobs", ("#",)), "--all": ("all_rows", None),
    "-v": ("verbose", None), "--verbose": ("verbose", None),
}
"""``ckpt rename`` options (``("*",)``: one value, any)."""

CONVERT_OPTIONS: Spec = {
    "-o": ("out", ("*",)), "--output": ("out", ("*",)),
    "--to": ("to", ("keras2-h5", "keras3-h5", "npz", "safetensors", "tf-name", "tf-object")),
    "--template": ("template", ("*",)), "--map": ("maps", ()), "--regex": ("regexes", ()),
    "--rules": ("rules_file", ("*",)), "--allow-missing": ("allow_missing", None),
    "--drop-optimizer": ("drop_optimizer", None), "--slot-names": ("slot_names", ("tf2", "tf1")), "--dry-run": ("dry_run", None), "--json": ("as_json", None),
    "--force": ("force", None), "--no-verify": ("no_verify", None), "--update-state": ("update_state", None),
    "--link": ("link", None), "--jobs": ("jobs", ("#",)), "-j": ("jobs", ("#",)),
    "-v": ("verbose", None), "--verbose": ("verbose", None),
}
"""``ckpt convert`` options (``--learning-rate``, ``--hparam`` and ``--max-shard-size``, whose values click
checks, are left to click)."""

COMMANDS: dict[str, tuple[Spec, dict[str, object]]] = {
    "ls": (LS_OPTIONS, {"patterns": [], "sort": "key", "recursive": False, "tree": False, "names": False,
                        "no_optimizer": False, "as_json": False}),
    "verify": (VERIFY_OPTIONS, {"as_json": False, "jobs": 0, "allow_loader_refusals": False}),
    "diff": (DIFF_OPTIONS, {"as_json": False, "quiet": False, "keys_only": False, "match": "key", "patterns": [],
                            "jobs": 0, "names": False}),
    "rename": (RENAME_OPTIONS, {"out": None, "maps": [], "regexes": [], "rules_file": None, "add_prefix": None,
                                "strip_prefix": None, "rename_full_names": False, "dry_run": False, "as_json": False,
                                "force": False, "no_verify": False, "update_state": False, "link": False,
                                "jobs": 0, "all_rows": False, "verbose": False}),
    "convert": (CONVERT_OPTIONS, {"out": None, "to": None, "template": None, "maps": [], "regexes": [],
                                  "rules_file": None, "allow_missing": False, "drop_optimizer": False,
                                  "slot_names": "tf2", "dry_run": False,
                                  "as_json": False, "force": False, "no_verify": False, "update_state": False,
                                  "link": False, "jobs": 0, "verbose": False}),
}
"""The commands the fast path runs: their options and the parameters' defaults."""

_ARGUMENTS = {"diff": 2, "rename": 1, "convert": 1}
"""How many PATHs a command takes when it does not take any number."""


def parse(argv: list[str]) -> tuple[str, dict[str, bool], dict[str, object]] | None:
    """``(command, global flags, parameters)`` for a plain ``ckpt [GLOBAL FLAGS] COMMAND [OPTIONS] PATH...``,
    or None when the line needs click (another command, help, ``--``, an unknown, clustered or malformed
    option, an option's value that is not allowed)."""
    flags = {"traceback": False, "no_color": False, "quiet": False}
    i = 0
    while i < len(argv) and argv[i] in GLOBAL_FLAGS:
        flags[GLOBAL_FLAGS[argv[i]]] = True
        i += 1
    if i >= len(argv) or argv[i] not in COMMANDS:
        return None
    command = argv[i]
    options, defaults = COMMANDS[command]
    params = {name: list(value) if isinstance(value, list) else value for name, value in defaults.items()}
    params["paths"] = []
    words = iter(argv[i + 1:])
    for word in words:
        if not word.startswith("-") or word == "-":
            params["paths"].append(word)  # type: ignore[attr-defined]
            continue
        option, eq, value = word.partition("=")
        spec = options.get(option)
        if spec is None:
            return None
        name, allowed = spec
        if allowed is None:
            if eq:
                return None
            params[name] = True
            continue
        if not eq:
            value = next(words, None)  # type: ignore[assignment]
            if value is None:
                return None
        if allowed == ("#",):
            if not value.isdigit() or not value.isascii():
                return None
            params[name] = int(value)
        elif allowed == ("*",):
            params[name] = value
        elif allowed == ():
            params[name].append(value)  # type: ignore[attr-defined]
        elif value in allowed:
            params[name] = value
        else:
            return None
    wanted = _ARGUMENTS.get(command)
    if not params["paths"] or (wanted is not None and len(params["paths"]) != wanted):  # type: ignore[arg-type]
        return None
    if command in ("rename", "convert") and params["out"] is None:
        return None
    if command == "convert" and params["to"] is None:
        return None
    return command, flags, params


def main(argv: list[str] | None = None) -> None:
    """``ckpt``: the fast path when it applies, else the click CLI."""
    args = sys.argv[1:] if argv is None else argv
    parsed = None if "_CKPT_COMPLETE" in os.environ else parse(args)
    if parsed is None:
        from ckpt_cli.main import cli

        cli(args=args, prog_name="ckpt")
        return
    sys.exit(run_fast(*parsed))


def run_fast(command: str, flags: dict[str, bool], params: dict[str, object]) -> int:
    """Run ``command`` with ``params`` under the global ``flags``; the exit status, as the click CLI gives it."""
    from formats.core.errors import ExitCode

    no_color = flags["no_color"] and "NO_COLOR" not in os.environ
    if no_color:
        os.environ["NO_COLOR"] = "1"  # what --no-color means to the renderers when there is no click context
    stdout = sys.stdout
    if flags["quiet"]:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        status = _run(command, params)
        sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        print("ckpt: interrupted", file=sys.stderr, flush=True)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # as the click CLI does: quiet exit when the reader left
        os.dup2(devnull, stdout.fileno())
        return int(ExitCode.OK)
    except Exception as exc:  # the CLI's one error boundary words it and picks the exit status
        from ckpt_cli.main import report_error

        return report_error(exc, flags["traceback"], as_json=bool(params.get("as_json")))
    finally:
        if no_color:
            del os.environ["NO_COLOR"]
        if sys.stdout is not stdout:
            sys.stdout.close()
            sys.stdout = stdout


def _run(command: str, p: dict[str, object]) -> int:
    paths = tuple(p["paths"])  # type: ignore[call-overload]
    if command == "verify":
        from ckpt_cli.commands.verifying import run_verify

        return run_verify(paths, p["as_json"], p["jobs"], p["allow_loader_refusals"])  # type: ignore[arg-type]
    if command == "rename":
        from ckpt_cli.commands.renaming import run_rename

        return run_rename(paths[0], p.pop("out"), **{k: tuple(v) if isinstance(v, list) else v  # type: ignore[arg-type]
                                                     for k, v in p.items() if k != "paths"})
    if command == "convert":
        from ckpt_cli.commands.converting import run_convert

        return run_convert(paths[0], p.pop("out"), p.pop("to"),  # type: ignore[arg-type]
                           **{k: tuple(v) if isinstance(v, list) else v for k, v in p.items() if k != "paths"})  # type: ignore[arg-type]
    if command == "diff":
        from ckpt_cli.commands.diffing import run_diff

        return run_diff(*paths, match=p["match"], patterns=tuple(p["patterns"]), keys_only=p["keys_only"],  # type: ignore[arg-type,call-overload]
                        quiet=p["quiet"], as_json=p["as_json"], jobs=p["jobs"], names=p["names"])  # type: ignore[arg-type]
    from ckpt_cli.commands.listing import run_ls

    return run_ls(paths, tuple(p["patterns"]), p["sort"], p["recursive"], p["tree"],  # type: ignore[arg-type,call-overload]
                  p["names"], p["no_optimizer"], p["as_json"])  # type: ignore[arg-type]
