"""The first mistakes a user makes (issue 36): the hint names the flag that helps, a mistyped key gets the
nearest keys, numbered keys list in number order. On checkpoints written by real TensorFlow/Keras (the corpus).
(Missing required options: tests/test_required_options.py.)"""
from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import CORPUS

LIST_EXAMPLE = CORPUS / "seed_keras2" / "tf_list_example-1"
"""TF2 list/dict tracking: `listed/0` and `listed/1` are both variables named 'Variable'."""


# -- 2. extract's hint on shared names says the flag -------------------------------------------------------------
def test_extract_of_shared_names_names_the_by_key_flag(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "arrays"
    result = run_cli("extract", LIST_EXAMPLE, "-o", f"{out}/")
    assert result.exit_code == 4
    assert result.stderr.splitlines() == [
        f"ckpt: error: {out}/: 'listed/0/.ATTRIBUTES/VARIABLE_VALUE' and 'listed/1/.ATTRIBUTES/VARIABLE_VALUE' "
        "are both named 'Variable'",
        "  hint: use --by key to name each output by its key",
    ]
    assert not out.exists()
    # ... and the flag it names does it
    result = run_cli("extract", LIST_EXAMPLE, "-o", f"{out}/", "--by", "key")
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(out / "listed")) == ["0", "1"]


def test_library_hints_read_as_flags() -> None:
    """The library says `pass by="key"` (its keyword); the command line says `--by key`."""
    from ckpt_cli.boundary import cli_hint
    from formats.core.errors import CheckpointError

    def hinted(text: str) -> str | None:
        return cli_hint(CheckpointError("x", "y", hint=text))

    assert hinted("pass force=True to replace it") == "use --force to replace it"
    assert hinted('pass by="key" to name each output by its key') == "use --by key to name each output by its key"
    assert hinted("pass include_graph=True or by='name'") == "use --include-graph or by='name'"
    assert hinted("pass allow_pickle='x y' now") == "use --allow-pickle x y now"
