"""Options several commands share, declared once so the same words mean the same thing everywhere.

Each function returns spec entries (:class:`ckpt_cli.spec.Opt`) a command's ``SPEC`` lists among its options.
Click-free: the start-up fast path imports it.
"""
from __future__ import annotations

from .spec import CHECKPOINT, PATH, Choices, Ints, Opt

__all__ = ["rule_options", "write_options", "output_option", "link_option", "jobs_option", "executor_option", "json_option",
           "target_choices", "sharded_targets", "READ_BACK_JOBS", "CHECKPOINT"]


def rule_options(whose: str = "") -> tuple[Opt, ...]:
    """``--map``, ``--regex`` and ``--rules`` (see :mod:`formats.ops.rules`); ``whose`` names the side renamed."""
    subject = f"{whose} names" if whose else "names"
    return (
        Opt("--map", name="maps", multiple=True, metavar="OLD=NEW",
            help=f"Rename {subject} by prefix (whole '/'-segments; repeatable, first matching rule wins)."),
        Opt("--regex", name="regexes", multiple=True, metavar="PAT=REPL", help=f"Rename {subject} with re.sub (repeatable)."),
        Opt("--rules", name="rules_file", type=PATH, metavar="FILE",
            help="Rename rules file (TOML or JSON), applied before --map and --regex."),
    )


def write_options(source: str = "SRC") -> tuple[Opt, ...]:
    """``--dry-run``, ``--json``, ``--force``, ``--no-verify``, ``--update-state`` and ``--verbose`` of commands
    that write."""
    return (
        Opt("--dry-run", flag=True, help="Print the mapping table and problems; write nothing."),
        json_option("Report the plan (and what was written) as JSON."),
        Opt("--force", flag=True, help="Replace an existing output."),
        Opt("--no-verify", flag=True, help=f"Skip reading the output back and comparing it with {source}."),
        Opt("--update-state", flag=True, help="Make OUT the latest checkpoint of its directory's state file."),
        Opt("--skip-unreadable", flag=True,
            help="Write the rest without the tensors ckpt cannot read (each named in a warning); without it, each "
                 "is an error and nothing is written."),
        Opt("-v", "--verbose", flag=True,
            help="Under each problem, the keys behind it (candidates, the tensors it is about)."),
    )


def output_option(help: str = "Output checkpoint prefix (or file, for file formats).") -> Opt:
    """``-o/--output OUT`` (required) of the commands that write."""
    return Opt("-o", "--output", name="out", required=True, type=PATH, metavar="OUT", help=help)


def json_option(help: str = "Machine-readable output on stdout.") -> Opt:
    """``--json``: one JSON document on stdout."""
    return Opt("--json", name="as_json", flag=True, help=help)


def link_option() -> Opt:
    """``--link``: hard-link the input data files an output bundle takes over whole, instead of copying them."""
    return Opt(
        "--link", flag=True,
        help="Hard-link the input's data files into the output instead of copying them, where both are on one "
             "file system (a rename or a name<->object conversion then writes only the index). Checkpoint data "
             "files are never modified in place, so the shared files are safe; deleting either checkpoint "
             "leaves the other whole.")


def jobs_option(what: str = "Threads reading tensors at once") -> Opt:
    """``--jobs N``: how many threads read tensors (checksums and comparisons run on every core by default)."""
    return Opt("--jobs", "-j", name="jobs", type=Ints(min=0), default=0, metavar="N",
               help=f"{what} (default 0: one per available core).")


def executor_option() -> Opt:
    """``--executor local|dask://HOST:PORT``: where the units of work run (``CKPT_EXECUTOR`` when not given)."""
    return Opt("--executor", name="executor", metavar="WHERE",
               help="Where the work runs: 'local' (threads, --jobs; the default) or 'dask://HOST:PORT', the "
                    "workers of a Dask scheduler, which read the checkpoint from its URL themselves (pip install "
                    "'tfckpt[dask]'). Default: the CKPT_EXECUTOR environment variable, else local.")


READ_BACK_JOBS = "Threads reading the output back to verify it"
"""``jobs_option``'s help for the commands that write."""


def _write_targets() -> list[str]:
    from formats.core.registry import write_targets

    return write_targets()


def _writes(layout: str) -> bool:
    """Whether a registered format writes ``layout`` (formats asked in order, each imported when reached)."""
    from formats.core.registry import writer_capability

    return layout in writer_capability(layout, "writes")


target_choices = Choices(_write_targets, _writes)
"""The ``--to`` choices: every layout a registered format writes, plugins included, in name order."""


def sharded_targets() -> list[str]:
    """The ``--to`` choices written as shards of at most ``--max-shard-size`` bytes (Keras 3's sharded weights)."""
    from formats.core.format import capability
    from formats.core.registry import all_formats

    return sorted({layout for spec in all_formats() for layout in capability(spec, "max_shard_size")})  # type: ignore[attr-defined]
