"""``ckpt completion``: print the shell completion script."""
from __future__ import annotations

import click

from ..help import command


@command(short_help="Print the shell completion script (bash, zsh, fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (commands, options, checkpoint paths, tensor keys).

    \b
    Examples:
      ckpt completion bash > ~/.local/share/bash-completion/completions/ckpt
      ckpt completion zsh > "${fpath[1]}/_ckpt"
      ckpt completion fish > ~/.config/fish/completions/ckpt.fish
    """
    from ..completion import completion_script

    click.echo(completion_script(shell), nl=False)
