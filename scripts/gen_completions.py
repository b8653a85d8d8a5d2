"""Regenerate completions/ckpt.{bash,zsh,fish} from the CLI (tests/test_completion.py checks they are current)."""
from pathlib import Path

from ckpt_cli.completion import completion_script

ROOT = Path(__file__).resolve().parent.parent
SHELLS = {"bash": "ckpt.bash", "zsh": "ckpt.zsh", "fish": "ckpt.fish"}

if __name__ == "__main__":
    for shell, name in SHELLS.items():
        (ROOT / "completions" / name).write_text(completion_script(shell))
        print("wrote", ROOT / "completions" / name)
