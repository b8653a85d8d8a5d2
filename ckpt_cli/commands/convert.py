"""``ckpt convert``: a checkpoint in another format - name-based <-> object-based, Keras, npz, safetensors."""
from __future__ import annotations

from formats.core.model import FormatName

from ..kept import keep_until_exit
from ..options import (READ_BACK_JOBS, executor_option, jobs_option, link_option, output_option, rule_options,
                       sharded_targets, target_choices, write_options)
from ..spec import (CHECKPOINT, FLOAT, PATH, SIZE, WRITER_EXIT_STATUS, Arg, Command, CommandLineError, Opt,
                    ParameterError)

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:

    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt convert SRC -o OUT --to T``: the exit status (0 written or planned, 1 problems found)."""
    hparams = p.hparams
    if p.learning_rate is not None:
        hparams = {**hparams, "learning_rate": p.learning_rate}
    if p.hf_task is not None and p.to not in (FormatName.HF, FormatName.SAFETENSORS):
        raise CommandLineError(f"--hf-task applies to --to {FormatName.HF} (or {FormatName.SAFETENSORS} with a model map) only")
    if p.max_shard_size is not None and p.to not in sharded_targets():
        raise CommandLineError(f"--max-shard-size applies to --to {' or '.join(sharded_targets())} only")
    if p.max_shard_size is not None and p.to != FormatName.HF and not p.out.endswith(".json"):
        raise CommandLineError(f"--max-shard-size writes sharded weights: name OUT *.weights.json, not {p.out!r}")
    return run_convert(p.src, p.out, p.to, template=p.template, maps=p.maps, regexes=p.regexes,
                       rules_file=p.rules_file, allow_missing=p.allow_missing, drop_optimizer=p.drop_optimizer,
                       slot_names=p.slot_names, hparams=hparams, max_shard_size=p.max_shard_size, dry_run=p.dry_run,
                       as_json=p.as_json, force=p.force, no_verify=p.no_verify, update_state=p.update_state,
                       link=p.link, jobs=p.jobs, verbose=p.verbose, family=p.family, model_config=p.model_config,
                       executor=p.executor, hf_task=p.hf_task, skip_unreadable=p.skip_unreadable)


def parse_hparams(values: tuple[str, ...]) -> dict[str, float]:
    """``("beta_1=0.9",)`` -> ``{"beta_1": 0.9}``; a :class:`ParameterError` for anything else."""
    out: dict[str, float] = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name.isidentifier() or number != number or number in (float("inf"), float("-inf")):
            raise ParameterError(f"{text!r} is not NAME=NUMBER (e.g. beta_1=0.9)")
        out[name] = number
    return out


SPEC = Command(
    "convert", runner=run,
    short_help="Convert between checkpoint formats (TF1 <-> TF2, Keras, npz...).",
    exit_status=WRITER_EXIT_STATUS,
    help="""Convert SRC to another format: --to names one of eight targets.

    \b
      tf-object    TensorFlow 2 object-based bundle (tf.train.Checkpoint)
      tf-name      TensorFlow 1 name-based bundle (tf.compat.v1.train.Saver)
      keras2-h5    Keras 2 save_weights .h5
      keras3-h5    Keras 3 .weights.h5, or sharded *.weights.json: needs
                   --template unless SRC is itself Keras 3 weights
      keras        Keras 3 .keras model from a Keras 2 model.save .h5: its
                   config translated, its weights placed (no template)
      npz          numpy .npz of every numeric tensor, with a provenance record
      safetensors  .safetensors of every numeric tensor, with a provenance record
      hf           transformers model directory (config.json, model.safetensors)
                   from a TensorFlow BERT, ALBERT, ELECTRA, GPT-2 or T5 checkpoint

    --template T is a file the target program wrote for the same model (e.g.
    with model.save_weights): the output takes T's layout and keys, and SRC's
    values (tf-object, keras2-h5, keras3-h5; npz and safetensors take none).
    Each template variable takes SRC's tensor whose name (after
    --map/--regex/--rules) equals its full_name.

    Optimizer state: tf-object and tf-name carry it (slots follow their
    variables; --slot-names picks tf-name's TF2 or TF1 names); keras3-h5 fills
    the template's optimizer variables, when it has them; keras2-h5 holds model
    weights only; npz and safetensors keep every tensor under its key. It is
    converted by meaning where TF1, tf-keras and Keras 3 keep different numbers
    (Momentum's accumulator x -learning_rate, iterations from global_step or
    beta1_power), and the plan shows each transform.

    Without a template, --to tf-object makes one object per name segment of a
    TF1 name-based checkpoint, each variable's full_name set to its original
    name; --to tf-name gives every variable its full_name as key. An npz or
    safetensors export of an object-based checkpoint carries its object graph,
    and --to tf-object of it writes the source's keys, values and graph again. Every problem
    (missing variables, shape or dtype mismatches, optimizer state with no
    equivalent or a missing hyperparameter, unused tensors, rules that matched
    nothing) is reported before anything is written.

    --to hf maps a published model family's TensorFlow checkpoint (--family
    bert, albert, electra, gpt2, t5; detected from the names when not given;
    BERT's TF1 and TF2 Model Garden layouts) onto the parameters of its
    transformers class (BertForPreTraining, AlbertForPreTraining,
    ElectraForPreTraining, GPT2LMHeadModel, T5ForConditionalGeneration):
    kernels transposed, per-layer names renumbered, tied embeddings left to
    transformers. config.json is translated from the original configuration
    beside the checkpoint (bert_config.json, albert_config.json, ELECTRA's
    hparams.json, GPT-2's hparams.json, T5's operative_config.gin) or --config
    FILE;
    --hparam NAME=VALUE adds or overrides a field. Every tensor is mapped, left
    out by a named rule (optimizer slots, global_step, heads the class lacks)
    or an error; every parameter of the class is filled or an error. --rules
    FILE takes a model map of your own (the format of the shipped ones:
    formats/ops/convert/hf/families/*.toml), for --to hf and --to safetensors.
    --family electra_generator takes ELECTRA's generator instead (as
    ElectraForMaskedLM, with its generator_config.json). --to tf-name --family
    F goes back, from a transformers directory. --hf-task names a fine-tuning
    task whose hyperparameters the checkpoint does not hold (TAPAS: wtq,
    wikisql-supervised, sqa, tabfact, as transformers' converter's --task);
    a TAPAS with an aggregation head is refused without one.

    --executor dask://HOST:PORT writes a tf-object or tf-name output's data
    files on a Dask cluster's workers, each straight to the destination (a
    bucket), the index last; SRC, OUT and a template must be reachable from
    the workers.

    \b
    Examples:
      ckpt convert tests/data/hf/bert/bert_model.ckpt -o bert-hf --to hf --dry-run
      ckpt convert model.ckpt-200 -o tf2/ckpt-1 --to tf-object
      ckpt convert model.ckpt-200 -o tf2/ckpt-1 --to tf-object --template keras/ckpt --dry-run \\
          --map dnn/hiddenlayer_0=dense --map dnn/hiddenlayer_1=dense_1 --map dnn/logits=dense_2
      ckpt convert tf_ckpts/ckpt-5 -o tf1/model.ckpt --to tf-name --slot-names tf1 \\
          --hparam beta_1=0.9 --hparam beta_2=0.999
      ckpt convert model.weights.h5 -o sharded/model.weights.json --to keras3-h5 --max-shard-size 2GB
      ckpt convert full.h5 -o model.keras --to keras
      ckpt convert tapas_wtq_base/model.ckpt -o tapas-wtq --to hf --hf-task wtq
    """,
    arguments=(Arg("src", type=CHECKPOINT),),
    options=(
        output_option(),
        Opt("--to", name="to", required=True, type=target_choices, help="Output format (each is described above)."),
        Opt("--template", type=CHECKPOINT, metavar="T",
            help="A checkpoint or weights file the target program wrote for the same model: the output "
                 "takes its layout and keys, SRC's values (--to keras3-h5 needs one unless SRC is Keras 3 "
                 "weights)."),
        *rule_options("SRC's"),
        Opt("--family", type=("albert", "bert", "electra", "electra_generator", "gemma", "gpt2", "llama", "t5",
                              "mobilebert", "bigbird", "convbert", "rembert", "xlnet", "gpt_neo", "pegasus",
                              "bigbird_pegasus", "imagegpt", "roformer", "canine", "tapas", "funnel", "openai_gpt",
                              "bert_generation"),
            metavar="F",
            help="hf, or tf-name from a transformers directory: the model family (albert, bert, electra, gemma, "
                 "gpt2, llama, t5, mobilebert, bigbird, convbert, rembert, xlnet, gpt_neo, pegasus, bigbird_pegasus, "
                 "imagegpt, roformer, canine, tapas, funnel, openai_gpt, bert_generation; "
                 "--to hf detects it from the variable names; electra_generator: ELECTRA's generator as "
                 "ElectraForMaskedLM)."),
        Opt("--config", name="model_config", type=PATH, metavar="FILE",
            help="hf: the model's original configuration (bert_config.json, hparams.json, operative_config.gin...) "
                 "when it is not beside the checkpoint."),
        Opt("--hf-task", name="hf_task", metavar="TASK",
            help="hf: the fine-tuning task whose hyperparameters the checkpoint does not hold, as the original "
                 "converter's --task (TAPAS: wtq, wikisql-supervised, sqa, tabfact); needed by a TAPAS with an "
                 "aggregation head."),
        Opt("--allow-missing", flag=True, help="Template variables with no source keep the template's value."),
        Opt("--drop-optimizer", flag=True,
            help="keras3-h5: leave optimizer state out (both the source's and the template's variables)."),
        Opt("--slot-names", type=("tf2", "tf1"), default="tf2", show_default=True,
            help="tf-name: slot names as in TF2 (<var>/m) or TF1 (<var>/Adam, <var>/Adam_1, beta1_power, "
                 "global_step: what a TF1 optimizer restores)."),
        Opt("--learning-rate", type=FLOAT, metavar="LR",
            help="The learning rate optimizer state was trained with, when neither checkpoint stores it "
                 "(Momentum slots are scaled by it between TF1 and Keras)."),
        Opt("--hparam", name="hparams", multiple=True, metavar="NAME=VALUE", convert=parse_hparams,
            help="An optimizer hyperparameter neither checkpoint stores (beta_1=0.9, beta_2=0.999; "
                 "iterations=N for the step count); with --to hf a model configuration field "
                 "(num_hidden_layers=12); repeatable."),
        Opt("--max-shard-size", type=SIZE, metavar="SIZE",
            help="keras3-h5: write sharded weights (OUT a *.weights.json) with at most SIZE bytes of tensors "
                 "per shard (500MB, 2GB, ...), as Keras' save_weights(max_shard_size=...) does; hf: shards "
                 "model-0000N-of-0000M.safetensors above SIZE (default 5GB, as save_pretrained)."),
        *write_options(),
        link_option(),
        jobs_option(READ_BACK_JOBS),
        executor_option(),
    ),
)


def run_convert(src: str, out: str, to: str, *, template: str | None = None, maps: tuple[str, ...] = (),
                regexes: tuple[str, ...] = (), rules_file: str | None = None, allow_missing: bool = False,
                drop_optimizer: bool = False, slot_names: str = "tf2", hparams: dict[str, float] | None = None,
                max_shard_size: int | None = None, dry_run: bool = False, as_json: bool = False, force: bool = False,
                no_verify: bool = False, update_state: bool = False, link: bool = False, jobs: int | None = None,
                verbose: bool = False, family: str | None = None, model_config: str | None = None,
                executor: str | None = None, hf_task: str | None = None, skip_unreadable: bool = False) -> int:
    """Convert ``src`` to the ``to`` format at ``out`` (:func:`formats.verbs.convert`); print the plan's problems
    and what was written; return the exit status (0 written or planned, 1 problems found)."""
    from formats import verbs
    from formats.api import open_checkpoint
    from formats.core.errors import UsageError
    from formats.core.model import FormatName
    from formats.ops.rules import build_rules

    from ..render.progress import progress_for

    if drop_optimizer and to != FormatName.KERAS3_H5:
        raise UsageError("", f"--drop-optimizer applies to --to {FormatName.KERAS3_H5} only (ckpt edit "
                         "--drop-optimizer leaves optimizer state out of other formats)")
    model_map = None
    if rules_file and to in (FormatName.HF, FormatName.SAFETENSORS, FormatName.TF_NAME):
        from formats.ops.convert.hf.family import is_model_map

        if is_model_map(rules_file):
            model_map, rules_file = rules_file, None
    rules = build_rules(maps, regexes, rules_file)
    with open_checkpoint(src) as source, progress_for(source, "writing", total=0 if dry_run else None) as progress:
        result = verbs.convert(source, out, to, template=template, rules=rules, allow_missing=allow_missing,
                               drop_optimizer=drop_optimizer, slot_names=slot_names, hparams=hparams,
                               max_shard_size=max_shard_size, dry_run=dry_run, force=force, verify=not no_verify,
                               update_state=update_state, link=link, jobs=jobs, progress=progress, family=family,
                               model_config=model_config, model_map=model_map, executor=executor, hf_task=hf_task,
                               skip_unreadable=skip_unreadable)
        keep_until_exit(result)  # (it lives until the end)
    from ..render.conversion import render_result

    return render_result(result, as_json, verbose=verbose)
