"""``verify`` states what the format's own loader refuses although ckpt reads it (issue 24, item 23): a loader
refusal fails verify (exit 1) unless ``--allow-loader-refusals``. The safetensors library is the oracle for
safetensors files."""
from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import formats
from formats.ops.compare.verify import verify_checkpoint

safetensors = pytest.importorskip("safetensors")

REFUSED = "; the safetensors library refuses the file"
U8 = "U8"


def _file(path: Path, header: bytes, data: bytes) -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def _tensor(key: str, shape: int, begin: int, end: int) -> str:
    return f'"{key}": {{"dtype": "{U8}", "shape": [{shape}], "data_offsets": [{begin}, {end}]}}'


CASES = {
    # the first "a" spans [0, 4), the second (which both the library and ckpt read) [4, 8): nothing holds [0, 4)
    "duplicate": ("{" + _tensor("a", 4, 0, 4) + ", " + _tensor("a", 4, 4, 8) + "}", 8,
                  [("a", "data bytes [0, 4) before it belong to no tensor" + REFUSED)],
                  [("a", "is named 2 times in the header; the last is read (as the safetensors library does)")]),
    "gap": ("{" + _tensor("a", 4, 2, 6) + "}", 6, [("a", "data bytes [0, 2) before it belong to no tensor" + REFUSED)],
            []),
    "trailing": ("{" + _tensor("a", 4, 0, 4) + "}", 6, [("{name}", "2 bytes after the last tensor" + REFUSED)], []),
    "empty": ("{" + _tensor("a", 4, 0, 4) + ", " + _tensor("e", 0, 2, 2) + "}", 4,
              [("e", "an empty tensor at data byte 2, inside the bytes of the tensor before it (which end at 4)"
                + REFUSED)], []),
}


def _library_refuses(path: Path) -> bool:
    try:
        with safetensors.safe_open(str(path), framework="numpy") as f:
            list(f.keys())
    except Exception:  # noqa: BLE001 - SafetensorError, whatever its module
        return True
    return False


@pytest.mark.parametrize("case", sorted(CASES))
def test_verify_reports_what_the_safetensors_library_refuses(tmp_path, run_cli, case):
    header, size, refusals, problems = CASES[case]
    path = _file(tmp_path / f"{case}.safetensors", header.encode(), bytes(range(size)))
    assert _library_refuses(path)
    expected = [(where.format(name=path.name), message) for where, message in refusals]
    with formats.open_checkpoint(path) as ckpt:
        assert [tuple(p) for p in ckpt.loader_refusals()] == expected
        assert all(e.read().size == e.size for e in ckpt.values())  # ckpt still reads what it can
    result = run_cli("verify", "--json", path)
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["ok"] is False and doc["loader_refusals_allowed"] is False
    assert [(p["where"], p["message"]) for p in doc["loader_refusals"]] == expected
    assert [(p["where"], p["message"]) for p in doc["problems"]] == problems
    allowed = run_cli("verify", "--json", "--allow-loader-refusals", path)
    assert allowed.exit_code == (1 if problems else 0)
    assert json.loads(allowed.stdout)["loader_refusals_allowed"] is True


@pytest.mark.parametrize("header", [
    "{" + _tensor("a", 4, 0, 4) + ", " + _tensor("e", 0, 4, 4) + "}",  # an empty tensor where the last ends
    "{" + _tensor("a", 4, 0, 4) + ", " + _tensor("e", 0, 0, 0) + "}",  # ... or at 0
    "{" + _tensor("a", 4, 0, 4) + ", " + _tensor("a", 4, 0, 4) + "}",  # the same key twice, the same bytes
])
def test_what_the_safetensors_library_takes_is_no_refusal(tmp_path, header):
    path = _file(tmp_path / "ok.safetensors", header.encode(), bytes(4))
    assert not _library_refuses(path)
    with formats.open_checkpoint(path) as ckpt:
        assert ckpt.loader_refusals() == []


def test_refusals_render_as_text_and_are_allowed_by_the_shipped_command(tmp_path):
    header, size, _, _ = CASES["gap"]
    path = _file(tmp_path / "gap.safetensors", header.encode(), bytes(size))
    ckpt = [sys.executable, "-c", "import sys; from ckpt_cli.fast import main; sys.exit(main())"]
    refused = subprocess.run([*ckpt, "verify", str(path)], capture_output=True, text=True, env={"NO_COLOR": "1"})
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout.splitlines() == [
        "loader refusal a: data bytes [0, 2) before it belong to no tensor" + REFUSED,
        f"1 problem {path}: safetensors, checked 1 tensors, 4 B in 1 file"]
    allowed = subprocess.run([*ckpt, "verify", "--allow-loader-refusals", str(path)], capture_output=True, text=True,
                             env={"NO_COLOR": "1"})
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.splitlines()[-1] == f"ok {path}: safetensors, checked 1 tensors, 4 B in 1 file"


def test_library_report_is_ok_only_when_refusals_are_allowed(tmp_path):
    header, size, _, _ = CASES["trailing"]
    path = _file(tmp_path / "t.safetensors", header.encode(), bytes(size))
    with formats.open_checkpoint(path) as ckpt:
        assert verify_checkpoint(ckpt).ok is False
        assert verify_checkpoint(ckpt, allow_loader_refusals=True).ok is True


def test_allow_loader_refusals_is_not_for_against(tmp_path, run_cli):
    header, size, _, _ = CASES["gap"]
    path = _file(tmp_path / "gap.safetensors", header.encode(), bytes(size))
    result = run_cli("verify", path, "--against", path, "--allow-loader-refusals")
    assert result.exit_code == 2 and "--allow-loader-refusals is for verifying PATH itself" in result.stderr
