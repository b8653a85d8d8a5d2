"""``ckpt diff``: what differs between two checkpoints - keys, shapes, dtypes, values."""
from __future__ import annotations

from formats.core.errors import ExitCode

from ..kept import keep_until_exit
from ..options import executor_option, jobs_option, json_option, rule_options
from ..spec import CHECKPOINT, FLOAT, Arg, Command, Opt

TYPE_CHECKING = False  # typing itself stays off the start-up path
if TYPE_CHECKING:
    from ..environment import Environment
    from ..spec import Params


def run(env: Environment, p: Params) -> int:
    """``ckpt diff A B``: the exit status (0 equal, 1 different)."""
    return run_diff(p.a, p.b, match=p.match, patterns=p.patterns, maps=p.maps, regexes=p.regexes,
                    rules_file=p.rules_file, strip_prefix_a=p.strip_prefix_a, strip_prefix_b=p.strip_prefix_b,
                    atol=p.atol, rtol=p.rtol, equal_nan=p.equal_nan, keys_only=p.keys_only, quiet=p.quiet,
                    as_json=p.as_json, jobs=p.jobs, names=p.names, env=env, plot=p.plot, ascii=p.ascii,
                    executor=p.executor)


SPEC = Command(
    "diff", runner=run,
    short_help="Compare two checkpoints: what changed, and by how much.",
    exit_status={0: "equal", 1: "different (each difference listed), or a --filter matching nothing"},
    help="""Compare two checkpoints: keys only in one, shape/dtype changes, value changes.

    A and B are checkpoints of any supported format, or directories (their latest
    checkpoint). Values are equal when their bytes are identical, unless --atol,
    --rtol or --equal-nan ask for numpy allclose semantics. Rename options rewrite
    A's names so that they match B's (with --match path: A's object paths). --plot draws a bar per changed tensor of its
    relative change ||a-b||/||a||, biggest first, fitting the terminal.

    \b
    Examples:
      ckpt diff run_a/model.ckpt-1 run_a/model.ckpt-200   # exit 1: they differ
      ckpt diff --quiet run_a/tf_ckpts run_b/tf_ckpts && echo same
      ckpt diff --match name tf1/model.ckpt-200 converted/ckpt-1 --atol 1e-6
      ckpt diff --match path guide/tf_ckpts/ckpt-8 guide/tf_ckpts/ckpt-10   # exit 1: Keras 3, shared names
      ckpt diff old new --map dnn/hiddenlayer_0=dense --json
      ckpt diff --names run_a/tf_ckpts/ckpt-4 run_a/tf_ckpts/ckpt-5   # exit 1: with names, roles
      ckpt diff --match converted tagger_weights.h5 keras3/converted.weights.h5   # a conversion's check
      ckpt diff --plot run_a/model.ckpt-1 run_a/model.ckpt-200   # exit 1: which tensors moved
    """,
    arguments=(Arg("a", type=CHECKPOINT), Arg("b", type=CHECKPOINT)),
    options=(
        Opt("--match", type=("key", "name", "path", "converted"), default="key", show_default=True,
            help="Pair tensors by checkpoint key, by TF1-style variable name (bundle vs HDF5, "
                 "name-based vs object-based), by object path (net/l1/_kernel: both object-based, as "
                 "tf.train.Checkpoint.restore binds them; where Keras 3 layers share full names), or as "
                 "converting A onto B's layout pairs them (B: the output of `ckpt convert A --template T`; "
                 "give the conversion's rename rules too)."),
        Opt("--filter", "-f", name="patterns", multiple=True, metavar="GLOB",
            help="Only tensors whose key (with --match name: name; with --match path: object path), after the "
                 "rename rules, is GLOB or matches it (repeatable)."),
        *rule_options("A's"),
        Opt("--strip-prefix-a", metavar="PREFIX", complete=("keys", "a"), help="Remove this '/'-prefix from A's names first."),
        Opt("--strip-prefix-b", metavar="PREFIX", complete=("keys", "b"), help="Remove this '/'-prefix from B's names first."),
        Opt("--atol", type=FLOAT, help="Absolute tolerance (numpy allclose: |a-b| <= atol + rtol*|b|)."),
        Opt("--rtol", type=FLOAT, help="Relative tolerance (an unset tolerance is 0 once either is given)."),
        Opt("--equal-nan", flag=True, help="Count NaN as equal to NaN (tolerance comparison)."),
        Opt("--keys-only", flag=True, help="Compare keys, shapes and dtypes only; read no values."),
        Opt("--names", flag=True, help="Add each tensor's TF1-style name and role (also to --json), as ls does."),
        Opt("--plot", flag=True, help="Draw a bar per changed tensor of its relative change instead of the table."),
        Opt("--ascii", flag=True, help="Draw --plot in ASCII characters instead of Unicode blocks."),
        Opt("-q", "--quiet", flag=True, help="Print nothing; the exit status says it all (reading stops at the first "
                                             "difference)."),
        json_option(),
        jobs_option(),
        executor_option(),
    ),
)


