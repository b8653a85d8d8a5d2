"""One error model: one exit code per error class, declared once (formats.core.errors.ExitCode), one CLI test
per exit code, a crash is never 1 (not even under `ckpt -q diff`), and library messages never name flags."""
from __future__ import annotations

import ast
import errno
import inspect
import re
from pathlib import Path

import pytest

import formats.core.errors as errors
from ckpt_cli.help import EXIT_MEANINGS
from ckpt_cli.main import COMMANDS
from formats.core.errors import ExitCode

from . import documentation
from .conftest import CORPUS

ROOT = Path(__file__).parent.parent
EST1, EST200 = CORPUS / "tf1_estimator/model.ckpt-1", CORPUS / "tf1_estimator/model.ckpt-200"
INTERNAL = "please report it with --traceback output"


# -- the model -------------------------------------------------------------------------------------
def test_exit_codes_are_the_documented_numbers():
    assert {c.name: int(c) for c in ExitCode} == {"OK": 0, "PROBLEMS": 1, "USAGE": 2, "INPUT": 3, "OUTPUT": 4,
                                                  "INTERNAL": 5, "INTERRUPTED": 130}
    from ckpt_cli.exit_codes import ExitCode as reexported

    assert reexported is ExitCode  # declared once
    import formats

    assert formats.ExitCode is ExitCode and formats.NothingSelectedError is errors.NothingSelectedError


EXPECTED_CODES = {
    "CheckpointError": 3, "CheckpointNotFoundError": 3, "NotACheckpointError": 3, "CorruptCheckpointError": 3,
    "ChecksumError": 3, "UnsupportedError": 3, "AmbiguousCheckpointError": 3, "PluginError": 3, "InputReadError": 3,
    "TensorNotFoundError": 1, "NothingSelectedError": 1, "UsageError": 2,
    "OutputError": 4, "OutputExistsError": 4, "OutputIsInputError": 4, "InvalidOutputError": 4,
    "OutputWriteError": 4, "VerificationError": 4, "PickleRequiredError": 4,
}


def test_every_error_class_has_its_exit_code_and_a_builtin_base():
    classes = {n: c for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, errors.CheckpointError)}
    assert {n: int(c.exit_code) for n, c in classes.items()} == EXPECTED_CODES
    builtins = (FileNotFoundError, FileExistsError, KeyError, ValueError, OSError, RuntimeError)
    for name, cls in classes.items():
        if name not in ("CheckpointError", "OutputError"):
            assert issubclass(cls, builtins), name
    from formats.ops.inspect.extract import ExtractError
    from formats.ops.rules import RuleError
    from formats.tf_bundle.writer import VerificationError

    assert RuleError.exit_code == 2 and ExtractError.exit_code == 4 and VerificationError is errors.VerificationError


def test_exit_code_of_anything_else_is_internal():
    assert errors.exit_code_of(ValueError("x")) == ExitCode.INTERNAL
    assert errors.exit_code_of(KeyboardInterrupt()) == ExitCode.INTERRUPTED
    assert errors.exit_code_of(errors.OutputExistsError("o", "output exists")) == ExitCode.OUTPUT


def test_os_errors_keep_their_errno_and_message():
    exc = errors.OutputWriteError("out.npz", "No space left on device", errno=errno.ENOSPC)
    assert isinstance(exc, OSError) and exc.errno == errno.ENOSPC and exc.filename == "out.npz"
    assert str(exc) == "out.npz: No space left on device"
    read = errors.InputReadError("r.json", "cannot read rules file (Permission denied)", errno=errno.EACCES)
    assert isinstance(read, OSError) and read.errno == errno.EACCES and read.exit_code == 3


def test_verification_error_takes_a_message_or_a_report():
    from formats.core.roundtrip import Mismatch, RoundTripReport

    report = RoundTripReport("out", "sources", mismatches=[Mismatch("w", "value", "values differ"), Mismatch("b", "shape", "x")])
    exc = errors.VerificationError("out", report)
    assert exc.report is report and str(exc) == "out: verification failed: 'w': values differ (and 1 more)"
    plain = errors.VerificationError("o.npz", "verification failed: the npz members are not the planned keys")
    assert plain.report is None and plain.exit_code == 4


# -- one CLI test per exit code --------------------------------------------------------------------
def test_exit_0_success(run_cli):
    result = run_cli("ls", EST200)
    assert result.exit_code == 0 and result.stderr == ""


def test_exit_1_differences_found(run_cli):
    result = run_cli("diff", "--keys-only", EST1, CORPUS / "tf1_adam/model.ckpt-200")
    assert result.exit_code == 1 and "only in" in result.stdout.lower() + result.stderr.lower()
    assert run_cli("-q", "diff", EST1, EST200).exit_code == 1


