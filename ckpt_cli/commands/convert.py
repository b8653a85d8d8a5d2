"""``ckpt convert``: name-based <-> object-based checkpoints, generically or onto a template."""
from __future__ import annotations

import click

from formats.ops.convert.targets import TARGETS

from ..completion import CHECKPOINT
from ..help import command
from ..options import READ_BACK_JOBS, ByteSize, jobs_option, link_option, rule_options, write_options


@command(short_help="Convert between checkpoint formats (TF1 <-> TF2, Keras, npz...).")
@click.argument("src", type=CHECKPOINT)
@click.option("-o", "--output", "out", required=True, type=click.Path(), metavar="OUT",
              help="Output checkpoint prefix (or file, for file formats).")
@click.option("--to", "to", required=True, type=click.Choice(sorted(TARGETS)), help="Output format.")
@click.option("--template", type=CHECKPOINT, metavar="T",
              help="Object-based checkpoint written by the new program: its graph and keys, SRC's values.")
@rule_options("SRC's")
@click.option("--allow-missing", is_flag=True, help="Template variables with no source keep the template's value.")
@click.option("--slot-names", type=click.Choice(["tf2", "tf1"]), default="tf2", show_default=True,
              help="tf-name: slot names as in TF2 (<var>/m) or TF1 (<var>/Adam, <var>/Adam_1, beta1_power, "
                   "global_step: what a TF1 optimizer restores).")
@click.option("--learning-rate", type=float, metavar="LR",
              help="The learning rate optimizer state was trained with, when neither checkpoint stores it "
                   "(Momentum slots are scaled by it between TF1 and Keras).")
@click.option("--hparam", "hparams", multiple=True, metavar="NAME=VALUE", callback=lambda c, p, v: _hparams(v),
              help="An optimizer hyperparameter neither checkpoint stores (beta_1=0.9, beta_2=0.999; "
                   "iterations=N for the step count); repeatable.")
@click.option("--max-shard-size", type=ByteSize(), metavar="SIZE",
              help="keras3-h5: write sharded weights (OUT a *.weights.json) with at most SIZE bytes of tensors "
                   "per shard (500MB, 2GB, ...), as Keras' save_weights(max_shard_size=...) does.")
@write_options()
@link_option()
@jobs_option(READ_BACK_JOBS)
@click.pass_context
def convert(ctx: click.Context, src: str, out: str, to: str, template: str | None, maps: tuple[str, ...],
            regexes: tuple[str, ...], rules_file: str | None, allow_missing: bool, slot_names: str,
            learning_rate: float | None, hparams: dict[str, float], max_shard_size: int | None,
            dry_run: bool, as_json: bool, force: bool, no_verify: bool, update_state: bool, link: bool,
            jobs: int) -> None:
    """Convert SRC to another checkpoint format (name-based <-> object-based).

    --to tf-object turns a TF1 name-based checkpoint into an object-based one: one
    object per name segment, each variable's full_name set to its original name,
    optimizer slots attached to an optimizer node. With --template T (e.g. written
    once by model.save_weights), the output has T's object graph and keys, and each
    variable takes SRC's tensor whose name (after --map/--regex/--rules) equals its
    full_name; optimizer slots follow their variables, by meaning: TF1, tf-keras
    and Keras 3 optimizer state is converted where the frameworks keep different
    numbers (Momentum's accumulator x -learning_rate, iterations from global_step
    or beta1_power), and the plan shows each transform. --to tf-name gives every
    variable its full_name as key. Every problem (missing variables, shape or dtype
    mismatches, optimizer state with no equivalent or a missing hyperparameter,
    unused tensors, rules that matched nothing) is reported before anything is
    written.

    Exit status: 0 written (or planned, with --dry-run), 1 problems found (nothing
    written), 3 an input cannot be read, 4 the output was not written (all codes below).

    \b
    Examples:
      ckpt convert model.ckpt-200 -o tf2/ckpt-1 --to tf-object
      ckpt convert model.ckpt-200 -o tf2/ckpt-1 --to tf-object --template keras/ckpt --dry-run \\
          --map dnn/hiddenlayer_0=dense --map dnn/hiddenlayer_1=dense_1 --map dnn/logits=dense_2
      ckpt convert tf_ckpts/ckpt-5 -o tf1/model.ckpt --to tf-name --slot-names tf1 \\
          --hparam beta_1=0.9 --hparam beta_2=0.999
      ckpt convert model.weights.h5 -o sharded/model.weights.json --to keras3-h5 --max-shard-size 2GB
    """
    from .converting import run_convert

    if learning_rate is not None:
        hparams = {**hparams, "learning_rate": learning_rate}
    if max_shard_size is not None and to != "keras3-h5":
        raise click.UsageError("--max-shard-size applies to --to keras3-h5 only")
    if max_shard_size is not None and not out.endswith(".json"):
        raise click.UsageError(f"--max-shard-size writes sharded weights: name OUT *.weights.json, not {out!r}")
    ctx.exit(run_convert(src, out, to, template=template, maps=maps, regexes=regexes, rules_file=rules_file,
                         allow_missing=allow_missing, slot_names=slot_names, hparams=hparams,
                         max_shard_size=max_shard_size, dry_run=dry_run, as_json=as_json, force=force,
                         no_verify=no_verify, update_state=update_state, link=link, jobs=jobs))


def _hparams(values: tuple[str, ...]) -> dict[str, float]:
    """``("beta_1=0.9",)`` -> ``{"beta_1": 0.9}``; a usage error for anything else."""
    out: dict[str, float] = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name.isidentifier() or number != number or number in (float("inf"), float("-inf")):
            raise click.BadParameter(f"{text!r} is not NAME=NUMBER (e.g. beta_1=0.9)", param_hint="--hparam")
        out[name] = number
    return out