def run_diff(a: str, b: str, *, match: str = "key", patterns: tuple[str, ...] = (), maps: tuple[str, ...] = (),
             regexes: tuple[str, ...] = (), rules_file: str | None = None, strip_prefix_a: str | None = None,
             strip_prefix_b: str | None = None, atol: float | None = None, rtol: float | None = None,
             equal_nan: bool = False, keys_only: bool = False, quiet: bool = False, as_json: bool = False,
             jobs: int | None = 0, names: bool = False, env: Environment | None = None, plot: bool = False,
             ascii: bool = False, executor: str | None = None) -> int:
    """Compare ``a`` with ``b`` (pairs on ``jobs`` threads; 0 or None: every core), print what differs unless
    ``quiet`` (with ``names``, each key's name and role beside it; with ``plot``, bars of the relative changes
    instead of the table, in ASCII with ``ascii``), and return the exit status (0 equal, 1 different). With
    ``quiet``, or under ``ckpt -q``, nothing after the first difference is read."""
    from formats import verbs
    from formats.api import open_checkpoint
    from formats.ops.compare.diff import Tolerance
    from formats.ops.compare.keying import match_name_hint, match_path_hint

    from ..boundary import cli_words

    rules = None
    if maps or regexes or rules_file:
        from formats.ops.rules import build_rules

        rules = build_rules(maps, regexes, rules_file) or None
    tolerance = Tolerance.of(atol, rtol, equal_nan)
    if env is None:
        from ..environment import current

        env = current()
    first = quiet or env.quiet  # no table shown (diff -q, or ckpt -q diff): stop at the first difference
    from formats.core.gc_pause import paused_gc

    with paused_gc(), open_checkpoint(a) as ca, open_checkpoint(b) as cb:  # objects per tensor, no cycle
        from ..render.progress import progress_for

        with progress_for(ca, "comparing", total=0 if quiet or keys_only else None, also=cb) as progress:
            result = verbs.diff(ca, cb, match=match, rules=rules, strip_prefix_a=strip_prefix_a,
                                strip_prefix_b=strip_prefix_b, atol=atol, rtol=rtol, equal_nan=equal_nan,
                                keys_only=keys_only, progress=progress, patterns=patterns, jobs=jobs,
                                executor=executor, first_difference=first)
        keep_until_exit(result)  # (it lives until the end)
        hint = match_name_hint(ca, cb) if match == "key" and result.complete and not (result.same or result.changed) \
            else None
        if match == "name":
            hint = match_path_hint(ca, cb)
        named = _names(result, ca, cb) if names and not quiet else None
    if not quiet:
        if hint:
            env.hint(cli_words(hint))
        for note in result.notes + [f"rule {r} matched nothing" for r in result.unused_rules]:
            env.warn(note)
        if as_json:
            from ..render.common import print_json

            doc = result.to_json()
            if named is not None:
                doc["names"] = {side: {k: {"name": n, "role": r} for k, (n, r) in sorted(found.items())}
                                for side, found in zip("ab", named)}
            print_json(doc)
        elif plot:
            from ..render.diff import render_diff_plot
            from ..render.plot import plot_width, wants_ascii

            render_diff_plot(result, tolerance, keys_only, wants_ascii(ascii), plot_width() or 80)
        else:
            from ..render.diff import render_diff

            render_diff(result, tolerance, keys_only, named)
    return int(ExitCode.OK if result.equal else ExitCode.PROBLEMS)


def _names(result: object, ca: object, cb: object) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """The name and role of every key the result shows, A's and B's (``ls --names``' columns)."""
    from formats.ops.inspect.summary import names_and_roles

    changed = result.changed  # type: ignore[attr-defined]
    return (names_and_roles(ca, [c.a.key for c in changed] + result.only_in_a),  # type: ignore[arg-type,attr-defined]
            names_and_roles(cb, [c.b.key for c in changed] + result.only_in_b))  # type: ignore[arg-type,attr-defined]