def test_exit_1_selection_matches_nothing(run_cli):
    result = run_cli("-q", "stats", "--check-finite", EST200, "nett/*")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"ckpt: error: {EST200}: no key matches 'nett/*'",
                                          "  hint: patterns are exact keys or globs on the whole key"]


@pytest.mark.parametrize("args, last_line", [
    (["ls", "--zzzz", "{est}"], "Error: No such option '--zzzz'."),
    (["diff", "--map", "nonsense", "{est}", "{est}"], "ckpt: error: a map rule needs OLD=NEW, got 'nonsense'"),
    (["diff", "--regex", "(=x", "{est}", "{est}"],
     "ckpt: error: bad regular expression '(': missing ), unterminated subpattern at position 0"),
    (["show", "{est}", "global_step[0:x]"], "  hint: slices look like [0:3, :] or [2, ...]"),
    (["show", "{est}", "dnn/logits/bias[5]"], "ckpt: error: dnn/logits/bias: bad slice for shape [3]: "
                                              "index 5 is out of bounds for axis 0 with size 3"),
])
def test_exit_2_usage(run_cli, args, last_line):
    result = run_cli(*[a.format(est=EST200) for a in args])
    assert result.exit_code == 2
    got = result.stderr.splitlines()[-1]
    if got.startswith("Error: No such option"):  # click's wording: 8.2 "No such option: --x", later "'--x'."
        got = got.replace("option: --zzzz", "option '--zzzz'.")
    assert got == last_line.format(est=EST200)


def test_exit_2_malformed_rules_file(run_cli, tmp_path):
    rules = tmp_path / "r.json"
    rules.write_text('{"rules": [{"map": "no-equals"}]}')
    result = run_cli("diff", "--rules", rules, EST200, EST200)
    assert result.exit_code == 2
    assert result.stderr == f"ckpt: error: {rules}: a map rule needs OLD=NEW, got 'no-equals'\n"


def test_exit_3_input_cannot_be_read(run_cli, tmp_path):
    result = run_cli("ls", tmp_path / "nope")
    assert result.exit_code == 3
    assert result.stderr == f"ckpt: error: {tmp_path / 'nope'}: no such file, directory or checkpoint prefix\n"
    missing_rules = run_cli("diff", "--rules", tmp_path / "r.json", EST200, EST200)
    assert missing_rules.exit_code == 3
    assert missing_rules.stderr == f"ckpt: error: {tmp_path / 'r.json'}: cannot read rules file (No such file or directory)\n"


def test_exit_4_output_exists_or_is_an_input(run_cli, tmp_path):
    out = tmp_path / "g.npy"
    out.write_bytes(b"keep")
    result = run_cli("extract", EST200, "global_step", "-o", out)
    assert result.exit_code == 4 and out.read_bytes() == b"keep"
    assert result.stderr.splitlines() == [f"ckpt: error: {out}: output file exists", "  hint: use --force to replace it"]
    target = tmp_path / "o" / "ckpt"
    assert run_cli("convert", EST200, "-o", target, "--to", "tf-object").exit_code == 0
    again = run_cli("convert", EST200, "-o", target, "--to", "tf-object")
    assert again.exit_code == 4
    assert again.stderr.splitlines() == [f"ckpt: error: {target}: output checkpoint exists",
                                         "  hint: use --force to replace it"]


def test_exit_4_flag_hints_come_from_python_keywords(run_cli, tmp_path):
    from formats import write_checkpoint
    import numpy as np

    src = tmp_path / "s" / "ckpt-1"
    write_checkpoint(src, {"s": np.array([b"a\x00", b"b"], dtype=object)})
    result = run_cli("extract", src, "s", "-o", tmp_path / "s.npy")
    assert result.exit_code == 4
    assert result.stderr.splitlines()[1] == "  hint: use --allow-pickle to write an object array instead"


def test_exit_4_url_outputs_of_single_files(run_cli):
    result = run_cli("extract", EST200, "global_step", "-o", "s3://b/x.npy")
    assert result.exit_code == 4 and result.stderr.startswith("ckpt: error: s3://b/x.npy: this output is written")


def _fail_listing(monkeypatch, failure) -> None:
    """``ckpt ls`` raises what ``failure`` raises, on either way of listing a bundle: opened and summarised, or
    read compactly from its index (the start-up path of ``ls PREFIX``)."""
    import formats.ops.inspect.summary as summary
    import formats.tf_bundle.index_listing as bundle_listing

    monkeypatch.setattr(summary, "summarise", failure)
    monkeypatch.setattr(bundle_listing, "compact_listing", failure)


