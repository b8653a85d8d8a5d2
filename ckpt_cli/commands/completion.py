"""``ckpt completion``: print the shell completion script."""
from __future__ import annotations

from ..spec import Arg, Command

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt completion SHELL``: print the script."""
    import sys

    from ..completion import completion_script

    sys.stdout.write(completion_script(p.shell))
    return 0


SPEC = Command(
    "completion", runner=run,
    short_help="Print the shell completion script (bash, zsh, fish).",
    help="""Print the completion script for SHELL (commands, options, checkpoint paths, tensor keys).

    \b
    Examples:
      ckpt completion bash > ~/.local/share/bash-completion/completions/ckpt
      ckpt completion zsh > "${fpath[1]}/_ckpt"
      ckpt completion fish > ~/.config/fish/completions/ckpt.fish
    """,
    arguments=(Arg("shell", type=("bash", "zsh", "fish")),),
)
