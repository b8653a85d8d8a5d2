"""Issue 38: the object-graph writers (``convert --to tf-object``, ``convert --to tf-name`` of an object-based
bundle, ``rename``, ``edit``) write the same bytes as before they were made cheaper per tensor: the SHA-256 of
every file each case of :mod:`tests.graph_writer_cases` writes, recorded at 68bca3f, and their work (Python
calls, not seconds) grows linearly with the objects of the graph."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.graph_writer_cases import CASES, argv, scale_bundles, written

GOLDEN = json.loads((Path(__file__).parent / "data" / "graph_writers" / "golden.json").read_text())


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    from click.testing import CliRunner

    from tests.conftest import SHIPPED

    def run(*args: str):
        return CliRunner().invoke(SHIPPED, [str(a) for a in args], catch_exceptions=False)

    return scale_bundles(tmp_path_factory.mktemp("graph_writers"), run)


@pytest.mark.parametrize("case", list(CASES))
def test_written_files_are_byte_for_byte_as_before(bundles, run_cli, tmp_path, case):
    out = str(tmp_path / "out")
    result = run_cli(*argv(case, bundles, out))
    assert result.exit_code == GOLDEN[case]["exit"], result.output
    assert written(out) == GOLDEN[case]["files"]
