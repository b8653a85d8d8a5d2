"""Shell completion: command names and options (click), checkpoint paths, and tensor keys.

Paths complete to what ``ckpt`` accepts - directories, bundle *prefixes* (``ckpt-5``, not the
``.index``/``.data-*`` pair) and Keras weight files - and ``ckpt show PATH <TAB>`` completes the
checkpoint's tensor keys. ``scripts/gen_completions.py`` writes ``completions/ckpt.{bash,zsh,fish}``.
"""
from __future__ import annotations

import os

import click
from click.shell_completion import BashComplete, CompletionItem, add_completion_class

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

MAX_KEYS = 2000


def checkpoint_candidates(incomplete: str) -> list[str]:
    """Directories (with a trailing ``/``), bundle prefixes and weight files starting with ``incomplete``."""
    directory, partial = os.path.split(os.path.expanduser(incomplete))
    shown_dir = os.path.dirname(incomplete)
    try:
        names = sorted(os.listdir(directory or "."))
    except OSError:
        return []
    from formats.core.registry import suffixes as registered_suffixes

    suffixes = tuple(s for s in registered_suffixes() if s != ".index")
    out: list[str] = []
    for name in names:
        if not name.startswith(partial) or (name.startswith(".") and not partial.startswith(".")):
            continue
        full = os.path.join(directory or ".", name)
        shown = os.path.join(shown_dir, name) if shown_dir else name
        if os.path.isdir(full):
            out.append(shown + "/")
        elif name.endswith(".index"):
            out.append(shown[:-len(".index")])
        elif name.endswith(suffixes):
            out.append(shown)
    return out


class CheckpointPath(click.ParamType):
    """A checkpoint path argument: kept as text (URLs too), completed as checkpoints."""

    name = "checkpoint"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return os.fspath(value)

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        return [CompletionItem(c) for c in checkpoint_candidates(incomplete)]


CHECKPOINT = CheckpointPath()


def key_completer(*sources: str) -> Any:
    """A click ``shell_complete`` callback completing the tensor keys of the checkpoint named by the first of
    the parameters ``sources`` already on the line (a directory: its latest checkpoint)."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        path = next((v for v in (_param_value(ctx, p) for p in sources) if v), None)
        if not path:
            return []
        from formats.core.errors import CheckpointError
        from formats.discover.resolve import open_checkpoint

        try:
            with open_checkpoint(path) as ckpt:
                keys = [k for k in ckpt if k.startswith(incomplete)]
        except (CheckpointError, OSError):
            return []
        return [CompletionItem(k) for k in keys[:MAX_KEYS]]

    return complete


def list_completer(*choices: str) -> Any:
    """A click ``shell_complete`` callback completing a comma-separated list of ``choices`` (``stats
    --columns mean,s<TAB>`` -> ``mean,std``): the last item, the ones before it kept, none named twice."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        done, _, last = incomplete.rpartition(",")
        head = done + "," if done else ""
        taken = {w.lower() for w in done.split(",")}
        return [CompletionItem(head + c) for c in choices
                if c.lower().startswith(last.lower()) and c.lower() not in taken]

    return complete


def _param_value(ctx: click.Context, name: str) -> Any:
    """A parameter's value on the line being completed. Completing an option's value (``--opt <TAB>``) stops
    click's parsing before the arguments are bound; they are then the leftover words, in order."""
    if ctx.params.get(name) is not None:
        return ctx.params[name]
    words = [w for w in ctx.args if not w.startswith("-")]
    arguments = [p.name for p in ctx.command.params if isinstance(p, click.Argument)]
    return words[arguments.index(name)] if name in arguments and arguments.index(name) < len(words) else None


complete_keys = key_completer("path", "directory", "a", "src")
"""Keys of the checkpoint given earlier on the line (``path``, ``directory``, ``a`` or ``src``)."""


class CkptBashComplete(BashComplete):
    """click's bash completion, plus: candidates are shell-escaped (``my\\ runs/``, so a path with a space
    stays one word), and no space follows a completed directory, so completion can go on."""

    name = "bash"
    source_template = BashComplete.source_template.replace(
        "COMPREPLY+=($value)", "COMPREPLY+=(\"$(printf '%%q' \"$value\")\")", 1).replace(
        "    return 0\n}",
        "    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]]; then\n"
        "        compopt -o nospace\n"
        "    fi\n\n"
        "    return 0\n}", 1)


add_completion_class(CkptBashComplete)


def completion_script(shell: str) -> str:
    """The completion script click generates for ``shell`` (bash, zsh or fish). The script names only the
    program and its completion variable; click asks the CLI for candidates when the shell runs it."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:
        raise click.UsageError(f"unsupported shell {shell!r} (bash, zsh, fish)")
    return cls(click.Command("ckpt"), {}, "ckpt", "_CKPT_COMPLETE").source()
