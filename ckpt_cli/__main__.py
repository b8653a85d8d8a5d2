"""``python -m ckpt_cli``."""
from ckpt_cli.main import cli

if __name__ == "__main__":
    cli(prog_name="ckpt")
