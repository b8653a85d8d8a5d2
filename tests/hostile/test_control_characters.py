"""Issue 36 #5: keys holding terminal control sequences (ESC/CSI, BEL, CR, newline, DEL, C1 controls, a
right-to-left override) are printed escaped by every text renderer - ``ls`` (table, ``--tree``, ``--names``,
the compact listing), ``diff``, ``show``, ``stats``, ``--dry-run`` tables, ``--to keras`` warnings, error
lines on stderr - on a pipe and on a terminal; JSON keeps the exact key.

The escaped forms are written out by hand below (the rule: each character :meth:`str.isprintable` refuses
as ``\\xNN`` below 256, else ``\\uXXXX``), not computed by the function under test."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from formats.tf_bundle.writer import write_checkpoint

ESC_KEY = "evil\x1b[31mred\x1b[0m/kernel"
BELL_KEY = "bell\x07/x\r\x7f\x9bq"
NEWLINE_KEY = "nl\nfake/row"
RLO_KEY = "rlo\u202e/w"
SHOWN = {
    ESC_KEY: r"evil\x1b[31mred\x1b[0m/kernel",
    BELL_KEY: r"bell\x07/x\x0d\x7f\x9bq",
    NEWLINE_KEY: r"nl\x0afake/row",
    RLO_KEY: r"rlo\u202e/w",
    "ok/w": "ok/w",
}
VALUES = {ESC_KEY: np.ones((2, 3), np.float32), BELL_KEY: np.zeros(4, np.int32), NEWLINE_KEY: np.arange(2.0),
          RLO_KEY: np.full(5, 7, np.int64), "ok/w": np.arange(3.0)}
ROWS = {ESC_KEY: ("float32", "[2, 3]", "24 B"), BELL_KEY: ("int32", "[4]", "16 B"),
        NEWLINE_KEY: ("float64", "[2]", "16 B"), RLO_KEY: ("int64", "[5]", "40 B"), "ok/w": ("float64", "[3]", "24 B")}
RAW = ["evil\x1b[31m", "red\x1b[0m", "\x07", "\r", "\x7f", "\x9b", "\u202e", "nl\nfake"]
ROOT = Path(__file__).resolve().parents[2]
KERAS_NAMES = ROOT / "tests" / "data" / "keras_legacy" / "names" / "full.h5"


def assert_clean(text: str) -> None:
    """No raw control character (nor other unprintable one) anywhere: every line is printable."""
    for line in text.split("\n"):
        assert line.isprintable(), repr(line)


def row_pattern(shown: str, *cells: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(shown) + "".join(r"\s+" + re.escape(c) for c in cells) + "$", re.M)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hostile_names")
    a, b = str(root / "a"), str(root / "b")
    write_checkpoint(a, VALUES)
    write_checkpoint(b, {"ok/w": VALUES["ok/w"]})
    return {"a": a, "b": b, "root": str(root)}


def test_the_rule() -> None:
    from ckpt_cli.render.common import shown
    from formats.core.names import terminal_text

    assert shown is terminal_text
    for key, text in SHOWN.items():
        assert terminal_text(key) == text
    assert terminal_text("caf\u00e9 \u4e2d") == "caf\u00e9 \u4e2d"  # printable non-ASCII is kept
    assert terminal_text("a\udcffb") == r"a\xffb"  # undecodable bytes: safe_text's rule first
    assert terminal_text("t\tx\U000e0001") == r"t\x09x\U000e0001"


def test_ls_table_escapes_every_key(run_cli, hostile) -> None:
    result = run_cli("ls", hostile["a"])
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    for key, shown in SHOWN.items():
        assert row_pattern(shown, *ROWS[key]).search(result.stdout), (shown, result.stdout)
    assert len(result.stdout.splitlines()) == 1 + len(SHOWN) + 1  # no forged row


def test_ls_names_and_tree(run_cli, hostile) -> None:
    names = run_cli("ls", "--names", hostile["a"])
    assert names.exit_code == 0, names.output
    assert_clean(names.stdout)
    for key, shown in SHOWN.items():
        assert row_pattern(shown, shown, "variable", *ROWS[key]).search(names.stdout), (shown, names.stdout)
    tree = run_cli("ls", "--tree", hostile["a"])
    assert tree.exit_code == 0, tree.output
    assert_clean(tree.stdout)
    lines = tree.stdout.splitlines()
    assert re.search(r"^evil\\x1b\[31mred\\x1b\[0m\s+24 B\s+6$", tree.stdout, re.M), tree.stdout
    assert re.search(r"^bell\\x07\s+16 B\s+4$", tree.stdout, re.M), tree.stdout
    assert re.search(r"^└── x\\x0d\\x7f\\x9bq\s+int32\s+\[4\]\s+16 B\s+4$", tree.stdout, re.M), tree.stdout
    assert re.search(r"^nl\\x0afake\s+16 B\s+2$", tree.stdout, re.M), tree.stdout
    assert re.search(r"^rlo\\u202e\s+40 B\s+5$", tree.stdout, re.M), tree.stdout
    assert len(lines) == 1 + 2 * len(SHOWN) + 1


def test_ls_json_keeps_the_exact_keys(run_cli, hostile) -> None:
    result = run_cli("ls", "--json", hostile["a"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert sorted(t["key"] for t in doc["tensors"]) == sorted(SHOWN)
    tree = json.loads(run_cli("ls", "--tree", "--json", hostile["a"]).stdout)
    assert sorted(_keys(tree)) == sorted(SHOWN)


def _keys(node: object) -> list[str]:
    """Every ``key`` in a JSON document (a tree's nested objects)."""
    if isinstance(node, dict):
        return ([node["key"]] if isinstance(node.get("key"), str) else []) + [k for v in node.values() for k in _keys(v)]
    if isinstance(node, list):
        return [k for v in node for k in _keys(v)]
    return []


def test_the_compact_listing_flags_keys_to_escape(hostile, tmp_path) -> None:
    """The index's own listing keeps the exact keys (for JSON) and says a table of them must be escaped; ``ls``
    written from it then escapes them as the opened bundle's table does."""
    from formats.tf_bundle.index_listing import compact_listing

    assert compact_listing(hostile["a"]) is None  # a key holding a newline: the bundle is opened
    for key in ("a\x1bb", "a\x7fb", "a\x9bb", "a\u202eb", "a\tb"):
        write_checkpoint(tmp_path / "one", {key: np.zeros(1), "z": np.zeros(1)}, force=True)
        one = compact_listing(str(tmp_path / "one"))
        assert one is not None and not one.printable and [k for k, _ in one.rows()] == [key, "z"], repr(key)
        assert not compact_listing(str(tmp_path / "one"), ["z"]).printable  # the block's keys count
    write_checkpoint(tmp_path / "fine", {"caf\u00e9/w": np.zeros(1), "ok w": np.zeros(2)})
    fine = compact_listing(str(tmp_path / "fine"))
    assert fine is not None and fine.printable and [k for k, _ in fine.rows()] == ["caf\u00e9/w", "ok w"]


def test_ls_from_the_compact_listing(run_cli, tmp_path) -> None:
    """A key the compact listing takes (no newline) written through it: escaped, rows aligned."""
    from formats.tf_bundle.index_listing import compact_listing

    keys = {ESC_KEY: VALUES[ESC_KEY], BELL_KEY: VALUES[BELL_KEY], "ok/w": VALUES["ok/w"]}
    prefix = str(tmp_path / "c")
    write_checkpoint(prefix, keys)
    assert compact_listing(prefix) is not None  # taken by `ls PREFIX`'s start-up path
    result = run_cli("ls", prefix)
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    width = len(SHOWN[ESC_KEY])
    assert result.stdout.splitlines()[:4] == [
        f"{'key':<{width}}  dtype    shape   size",
        f"{SHOWN[BELL_KEY]:<{width}}  int32    [4]     16 B",
        f"{SHOWN[ESC_KEY]:<{width}}  float32  [2, 3]  24 B",
        f"{'ok/w':<{width}}  float64  [3]     24 B"]
    doc = json.loads(run_cli("ls", "--json", prefix).stdout)
    assert [t["key"] for t in doc["tensors"]] == [BELL_KEY, ESC_KEY, "ok/w"]


def test_diff_only_in_rows(run_cli, hostile) -> None:
    result = run_cli("diff", hostile["a"], hostile["b"])
    assert result.exit_code == 1, result.output
    assert_clean(result.stdout)
    for key, shown in SHOWN.items():
        if key != "ok/w":
            assert row_pattern(shown, "only in A").search(result.stdout), (shown, result.stdout)
    back = run_cli("diff", hostile["b"], hostile["a"])
    assert_clean(back.stdout)
    assert row_pattern(SHOWN[ESC_KEY], "only in B").search(back.stdout)
    doc = json.loads(run_cli("diff", "--json", hostile["a"], hostile["b"]).stdout)
    assert sorted(doc["only_in_a"]) == sorted(k for k in SHOWN if k != "ok/w")


def test_show_header_and_stats(run_cli, hostile) -> None:
    result = run_cli("show", hostile["a"], ESC_KEY)
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    assert result.stdout.splitlines()[0] == r"evil\x1b[31mred\x1b[0m/kernel: float32 [2, 3]"
    result = run_cli("show", hostile["a"], NEWLINE_KEY)
    assert result.stdout.splitlines()[0] == r"nl\x0afake/row: float64 [2]"
    stats = run_cli("stats", hostile["a"])
    assert stats.exit_code == 0, stats.output
    assert_clean(stats.stdout)
    assert re.search("^" + re.escape(SHOWN[BELL_KEY]) + r"\s+int32\s+\[4\]", stats.stdout, re.M)


def test_error_lines_on_stderr(run_cli, hostile) -> None:
    missing = hostile["root"] + "/gone\x1b[2J\x07"
    result = run_cli("ls", missing)
    assert result.exit_code == 3, result.output
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert result.stderr.splitlines()[0] == \
        f"ckpt: error: {hostile['root']}/gone\\x1b[2J\\x07: no such file, directory or checkpoint prefix"
    result = run_cli("show", hostile["a"], "absent\x1b]0;title\x07")
    assert result.exit_code != 0
    assert_clean(result.stderr)
    assert "absent\\x1b]0;title\\x07" in result.stderr


def test_dry_run_tables(run_cli, hostile, tmp_path) -> None:
    result = run_cli("convert", hostile["a"], "-o", tmp_path / "c", "--to", "tf-object", "--dry-run")
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    for key, shown in SHOWN.items():
        assert row_pattern(shown, shown + "/.ATTRIBUTES/VARIABLE_VALUE", ROWS[key][1], ROWS[key][0]).search(
            result.stdout), (shown, result.stdout)
    result = run_cli("rename", hostile["a"], "-o", tmp_path / "r", "--map", "evil\x1b[31mred\x1b[0m=good",
                     "--map", "zz\x1b[2J=y", "--dry-run")
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    assert row_pattern(SHOWN[ESC_KEY], "good/kernel", "[2, 3]", "float32").search(result.stdout), result.stdout
    assert "warning: unmatched-rule: --map zz\\x1b[2J=y: rule --map zz\\x1b[2J=y matched nothing" in result.stdout


def _hostile_keras(path: Path) -> Path:
    """tests/data/keras_legacy/names/full.h5 with its layer ``head/dense`` renamed ``head/d<ESC>[2Jense``."""
    import h5py

    old, new = "head/dense", "head/d\x1b[2Jense"
    shutil.copy(KERAS_NAMES, path)
    with h5py.File(path, "r+") as f:
        config = f.attrs["model_config"]
        config = config.decode() if isinstance(config, bytes) else config
        f.attrs["model_config"] = config.replace(json.dumps(old), json.dumps(new))
        weights = f["model_weights"]
        weights.attrs["layer_names"] = np.array([new if n == old else n for n in weights.attrs["layer_names"]],
                                                dtype=h5py.string_dtype())
        weights.move(old, new)
        weights[new].move(old, new)
        weights[new].attrs["weight_names"] = np.array([w.replace(old, new) for w in weights[new].attrs["weight_names"]],
                                                      dtype=h5py.string_dtype())
    return path


def test_to_keras_warnings(run_cli, tmp_path) -> None:
    pytest.importorskip("h5py")
    source = _hostile_keras(tmp_path / "evil.h5")
    for extra in (["--dry-run"], []):
        result = run_cli("convert", source, "-o", tmp_path / "m.keras", "--to", "keras", *extra)
        assert result.exit_code == 0, result.output
        assert_clean(result.output)
        assert r"head/d\x1b[2Jense -> head_d\x1b[2Jense)" in result.output, result.output
    assert row_pattern(r"model_weights/head/d\x1b[2Jense/head/d\x1b[2Jense/kernel:0", "layers/dense_1/vars/0",
                       "[3, 2]", "float32").search(
        run_cli("convert", source, "-o", tmp_path / "n.keras", "--to", "keras", "--dry-run").stdout)


def _on_a_terminal(argv: list[str], extra_env: dict[str, str]) -> str:
    """``ckpt ARGV``'s stdout written to a pseudo-terminal (80 columns), as a user's terminal receives it."""
    import fcntl
    import pty
    import struct
    import termios

    import ckpt_cli

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no \n -> \r\n translation: what ckpt wrote, byte for byte
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    env = {**os.environ, "PYTHONPATH": str(Path(ckpt_cli.__file__).resolve().parents[1]), **extra_env}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "ckpt_cli", *argv], stdout=slave, stderr=subprocess.PIPE,
                            env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8")


@pytest.mark.parametrize("rich", ["0", "1"], ids=["fitting", "rich"])
@pytest.mark.parametrize("argv", [["ls"], ["ls", "--tree"], ["ls", "--names"]], ids=" ".join)
def test_on_a_terminal(hostile, argv: list[str], rich: str) -> None:
    out = _on_a_terminal([*argv, hostile["a"]], {"CKPT_FORCE_RICH": rich})
    for raw in RAW:
        assert raw not in out, (raw, out)
    assert re.sub(r"\x1b\[[0-9;]*m", "", out).replace("\n", "").isprintable(), out  # only ckpt's own styles
    for shown in SHOWN.values():
        assert shown.split("/")[0] in out