def test_exit_4_unwrapped_disk_full(run_cli, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    _fail_listing(monkeypatch, full)
    result = run_cli("ls", EST200)
    assert result.exit_code == 4
    assert result.stderr.splitlines() == ["ckpt: error: No space left on device",
                                          "  hint: the output's disk is full; nothing was left under the output name"]


def test_exit_3_unwrapped_os_error_reading(run_cli, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/x/y.index")

    _fail_listing(monkeypatch, denied)
    result = run_cli("ls", EST200)
    assert result.exit_code == 3 and result.stderr == "ckpt: error: /x/y.index: Permission denied\n"


def _crash(*args, **kwargs):
    raise ValueError("operands could not be broadcast together")


def test_exit_5_internal_error(run_cli, monkeypatch):
    _fail_listing(monkeypatch, _crash)
    result = run_cli("ls", EST200)
    assert result.exit_code == 5 and result.stdout == ""
    assert result.stderr == f"ckpt: internal error: ValueError: operands could not be broadcast together; {INTERNAL}\n"


@pytest.mark.parametrize("where", ["compare_entries", "diff_checkpoints"])
def test_quiet_diff_of_a_crash_is_never_1(run_cli, monkeypatch, where):
    import formats.ops.compare.diff as diff

    monkeypatch.setattr(diff, where, _crash)
    result = run_cli("-q", "diff", EST1, EST200)  # the two differ: a swallowed crash would read as 1
    assert result.exit_code == 5 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"ckpt: internal error: ValueError: operands could not be broadcast together; {INTERNAL}"]
    assert run_cli("diff", "--quiet", EST1, EST200).exit_code == 5


def test_traceback_shows_the_exception_and_keeps_the_code(run_cli, monkeypatch):
    _fail_listing(monkeypatch, _crash)
    result = run_cli("--traceback", "ls", EST200)
    assert result.exit_code == 5 and "Traceback (most recent call last)" in result.stderr


def test_exit_130_interrupted(run_cli, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    _fail_listing(monkeypatch, interrupt)
    result = run_cli("ls", EST200)
    assert result.exit_code == 130 and result.stderr == "ckpt: interrupted\n"


# -- declared once, stated everywhere --------------------------------------------------------------
def _status_block(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("  Exit status:")
    block, rows = lines[start + 1:], []
    for line in block:
        if re.match(r"^    \d+ ", line):
            rows.append(line.strip())
        elif line.startswith("         ") and rows:
            rows[-1] += " " + line.strip()
        else:
            break
    return rows


def _expected_rows(own: dict[int, str]) -> list[str]:
    """Every exit status with its meaning: the command's own where it states one, else the general one."""
    return [f"{int(code)}{' ' * (5 - len(str(int(code))))}{own.get(int(code), text)}"
            for code, text in EXIT_MEANINGS.items()]


@pytest.mark.parametrize("name", [None, *sorted(COMMANDS)])
def test_every_help_states_every_exit_code(run_cli, name):
    from ckpt_cli.main import cli

    result = run_cli(*([name] if name else []), "--help")
    assert result.exit_code == 0
    own = getattr(cli.get_command(None, name), "exit_status", {}) if name else {}  # type: ignore[arg-type]
    assert [re.sub(r"\s+", " ", r) for r in _status_block(result.stdout)] == \
        [re.sub(r"\s+", " ", r) for r in _expected_rows(own)]
    assert set(own) <= {0, 1, 3}  # a command words what success, its problems, its inputs mean to it
    assert list(EXIT_MEANINGS) == list(ExitCode)


def test_documented_exit_code_table_is_the_same():
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", documentation.section("Exit codes"), re.M)
    assert [(int(c), m) for c, m in rows] == [(int(c), m) for c, m in EXIT_MEANINGS.items()]


# -- the library's messages ------------------------------------------------------------------------
def _raises(path: Path) -> list[ast.Raise]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Raise) and n.exc is not None]


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


LIBRARY = sorted(p for p in (ROOT / "formats").rglob("*.py") if "proto" not in p.parts)


def test_library_raises_typed_errors_only():
    bare = [f"{p.relative_to(ROOT)}:{r.lineno}" for p in LIBRARY for r in _raises(p)
            if isinstance(r.exc, ast.Call) and getattr(r.exc.func, "id", None) == "CheckpointError"]
    assert bare == []


def test_library_error_messages_name_no_command_line_flags():
    flag = re.compile(r"(?<![\w-])--[a-z]")
    found = [f"{p.relative_to(ROOT)}:{r.lineno}: {s!r}" for p in LIBRARY for r in _raises(p)
             for s in _strings(r.exc) if flag.search(s)]
    assert found == []
