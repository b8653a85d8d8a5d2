"""``python -m formats.tf SCRIPT [ARGS...]``: run a script with formats.tf installed as ``tensorflow``."""
from __future__ import annotations

import sys

from formats.tf.standin import run_script


def main(argv: list[str]) -> int:
    """Run ``argv[0]`` with the stand-in; usage on stderr (exit 2) without a script."""
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: python -m formats.tf SCRIPT [ARGS...]\n"
                         "Runs SCRIPT with formats.tf installed as 'tensorflow' (reading checkpoints only).\n")
        return 0 if argv else 2
    return run_script(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
