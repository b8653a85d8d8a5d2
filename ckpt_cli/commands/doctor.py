"""``ckpt doctor``: would a checkpoint load into the program that wrote a template?"""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..options import json_option
from ..spec import CHECKPOINT, PATH, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from typing import Any

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt doctor CKPT --against TARGET``: the exit status (0 it would load, 1 it would not)."""
    from formats.api import open_checkpoint
    from formats.ops.compare.keying import match_path_hint
    from formats.ops.inspect.doctor import diagnose

    from ..boundary import cli_words

    written = None
    with open_checkpoint(p.ckpt_path) as ckpt, open_checkpoint(p.target) as tmpl:
        report = diagnose(ckpt, tmpl, p.ignore_optimizer, match=p.match)
        hint = match_path_hint(ckpt, tmpl) if p.match == "name" else None
        if p.rules_out:
            written = _write_rules(p.rules_out, report.rules, p.force, [ckpt, tmpl, p.ckpt_path, p.target])
    if hint:
        env.hint(cli_words(hint))
    if p.as_json:
        from ..render.common import print_json

        print_json(report.to_json() | ({"written": written.to_json()} if written else {}))
    else:
        from ..render.doctor import render_doctor

        render_doctor(report, written)
    return int(ExitCode.OK if report.would_load else ExitCode.PROBLEMS)


SPEC = Command(
    "doctor", runner=run,
    short_help="Will CKPT load where TARGET's variables are expected?",
    exit_status={0: "it would load", 1: "it would not (each reason listed)"},
    help="""Check whether CKPT would load where TARGET's variables are expected.

    Variables are matched as a restore binds them: by object path when both are
    object-based (tf.train.Checkpoint), else by TF1-style name; --match path or
    --match name chooses (by name: as a name-based restore reads an object-based
    checkpoint). Lists missing, unexpected and
    shape-mismatched variables, suggests renames scope by scope (a scope holding
    the same variables, weights->kernel, biases->bias, the only variable of a
    shape, a similar name; slots follow their variables) and can write them as a
    rules file for rename, convert or diff --rules.

    \b
    Examples:
      ckpt doctor old/model.ckpt-200 --against new/model.ckpt-1     # exit 1: it would not load
      ckpt doctor old/model.ckpt-200 --against new/model.ckpt-1 --write-rules fix.json  # exit 1
      ckpt rename old/model.ckpt-200 -o fixed/model.ckpt-200 --rules fix.json
      ckpt doctor fixed/model.ckpt-200 --against new/model.ckpt-1   # exit 0: now it would
      ckpt doctor guide/tf_ckpts/ckpt-10 --against guide/tf_ckpts/ckpt-8 --match path
    """,
    arguments=(Arg("ckpt_path", metavar="CKPT", type=CHECKPOINT),),
    options=(
        Opt("--against", name="target", required=True, type=CHECKPOINT, metavar="TARGET",
            help="A checkpoint or Keras weights file written by the program CKPT should load into."),
        Opt("--match", type=("auto", "path", "name"), default="auto", show_default=True,
            help="Pair variables by object path (net/l1/_kernel, as tf.train.Checkpoint.restore binds; both "
                 "object-based) or by TF1-style name (as a name-based restore reads); auto: by object path "
                 "when both are object-based, else by name."),
        Opt("--ignore-optimizer", flag=True, help="Leave optimizer slots and state out of the comparison."),
        Opt("--write-rules", name="rules_out", type=PATH, metavar="FILE",
            help="Write the suggested renames as a JSON rules file (for convert/rename/diff --rules)."),
        Opt("--force", flag=True, help="Replace an existing rules file."),
        json_option("Machine-readable report on stdout."),
    ),
)


def _write_rules(path: str, rules: list[Any], force: bool, inputs: list[Any]) -> Any:
    """The rules file, written as every output is: never over an input, atomically, read back."""
    from formats.io.writing import write_text
    from formats.ops.rules import dump_rules

    return write_text(path, dump_rules(rules), format="rules", inputs=inputs, force=force, what="rules file")
