"""The `recall-kit` command line: parses, looks names up, calls the library, prints."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from recall_kit.errors import OptionError, RecallKitError

_CLICK_TYPE_NAMES = {int: "INTEGER", float: "FLOAT", str: "TEXT"}


def _click_metavar(param: Any) -> str:
    """click's placeholder for a parameter typer would show as <path>, <int>, <list[str]>."""
    import typing

    descriptor = param.type_descriptor
    if descriptor.is_choice:
        return "[" + "|".join(str(choice) for choice in descriptor.choices or ()) + "]"
    if descriptor.is_path:
        return "PATH"
    annotation = descriptor.annotation
    if descriptor.is_list and typing.get_args(annotation):
        annotation = typing.get_args(annotation)[0]
    return _CLICK_TYPE_NAMES.get(annotation, "TEXT")


class _ClickStyleArgument(typer.core.TyperArgument):
    """An argument shown as click shows it: its metavar alone (OUT, RESULTS...), with "..." when
    it takes several values and in brackets when optional; no type beside it."""

    def display_type_rich(self, ctx: Any = None) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = f"{self.metavar}{'...' if self.nargs != 1 else ''}"
        return name if self.required else f"[{name}]"


def _click_style(command: Any) -> Any:
    """Help in click's conventions, the same in every command: an argument is its metavar alone
    (OUT, RESULTS...), an option's value a placeholder (PATH, TEXT, INTEGER, NAME, LIST), and
    --report lists the registered reporters."""
    for param in getattr(command, "params", []):
        if not hasattr(param, "type_descriptor"):
            continue
        if isinstance(param, typer.core.TyperArgument):
            param.metavar = param.metavar or param.name.upper()
            param.__class__ = _ClickStyleArgument
        elif not getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = _click_metavar(param)
        if any(opt in _OLD_SPELLINGS for opt in getattr(param, "opts", ())) and not hasattr(param, "_hides_old"):
            param._hides_old = True
            param.get_help_record = _hiding_old_spellings(param, param.get_help_record)
        if param.name == "report" and param.help and not hasattr(param, "_lists_reporters"):
            param._lists_reporters = True
            param.get_help_record = _listing_reporters(param, param.get_help_record)
    return command


#: Spellings kept working for scripts, but not shown in --help: one spelling per idea is documented
#: (--output for a file a command writes, --out-dir for a folder of files).
_OLD_SPELLINGS = frozenset({"--out"})


def _hiding_old_spellings(param: Any, get_help_record: Any) -> Any:
    """`get_help_record` that leaves out an option's old spellings (they still parse)."""

    def without_old(ctx: Any) -> Any:
        opts = param.opts
        param.opts = [opt for opt in opts if opt not in _OLD_SPELLINGS] or opts
        try:
            return get_help_record(ctx)
        finally:
            param.opts = opts

    return without_old


def _listing_reporters(param: Any, get_help_record: Any) -> Any:
    """`get_help_record` that first appends the registered reporters to --report's help: done
    when that help is shown, not when `recall-kit --help` lists the commands (it would load the
    reporters for nothing)."""

    def with_reporters(ctx: Any) -> Any:
        if "Available:" not in param.help:
            from recall_kit import registry

            param.help = f"{param.help} Available: {', '.join(registry.reporters.names())}."
        return get_help_record(ctx)

    return with_reporters


class _ClickStyleGroup(typer.core.TyperGroup):
    """A group whose commands' help follows click's conventions (see `_click_style`)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return _click_style(super().get_command(ctx, cmd_name))


class _Group(_ClickStyleGroup):
    """Turns every failure into one line on stderr and an exit status a script can trust.

    0: done, the verdict is good; 1: done, the verdict is bad (a regression, lint problems);
    2: no verdict (bad input, a failing plugin, an unwritable output, or an unexpected error);
    130/143/129: interrupted by Ctrl-C / SIGTERM / SIGHUP. `--debug` shows the traceback instead (still 2).
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # `--debug` is accepted anywhere before a `--`: `recall-kit eval ... --debug` as well as
        # `recall-kit --debug eval ...`.
        end = args.index("--") if "--" in args else len(args)
        if "--debug" in args[1:end]:
            args = ["--debug", *(arg for i, arg in enumerate(args) if not (i < end and arg == "--debug"))]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        from recall_kit import errors

        errors.DEBUG = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except BrokenPipeError:
            raise  # `recall-kit ... | head`: click exits quietly on a closed pipe, as Unix tools do
        except RecallKitError as error:
            _traceback_if_debug(ctx)
            typer.echo(f"Error: {_one_line(error)}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt as error:
            signum = error.signum if isinstance(error, Terminated) else signal.SIGINT
            typer.echo(_SIGNAL_WORDS.get(signum, "Interrupted")
                       + ": outputs not yet finished were not written (no partial files are left).", err=True)
            raise typer.Exit(128 + signum) from None
        except OSError as error:
            _traceback_if_debug(ctx)
            typer.echo(f"Error: {_describe_os_error(error)}", err=True)
            raise typer.Exit(2) from None
        except SystemExit:  # a plugin command's own exit status
            raise
        except Exception as error:  # RecursionError, bugs
            _traceback_if_debug(ctx)
            typer.echo(
                f"Error: unexpected {type(error).__name__}: {_one_line(error)} "
                "(rerun with --debug for the traceback)",
                err=True,
            )
            raise typer.Exit(2) from None


def _traceback_if_debug(ctx: Any) -> None:
    """Under --debug the error goes on up with its traceback (`main` prints it and exits 2)."""
    if ctx.params.get("debug"):
        raise


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the process is so that every temporary file is removed on the way out."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


_SIGNAL_WORDS: dict[int, str] = {signal.SIGINT: "Interrupted", signal.SIGTERM: "Terminated",
                 **({signal.SIGHUP: "Hung up"} if hasattr(signal, "SIGHUP") else {})}


class _ClosedStdout:
    """Stands for a closed stdout (Python sets sys.stdout to None): any text written is an error,
    so a report that could not be printed never exits 0."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str | bytes) -> int:
        if text:
            import errno

            raise OSError(errno.EBADF, "standard output is closed; the report could not be printed")
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 500 else text[:497] + "..."


def _describe_os_error(error: OSError) -> str:
    reason = error.strerror or type(error).__name__
    if error.filename is not None:
        return f"{error.filename}: {reason}."
    return f"{reason} ({type(error).__name__})."


app = typer.Typer(
    cls=_Group,
    help="Decide, with evidence, whether a change to your retrieval is real.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
dataset_app = typer.Typer(cls=_ClickStyleGroup, help="Check, describe and convert datasets.",
                          no_args_is_help=True, rich_markup_mode=None)
app.add_typer(dataset_app, name="dataset")


def _print_version(value: bool) -> None:
    if value:
        from recall_kit import __version__

        typer.echo(f"recall-kit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors (before or after the command).")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Decide, with evidence, whether a change to your retrieval is real."""


def _check_reporter(value: str | None) -> str | None:
    """--report names a registered reporter; checked before any work is done."""
    from recall_kit import registry

    if value is not None:
        registry.reporters.get(value)  # one line listing the registered reporters, exit 2
    return value


def _check_latency_sample(value: int) -> int:
    if value < -1:
        raise OptionError(f"--latency-sample {value} is not a query count: give N >= 0, or -1 for all queries.")
    return value


# Options that several commands share, defined once so their names, help and checks agree.
DatasetOption = Annotated[Path, typer.Option("--dataset", "-d", metavar="PATH", help="Dataset folder (corpus.jsonl, queries.jsonl, qrels.jsonl), or example:memories (shipped).")]
RetrieverOption = Annotated[str | None, typer.Option("--retriever", "-r", metavar="SPEC", help="Legs joined by '+': fts5, fts5+dense, pkg.module:Class. Required, unless --config gives [system] retriever.")]
FusionOption = Annotated[list[str] | None, typer.Option("--fusion", "-f", metavar="NAME", help="Fusion step; repeat to chain (--fusion rrf --fusion exact-bonus).")]
WeightsOption = Annotated[str | None, typer.Option("--weights", "-w", metavar="LIST", help="Leg weights, comma-separated: fts5=1,dense=0.5.")]
OptionOption = Annotated[list[str] | None, typer.Option("--option", "-o", metavar="NAME.KEY=VALUE", help="An option of a leg or fusion: dense.model=PATH, rrf.k=60; repeat.")]
ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", metavar="PATH", help="TOML experiment file; flags override it.")]
KOption = Annotated[int, typer.Option("--k", "-k", metavar="INTEGER", help="Ranking depth scored; raised to the largest metric cutoff asked (recall@100 scores at 100).")]
MetricsOption = Annotated[list[str] | None, typer.Option("--metrics", "-m", metavar="LIST", help="Metrics, comma-separated: recall@10,ndcg@10,mrr; trec_eval and ir_measures names work too (ndcg_cut_10, nDCG@10).")]
RelevanceLevelOption = Annotated[int, typer.Option("--relevance-level", "-l", metavar="INTEGER", help="Grades >= this count as relevant for binary metrics (trec_eval -l).")]
JudgedOnlyOption = Annotated[bool, typer.Option("--judged-only", "-J", help="Drop unjudged ids from each ranking before scoring (trec_eval -J).")]
PrimaryOption = Annotated[list[str] | None, typer.Option("--primary", metavar="LIST", help="Decision metrics, comma-separated: Holm runs over their all-queries rows; the rest is exploratory (default: the first metric compared).")]
BootstrapOption = Annotated[int, typer.Option("--bootstrap", metavar="INTEGER", help="Bootstrap and randomisation resamples.")]
ReportOption = Annotated[str, typer.Option("--report", metavar="NAME", callback=_check_reporter, help="Output format: a reporter name.")]
OutputOption = Annotated[Path | None, typer.Option("--output", metavar="PATH", help="Write the report to this file instead of stdout.")]
LatencySampleOption = Annotated[int, typer.Option("--latency-sample", metavar="INTEGER", callback=_check_latency_sample, help="Queries timed one at a time (0: none, -1: all).")]
#: ablate and sweep write one result file per variant into a folder; `--out` is the old spelling.
OutDirOption = Annotated[Path, typer.Option("--out-dir", "--out", metavar="DIR", help="Folder for every variant's result JSON and a summary JSON (--out: the old spelling).")]
ProgressOption = Annotated[bool | None, typer.Option("--progress/--no-progress", help="Progress on stderr: a live line on a terminal, a plain line every 10 s otherwise (RECALL_KIT_PROGRESS_INTERVAL).")]
ForceRunOption = Annotated[bool, typer.Option("--force", help="Replace another run's files in --out-dir (refused without it).")]
ExecutorOption = Annotated[str, typer.Option("--executor", metavar="NAME", help="Where the leg searches and scoring run: local (this process) or ray (a Ray cluster; pip install 'recall-kit[ray]').")]
AddressOption = Annotated[str | None, typer.Option("--address", metavar="ADDRESS", help="The Ray cluster for --executor ray (ray://HOST:10001; default: RAY_ADDRESS, else one started on this machine).")]


def _split_names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    if not names:  # "-m ''" or "-m ,,": a mistake, not a request for the defaults
        from recall_kit.errors import OptionError

        raise OptionError(f"{values[0]!r} names no metric: name one (e.g. recall@10), or leave the option out for the defaults.")
    return names


def _in_batch() -> bool:
    from recall_kit.fileio import _batch

    return _batch.get() is not None


def _dataset_files(dataset: Path) -> dict[str, Path]:
    """The dataset's files as inputs no output may overwrite."""
    from recall_kit.dataset import CORPUS_FILE, QRELS_FILE, QUERIES_FILE

    return {"--dataset": dataset, **{f"--dataset's {name}": dataset / name
                                     for name in (CORPUS_FILE, QUERIES_FILE, QRELS_FILE)}}


def emit_report(report: Any, reporter_name: str, output: Path | None = None) -> None:
    """Render `report` with the named reporter; print it, or write it atomically to `output`."""
    from recall_kit import registry
    from recall_kit.fileio import write_text_atomic

    registration = registry.reporters.get(reporter_name)
    reporter = registration.call("__init__", registration.obj)
    text = registration.call("render", reporter.render, report)
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_text_atomic(output, text)
        if not _in_batch():
            typer.echo(f"Wrote {output}", err=True)


@app.command("eval")
def eval_command(
    dataset: DatasetOption,
    retriever: RetrieverOption = None,
    fusion: FusionOption = None,
    weights: WeightsOption = None,
    option: OptionOption = None,
    config: Annotated[list[Path] | None, typer.Option("--config", "-c", metavar="PATH", help="TOML experiment file; flags override it. Repeat to evaluate several systems (each result in --out-dir).")] = None,
    k: KOption = 20,
    metrics: MetricsOption = None,
    relevance_level: RelevanceLevelOption = 1,
    judged_only: JudgedOnlyOption = False,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also show each query's values (trec_eval -q).")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the result JSON here.")] = None,
    run_out: Annotated[Path | None, typer.Option("--run", help="Write a TREC run file here.")] = None,
    report: ReportOption = "table",
    output: OutputOption = None,
    latency_sample: LatencySampleOption = 200,
    seed: Annotated[int, typer.Option("--seed", help="Recorded in the manifest; used by seeded plugins.")] = 0,
    progress: ProgressOption = None,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", metavar="DIR", help="Folder for each system's result JSON (NAME.json, NAME: the config file's name); needed with several --config.")] = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
) -> None:
    """Run a retriever (or a fused system) on a dataset and score it per stratum; with several
    --config files, every system (legs they share are searched once)."""
    from recall_kit.dataset import load_dataset
    from recall_kit.errors import SpecError
    from recall_kit.fileio import atomic_batch, check_outputs
    from recall_kit.measure.runner import run_benchmark
    from recall_kit.measure.system import (
        SystemSpec,
        build_system,
        load_config,
        merge_specs,
        parse_option_assignments,
        parse_weights,
    )

    configs = list(config or [])
    check_outputs({"--json": json_out, "--run": run_out, "--output": output}, folders={"--out-dir": out_dir},
                  inputs={**_dataset_files(dataset), **{f"--config {path}": path for path in configs}})
    if len(configs) > 1 or out_dir is not None or executor != "local":
        _eval_systems(dataset, retriever, fusion, weights, option, configs, k, metrics, relevance_level, judged_only,
                      json_out, run_out, report, output, latency_sample, seed, progress, out_dir, executor, address)
        return
    base = load_config(configs[0]) if configs else None
    if retriever is None and base is None:
        raise SpecError("Missing --retriever (or --config with [system] retriever).")
    override = SystemSpec(
        retriever=retriever or "",
        fusions=list(fusion or []),
        weights=parse_weights(weights),
        options=parse_option_assignments(option or []),
    )
    spec = merge_specs(base, override)
    system = build_system(spec)
    loaded = load_dataset(dataset)
    result = run_benchmark(
        system, loaded, k=k, metrics=_split_names(metrics),
        latency_sample=None if latency_sample < 0 else latency_sample,
        show_progress=progress, seed=seed, relevance_level=relevance_level, judged_only=judged_only,
    )
    shown = result.report(per_query=per_query)
    with atomic_batch():  # the JSON, the run and the report are all written, or none is
        if json_out is not None:
            result.save(json_out)
        if run_out is not None:
            result.write_run(run_out, tag=spec.retriever)
        if output is not None:
            emit_report(shown, report, output)
    for written in (json_out, run_out, output):
        if written is not None:
            typer.echo(f"Wrote {written}", err=True)
    if output is None:
        emit_report(shown, report)


def _eval_systems(dataset: Path, retriever: str | None, fusion: list[str] | None, weights: str | None,
                  option: list[str] | None, configs: list[Path], k: int, metrics: list[str] | None,
                  relevance_level: int, judged_only: bool, json_out: Path | None, run_out: Path | None, report: str,
                  output: Path | None, latency_sample: int, seed: int, progress: bool | None, out_dir: Path | None,
                  executor: str, address: str | None) -> None:
    """`eval` of several systems (one per --config, the flags over each), or of one through an executor."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.distribute import run_systems
    from recall_kit.errors import OptionError
    from recall_kit.fileio import atomic_batch
    from recall_kit.measure.executor import make_executor
    from recall_kit.measure.system import build_system

    if len(configs) > 1 and (json_out is not None or run_out is not None):
        raise OptionError("--json and --run write one system's result; with several --config, --out-dir gets each.")
    if len(configs) > 1 and out_dir is None:
        raise OptionError("Several --config files: give --out-dir for their results (NAME.json each).")
    chosen = make_executor(executor, address)
    paths: list[Path | None] = [*configs] or [None]
    specs = [_spec_from_flags(retriever, fusion, weights, option, path) for path in paths]
    names = [path.stem for path in configs] if configs else [spec.retriever for spec in specs]
    results = run_systems([(name, build_system(spec)) for name, spec in zip(names, specs, strict=True)],
                          load_dataset(dataset), k=k, metrics=_split_names(metrics),
                          latency_sample=None if latency_sample < 0 else latency_sample, show_progress=progress,
                          seed=seed, relevance_level=relevance_level, judged_only=judged_only, executor=chosen,
                          out=out_dir)
    if out_dir is not None:
        typer.echo(f"Wrote {len(results)} result{'s' if len(results) > 1 else ''} to {out_dir}", err=True)
    with atomic_batch():
        if json_out is not None:
            results[0].save(json_out)
        if run_out is not None:
            results[0].write_run(run_out, tag=specs[0].retriever)
    for written in (json_out, run_out):
        if written is not None:
            typer.echo(f"Wrote {written}", err=True)
    emit_report(_joined_reports([result.report() for result in results]), report, output)


def _joined_reports(reports: list[Any]) -> Any:
    """One report of several systems' reports: their tables and notes in turn."""
    if len(reports) == 1:
        return reports[0]
    from recall_kit.types import Report

    return Report(title=" | ".join(r.title for r in reports), tables=[t for r in reports for t in r.tables],
                  notes=[n for r in reports for n in r.notes], data={"systems": [r.data for r in reports]},
                  charts=[c for r in reports for c in r.charts])


@app.command("score")
def score_command(
    qrels: Annotated[Path, typer.Option("--qrels", help="TREC qrels file: qid iter docid rel.")],
    run: Annotated[list[Path], typer.Option("--run", help="TREC run file: qid Q0 docid rank score tag. Repeat to compare runs with the first.")],
    metrics: MetricsOption = None,
    complete: Annotated[bool, typer.Option("--complete", "-c", help="Average over every qrels query; missing ones score 0 (trec_eval -c).")] = False,
    relevance_level: RelevanceLevelOption = 1,
    judged_only: JudgedOnlyOption = False,
    per_query: Annotated[bool, typer.Option("--per-query", "-q", help="Also show each query's values (trec_eval -q).")] = False,
    max_depth: Annotated[int | None, typer.Option("--max-depth", "-M", metavar="INTEGER", help="Score only each query's first N documents (trec_eval -M).")] = None,
    ties: Annotated[str, typer.Option("--ties", help="Score precision when ranking: float32 (trec_eval <= 9, pytrec_eval) or float64 (trec_eval 10).")] = "float32",
    primary: Annotated[list[str] | None, typer.Option("--primary", metavar="LIST", help="With several runs: decision metrics for Holm's correction (default: the first metric).")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", metavar="INTEGER", help="With several runs: bootstrap and randomisation resamples.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="With several runs: seed of the resampling.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write per-query and mean values (and the comparison) as JSON here.")] = None,
    report: ReportOption = "table",
    output: OutputOption = None,
) -> None:
    """Score TREC run files against TREC qrels, as trec_eval does; with several runs, compare each
    with the first as 'compare' does (paired deltas, intervals, Holm-corrected p-values)."""
    from recall_kit.decide.score import score_files
    from recall_kit.fileio import check_outputs, write_json_atomic

    check_outputs({"--json": json_out, "--output": output}, inputs={"--qrels": qrels, **{f"--run {r}": r for r in run}})
    outcome = score_files(qrels, run, _split_names(metrics), complete=complete, ties=ties,
                          relevance_level=relevance_level, judged_only=judged_only, per_query=per_query,
                          primary=_split_names(primary), n_resamples=bootstrap, seed=seed, depth=max_depth)
    if json_out is not None:
        write_json_atomic(json_out, outcome.data)
        typer.echo(f"Wrote {json_out}", err=True)
    emit_report(outcome, report, output)


@app.command("plugins")
def plugins_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List installed plugins, what each registers, and any that failed to load."""
    from recall_kit import registry

    listing = registry.plugins_listing()
    if as_json:
        typer.echo(json.dumps(listing, indent=2))
        return
    typer.echo(registry.plugins_table(listing["plugins"]))
    for name, message in listing["errors"].items():
        typer.echo(f"failed to load: {name}: {message}", err=True)


@app.command("list")
def list_command(
    kind: Annotated[str, typer.Argument(help="retrievers, fusions, metrics, reporters, importers, generators, or a kind a plugin adds (extractors); or options NAME.")],
    name: Annotated[str | None, typer.Argument(metavar="NAME", help="With 'options': the retriever, fusion or importer whose options to show (-o NAME.OPTION=VALUE).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the registered names of one kind, with the plugin that provides each; 'list options
    dense' shows one plugin's options with their types and defaults."""
    from recall_kit import registry
    from recall_kit.errors import UnknownNameError

    if kind == "options":
        _list_options(name, as_json)
        return
    kinds = registry.registries()
    if kind not in kinds:
        error = UnknownNameError(kind, list(kinds))
        raise RecallKitError(str(error).replace("name", "kind", 1).replace(" See 'recall-kit plugins'.", ""))
    entries = kinds[kind].all()
    headers = ["name", "plugin", "description"]
    rows: list[list[Any]] = [[name, reg.plugin, reg.description] for name, reg in entries.items()]
    if kind == "metrics":  # the trec_eval / ir_measures names each metric also answers to
        headers.insert(1, "aliases")
        for row, reg in zip(rows, entries.values()):
            row.insert(1, ", ".join(alias.replace("{k}", "k") for alias in reg.obj.aliases))
    if as_json:
        typer.echo(json.dumps([dict(zip(headers, row, strict=True)) for row in rows], indent=2))
        return
    from tabulate import tabulate

    typer.echo(tabulate(rows, headers=headers, tablefmt="simple"))


def _list_options(name: str | None, as_json: bool) -> None:
    from tabulate import tabulate

    from recall_kit import registry

    if name is None:
        raise RecallKitError("Give a name: recall-kit list options dense (see 'recall-kit list retrievers').")
    found = registry.options_of(name)
    if as_json:
        typer.echo(json.dumps([{"kind": kind, "name": name, "options": [
            {"option": o, "type": t, "default": d, "meaning": m} for o, t, d, m in rows]}
            for kind, rows in found], indent=2, default=str))
        return
    for index, (kind, rows) in enumerate(found):
        how = "after OUT: --OPTION VALUE" if kind == "importer" else f"-o {name}.OPTION=VALUE"
        typer.echo(("\n" if index else "") + f"Options of the {kind} {name!r} ({how}):")
        spell = (lambda o: f"--{o.replace('_', '-')}") if kind == "importer" else (lambda o: f"{name}.{o}")
        typer.echo(tabulate([[spell(o), t, repr(d), m] for o, t, d, m in rows],
                            headers=["option", "type", "default", "meaning"], tablefmt="simple") if rows else "none")


@dataset_app.command("validate")
def dataset_validate(
    path: Annotated[Path, typer.Argument(help="Dataset folder.")],
) -> None:
    """Check a dataset: JSON, required fields, duplicate ids, referential integrity. Exit 2 when
    any problem is found (each on one line, file:line: what), 0 when valid."""
    from recall_kit.dataset import read_dataset

    dataset, problems = read_dataset(path)
    for problem in problems:
        typer.echo(str(problem), err=True)
    if problems:
        typer.echo(f"{len(problems)} problem(s) in {path}", err=True)
        raise typer.Exit(2)
    assert dataset is not None
    typer.echo(
        f"ok: {len(dataset.corpus)} memories ({dataset.dropped_sensitive} sensitive dropped), "
        f"{len(dataset.queries)} queries in {len(dataset.strata)} strata, fingerprint {dataset.fingerprint[:12]}"
    )
    for warning in dataset.warnings:
        typer.echo(f"warning: {warning}", err=True)


@dataset_app.command("stats")
def dataset_stats_command(
    path: Annotated[Path, typer.Argument(help="Dataset folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Aggregate numbers about a dataset (never any memory or query text)."""
    from recall_kit.dataset import dataset_stats, load_dataset

    stats = dataset_stats(load_dataset(path))
    if as_json:
        typer.echo(json.dumps(stats, indent=2))
        return
    from tabulate import tabulate

    def number(value: Any) -> str:
        # Whole numbers as integers, the rest to two decimals: p95=31.2, not 31.19999999999999.
        return str(int(value)) if float(value).is_integer() else f"{value:.2f}"

    rows = [[key, value] for key, value in stats.items() if not isinstance(value, dict)]
    typer.echo(tabulate(rows, tablefmt="plain"))
    strata_rows = [[s, d["queries"], number(d["relevant_per_query"]["mean"])] for s, d in stats["strata_detail"].items()]
    typer.echo("")
    typer.echo(tabulate(strata_rows, headers=["stratum", "queries", "relevant/query"], tablefmt="simple",
                        disable_numparse=True, colalign=("left", "right", "right")))
    for key in ("memory_words", "query_words", "relevant_per_query"):
        typer.echo(f"{key}: " + ", ".join(f"{k}={number(v)}" for k, v in stats[key].items()))


class _ImportCommand(typer.core.TyperCommand):
    """`dataset import`: the help lists every importer's own options, or only FORMAT's when given
    (`recall-kit dataset import sqlite --help`), read from the registered importers."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.meta["import_args"] = list(args)
        return super().parse_args(ctx, args)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        from recall_kit import registry
        from recall_kit.options import describe_options

        super().format_epilog(ctx, formatter)
        names = registry.importers.names()
        given = [arg for arg in ctx.meta.get("import_args", []) if not arg.startswith("-")]
        if given and given[0] in names:
            names = [given[0]]
        for name in names:
            rows = []
            for field, type_text, default, meaning in describe_options(registry.importers.get(name).obj.Options):
                flag = "--" + field.replace("_", "-")
                if type_text == "bool":
                    flag = f"{flag} / --no-{field.replace('_', '-')}"
                else:
                    flag += " " + {"str": "TEXT", "int": "INTEGER", "float": "FLOAT"}.get(type_text, f"[{type_text}]")
                shown = "none" if default in ("", None) else str(default).lower() if isinstance(default, bool) else default
                rows.append((flag, f"{meaning} [default: {shown}]".strip()))
            with formatter.section(f"Options of the {name} importer (after OUT)"):
                if rows:
                    formatter.write_dl(rows)
                else:
                    formatter.write_text("none")


@dataset_app.command(
    "import", cls=_ImportCommand,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def dataset_import_command(
    ctx: typer.Context,
    format_name: Annotated[str, typer.Argument(metavar="FORMAT", help="Importer: beir, locomo, longmemeval, trec, sqlite (see 'recall-kit list importers').")],
    source: Annotated[Path, typer.Argument(metavar="SRC", help="The file or folder to import.")],
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Dataset folder to write (absent or empty).")],
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty OUT.")] = False,
) -> None:
    """Import a benchmark into a dataset folder. Importer options follow OUT: --split test, --id-col id."""
    from recall_kit import registry
    from recall_kit.curate.importers import flatten_counts, import_dataset, parse_importer_args

    importer_class = registry.importers.get(format_name).obj
    raw = parse_importer_args(ctx.args, importer_class.Options)
    counts = import_dataset(format_name, source, output, raw, force=force)
    for key, value in flatten_counts(counts):
        typer.echo(f"{key}: {value}")
    typer.echo(f"Wrote {output}", err=True)


@dataset_app.command("export")
def dataset_export_command(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="Dataset folder.")],
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Folder to write (absent or empty).")],
    format_name: Annotated[str, typer.Option("--format", help="trec (topics.tsv, qrels.txt, corpus.jsonl) or beir.")] = "trec",
    split: Annotated[str, typer.Option("--split", help="BEIR qrels file name: qrels/<split>.tsv.")] = "test",
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty OUT.")] = False,
) -> None:
    """Export a dataset's queries and qrels (and corpus) as TREC or BEIR files."""
    from recall_kit.curate.export import export_dataset
    from recall_kit.curate.importers import flatten_counts
    from recall_kit.dataset import load_dataset

    counts = export_dataset(load_dataset(path), output, format_name, split=split, force=force)
    for key, value in flatten_counts(counts):
        typer.echo(f"{key}: {value}")
    typer.echo(f"Wrote {output}", err=True)


def _refuse_writing_example(path: Path, writes: bool) -> None:
    from recall_kit.dataset import is_example

    if writes and is_example(path):
        raise RecallKitError(
            f"{path} is shipped with recall-kit and read-only: copy it first "
            "(recall-kit dataset example OUT) and work on the copy."
        )


@dataset_app.command("example")
def dataset_example_command(
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Dataset folder to write (absent or empty).")],
    name: Annotated[str, typer.Option("--name", help="Which shipped example.")] = "memories",
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty OUT.")] = False,
) -> None:
    """Copy the example dataset shipped with recall-kit (invented memories; 120 queries in exact,
    paraphrase and multihop strata) to OUT. Commands also read it in place: --dataset example:memories."""
    from recall_kit.curate.example import write_example_dataset
    from recall_kit.dataset import load_dataset

    write_example_dataset(output, name, force=force)
    loaded = load_dataset(output)
    typer.echo(f"memories: {len(loaded.corpus)}")
    typer.echo(f"queries: {len(loaded.queries)} ({', '.join(loaded.strata)})")
    typer.echo(f"Wrote {output}", err=True)


@dataset_app.command("synth")
def dataset_synth_command(
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Dataset folder to write (absent or empty).")],
    memories: Annotated[int, typer.Option("--memories", help="Memories to generate (at least 30).")] = 6000,
    queries: Annotated[int, typer.Option("--queries", help="Queries, split over exact, paraphrase and multihop.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same bytes.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty OUT.")] = False,
) -> None:
    """Write a seeded synthetic memory dataset of any size (invented names; for benchmarks)."""
    from recall_kit.curate.synth import write_synthetic_dataset

    counts = write_synthetic_dataset(output, memories, queries, seed=seed, force=force)
    typer.echo(f"memories: {counts['memories']}")
    typer.echo(f"queries: {counts['queries']} ({', '.join(f'{s} {n}' for s, n in counts['strata'].items())})")
    typer.echo(f"Wrote {output}", err=True)


@dataset_app.command("generate")
def dataset_generate_command(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="Folder with corpus.jsonl (queries/qrels optional).")],
    exact: Annotated[int | None, typer.Option("--exact", help="Exact-stratum queries: a salient phrase unique to one memory.")] = None,
    paraphrase: Annotated[int | None, typer.Option("--paraphrase", help="Paraphrase queries (needs a generator plugin of that stratum).")] = None,
    multihop: Annotated[int | None, typer.Option("--multihop", help="Multihop queries (needs a generator plugin of that stratum).")] = None,
    generator: Annotated[list[str] | None, typer.Option("--generator", metavar="NAME:COUNT", help="NAME:COUNT of a registered query generator; repeat.")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="NAME.KEY=VALUE for a generator: exact.max_words=5.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generators.")] = 0,
    out: Annotated[Path | None, typer.Option("--out-dir", "--out", metavar="DIR", help="Dataset folder to write (default: DIR itself).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model (its `llm` name) of the generators that take one.")] = None,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Let --model be a remote model: memory text leaves this machine.")] = False,
) -> None:
    """Generate queries and qrels from a corpus, appended to the dataset's strata (validated, atomic)."""
    from recall_kit.curate.generate import generate_into, parse_generator_requests, with_model_flags
    from recall_kit.measure.system import parse_option_assignments

    _refuse_writing_example(path, out is None)
    requests = parse_generator_requests(exact, paraphrase, multihop, generator or [])
    options = with_model_flags(requests, parse_option_assignments(option or []), model, allow_remote)
    summary = generate_into(path, requests, seed=seed, out=out, options=options)
    for line in summary.lines():
        typer.echo(line)


@dataset_app.command("lint")
def dataset_lint_command(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="Dataset folder.")],
    paraphrase_max_overlap: Annotated[float, typer.Option("--paraphrase-max-overlap", help="Largest word Jaccard allowed between a paraphrase query and a relevant memory.")] = 0.18,
    twin_threshold: Annotated[float, typer.Option("--twin-threshold", help="Word-shingle Jaccard at which two memories are near-duplicate twins.")] = 0.8,
    shingle_size: Annotated[int, typer.Option("--shingle-size", help="Words per shingle for twin detection.")] = 2,
    min_queries: Annotated[int, typer.Option("--min-queries", help="Fewest queries a stratum needs to rank systems.")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    fix_twins: Annotated[bool, typer.Option("--fix-twins", help="Add missing twins to qrels.jsonl (grade of the judged twin).")] = False,
) -> None:
    """Check each stratum against its construction rule and the qrels against near-duplicate
    memories; ids and numbers only. Exit 1 when problems are found, 0 when clean."""
    from recall_kit.curate.lint import fix_twins as apply_twin_fixes
    from recall_kit.curate.lint import lint_path

    settings = {"paraphrase_max_overlap": paraphrase_max_overlap, "twin_threshold": twin_threshold,
                "shingle_size": shingle_size, "min_queries": min_queries}
    _refuse_writing_example(path, fix_twins)
    report = lint_path(path, **settings)
    fixed: dict[str, dict[str, int]] = {}
    if fix_twins:
        fixed = apply_twin_fixes(path, report)
        for query_id, added in fixed.items():
            typer.echo(f"fixed {query_id}: added " + ", ".join(f"{doc} (grade {g})" for doc, g in added.items()), err=True)
        if fixed:
            report = lint_path(path, **settings)
    if as_json:
        typer.echo(json.dumps({**report.to_dict(), "fixed": fixed}, indent=2))
    else:
        for line in report.lines():
            typer.echo(line)
    if not report.ok:
        raise typer.Exit(1)


@app.command("judge")
def judge_command(
    pool: Annotated[Path, typer.Argument(help="Pool file from 'recall-kit pool' (JSON lines: query_id, doc_ids).")],
    dataset: DatasetOption,
    out: Annotated[Path, typer.Option("--output", "--out", metavar="PATH", help="Merged qrels file to write (a .journal file is kept beside it).")],
    model: Annotated[str | None, typer.Option("--model", help="Grade with this model (its `llm` name) through a registered judge, not in the terminal.")] = None,
    judge_name: Annotated[str | None, typer.Option("--judge", metavar="NAME", help="The registered judge --model uses, when several are (see 'recall-kit list judges').")] = None,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Let --model be a remote model: memory text leaves this machine.")] = False,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="NAME.KEY=VALUE for the judge: llm.retries=5.")] = None,
) -> None:
    """Judge pooled candidates in the terminal, one at a time (0-3, s skip, q quit, ? help).
    Saved after every answer; run it again to resume. Shows memory text, locally, by necessity.
    With --model, a registered judge grades every pair instead (its grades only go to --out)."""
    from recall_kit.curate.judge import build_judge, judge, judge_with

    if model is not None or judge_name is not None:
        from recall_kit.measure.system import parse_option_assignments

        made = build_judge(judge_name, parse_option_assignments(option or []), model, allow_remote)
        counts = judge_with(made, pool, dataset, out, show=lambda line: typer.echo(line, err=True))
    else:
        counts = judge(pool, dataset, out)
    if counts["left"]:
        typer.echo(f"{counts['left']} pairs left: run the same command to go on.", err=True)


@app.command("agreement")
def agreement_command(
    first: Annotated[Path, typer.Argument(metavar="A", help="A qrels file (e.g. a model judge's).")],
    second: Annotated[Path, typer.Argument(metavar="B", help="Another qrels file of the same pool (e.g. yours, on a sample).")],
    binary: Annotated[bool, typer.Option("--binary", help="Compare relevant (grade >= 1) vs not, instead of grades.")] = False,
    samples: Annotated[int, typer.Option("--samples", help="Bootstrap resamples for the intervals (0: none).")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", metavar="PATH", help="Also write the numbers as JSON here.")] = None,
) -> None:
    """How far two judges agree on the pairs both judged: Cohen's kappa, linearly weighted kappa,
    bootstrap intervals, the confusion matrix. Warns below 0.6. Ids and numbers only."""
    from recall_kit.curate.agreement import agreement_files
    from recall_kit.fileio import write_json_atomic

    result = agreement_files(first, second, binary=binary, samples=samples, seed=seed)
    for line in result.lines():
        typer.echo(line)
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if json_out is not None:
        write_json_atomic(json_out, result.to_dict())
        typer.echo(f"Wrote {json_out}", err=True)


def _spec_from_flags(retriever: str | None, fusion: list[str] | None, weights: str | None,
                     option: list[str] | None, config: Path | None) -> Any:
    """A SystemSpec from the same flags `eval` takes (used by ablate and sweep)."""
    from recall_kit.errors import SpecError
    from recall_kit.measure.system import (
        SystemSpec,
        load_config,
        merge_specs,
        parse_option_assignments,
        parse_weights,
    )

    base = load_config(config) if config else None
    if retriever is None and base is None:
        raise SpecError("Missing --retriever (or --config with [system] retriever).")
    override = SystemSpec(retriever=retriever or "", fusions=list(fusion or []),
                          weights=parse_weights(weights), options=parse_option_assignments(option or []))
    return merge_specs(base, override)


@app.command("compare")
def compare_command(
    results: Annotated[list[Path], typer.Argument(help="Result JSON files from 'eval --json'; the first is the baseline.")],
    metrics: MetricsOption = None,
    primary: PrimaryOption = None,
    bootstrap: BootstrapOption = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the comparison JSON here.")] = None,
    report: ReportOption = "table",
    output: OutputOption = None,
    test: Annotated[str, typer.Option("--test", help="The p-value's test: randomisation, bootstrap, t-test, wilcoxon or tukey.")] = "randomisation",
) -> None:
    """Compare result files of one dataset with the first: paired deltas, 95% bootstrap intervals,
    randomisation-test p-values (Holm within the primary family), wins/ties/losses, overall and
    per stratum."""
    from recall_kit.decide.compare import compare_files, comparison_report
    from recall_kit.fileio import check_outputs, write_json_atomic

    check_outputs({"--json": json_out, "--output": output}, inputs={f"result {p}": p for p in results})
    comparison = compare_files(results, metrics=_split_names(metrics), n_resamples=bootstrap, seed=seed,
                               primary=_split_names(primary), test=test)
    if json_out is not None:
        write_json_atomic(json_out, comparison.to_dict())
        typer.echo(f"Wrote {json_out}", err=True)
    emit_report(comparison_report(comparison), report, output)


@app.command("gate")
def gate_command(
    baseline: Annotated[Path, typer.Option("--baseline", help="The accepted result JSON.")],
    current: Annotated[Path, typer.Option("--current", help="The result JSON to check.")],
    max_drop: Annotated[float, typer.Option("--max-drop", help="Largest drop allowed per metric.")] = 0.02,
    relative: Annotated[bool, typer.Option("--relative", help="--max-drop is a share of the baseline, not an absolute drop.")] = False,
    metrics: MetricsOption = None,
    latency_max_rise: Annotated[float | None, typer.Option("--latency-max-rise", help="Largest relative latency rise allowed (0.2: +20%); off when not given.")] = None,
    latency_stat: Annotated[str, typer.Option("--latency-stat", help="Latency statistic gated: p50, p95, p99, mean.")] = "p95",
    significant: Annotated[bool, typer.Option("--significant", help="Fail only drops the paired randomisation test supports (Holm, p < 0.05).")] = False,
    per_stratum: Annotated[bool, typer.Option("--per-stratum", help="Gate every stratum too, not only all queries.")] = False,
    bootstrap: BootstrapOption = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    report: ReportOption = "table",
    output: OutputOption = None,
) -> None:
    """A regression gate for CI: exit 0 when nothing regressed, 1 with a table of what did, 2 on bad input."""
    from recall_kit.decide.gate import run_gate
    from recall_kit.fileio import check_outputs

    check_outputs({"--output": output}, inputs={"--baseline": baseline, "--current": current})
    outcome = run_gate(baseline, current, max_drop=max_drop, relative=relative, metrics=_split_names(metrics),
                       latency_max_rise=latency_max_rise, latency_stat=latency_stat, significant=significant,
                       per_stratum=per_stratum, n_resamples=bootstrap, seed=seed)
    emit_report(outcome.report(), report, output)
    if not outcome.passed:
        raise typer.Exit(1)


@app.command("ablate")
def ablate_command(
    dataset: DatasetOption,
    out: OutDirOption,
    retriever: RetrieverOption = None,
    fusion: FusionOption = None,
    weights: WeightsOption = None,
    option: OptionOption = None,
    config: ConfigOption = None,
    k: KOption = 20,
    metrics: MetricsOption = None,
    primary: PrimaryOption = None,
    relevance_level: RelevanceLevelOption = 1,
    judged_only: JudgedOnlyOption = False,
    bootstrap: BootstrapOption = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling; recorded in manifests.")] = 0,
    latency_sample: LatencySampleOption = 200,
    report: ReportOption = "table",
    output: OutputOption = None,
    progress: ProgressOption = None,
    brief: Annotated[bool, typer.Option("--brief", help="Show the ablation table and each leg's contribution only (every comparison is still in --out-dir).")] = False,
    force: ForceRunOption = False,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
) -> None:
    """Score every single leg, every leave-one-out and the full system (one search per leg), and
    compare each with the full system; every variant's result is written to --out-dir."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.fileio import check_outputs
    from recall_kit.measure.executor import make_executor

    check_outputs({"--output": output}, folders={"--out-dir": out}, inputs={**_dataset_files(dataset), "--config": config})
    spec = _spec_from_flags(retriever, fusion, weights, option, config)
    ablation = run_ablation(spec, load_dataset(dataset), k=k, metrics=_split_names(metrics), out=out,
                            n_resamples=bootstrap, seed=seed,
                            latency_sample=None if latency_sample < 0 else latency_sample, show_progress=progress,
                            primary=_split_names(primary), relevance_level=relevance_level, judged_only=judged_only,
                            force=force, executor=make_executor(executor, address))
    typer.echo(f"Wrote {len(ablation.variants)} results and ablation.json to {out}", err=True)
    emit_report(ablation.report(brief=brief), report, output)


@app.command("sweep")
def sweep_command(
    dataset: DatasetOption,
    grid: Annotated[list[str], typer.Option("--grid", "-g", help="LEG=v1,v2 (weights) or NAME.KEY=v1,v2 (options); repeat.")],
    target: Annotated[str, typer.Option("--target", "-t", help="The metric to maximise, e.g. ndcg@10.")],
    retriever: RetrieverOption = None,
    fusion: FusionOption = None,
    weights: WeightsOption = None,
    option: OptionOption = None,
    config: ConfigOption = None,
    holdout: Annotated[float | None, typer.Option("--holdout", help="Share of queries held out to score the chosen setting (e.g. 0.5).")] = None,
    stratum: Annotated[str | None, typer.Option("--stratum", help="Score the target on this stratum's queries only (e.g. multihop).")] = None,
    k: KOption = 20,
    metrics: MetricsOption = None,
    bootstrap: BootstrapOption = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split and the resampling.")] = 0,
    out: Annotated[Path | None, OutDirOption.__metadata__[0]] = None,
    latency_sample: LatencySampleOption = 200,
    report: ReportOption = "table",
    output: OutputOption = None,
    progress: ProgressOption = None,
    force: ForceRunOption = False,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    guard: Annotated[list[str] | None, typer.Option("--guard", help="Metrics a setting must not lose significantly against the default on the tuning half (e.g. ndcg@10,mrr).")] = None,
) -> None:
    """Grid-search leg weights and options on one target metric; with --holdout, choose on one half
    of the queries and report the choice, against the default, on the other."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.sweep import run_sweep
    from recall_kit.fileio import check_outputs
    from recall_kit.measure.executor import make_executor

    check_outputs({"--output": output}, folders={"--out-dir": out}, inputs={**_dataset_files(dataset), "--config": config})
    spec = _spec_from_flags(retriever, fusion, weights, option, config)
    sweep = run_sweep(spec, load_dataset(dataset), grid, target, k=k, metrics=_split_names(metrics),
                      holdout=holdout, seed=seed, out=out, n_resamples=bootstrap,
                      latency_sample=None if latency_sample < 0 else latency_sample, show_progress=progress,
                      stratum=stratum, force=force, executor=make_executor(executor, address),
                      guards=_split_names(guard))
    if out is not None:
        typer.echo(f"Wrote {len(sweep.points) + 1} results and sweep.json to {out}", err=True)
    emit_report(sweep.report(), report, output)


@app.command("pool")
def pool_command(
    results: Annotated[list[Path], typer.Argument(help="Result JSON files of one dataset.")],
    out: Annotated[Path, typer.Option("--output", "--out", metavar="PATH", help="Write the pool here (JSON lines, one per query).")],
    depth: Annotated[int, typer.Option("--depth", help="Pool each system's top DEPTH ids.")] = 10,
    dataset: Annotated[Path | None, typer.Option("--dataset", "-d", help="Dataset folder (default: the path in the results).")] = None,
    with_text: Annotated[bool, typer.Option("--with-text", help="Add query and memory text (needs --dataset).")] = False,
    report: ReportOption = "table",
) -> None:
    """Write the unjudged ids in the union of the systems' top DEPTH, per query, for judging."""
    from recall_kit.curate.pool import pool_files
    from recall_kit.fileio import check_outputs

    check_outputs({"--output": out}, inputs={f"result {p}": p for p in results})
    pool = pool_files(results, out, depth=depth, dataset_path=dataset, with_text=with_text)
    typer.echo(f"Wrote {out}", err=True)
    emit_report(pool.report(), report)


@app.command("new-plugin")
def new_plugin_command(
    name: Annotated[str, typer.Argument(help="The plugin's name: lowercase letters, digits, dashes (e.g. tfidf).")],
    kind: Annotated[str, typer.Option("--kind", help="retriever, fusion, metric or reporter.")] = "retriever",
    directory: Annotated[Path, typer.Option("--dir", help="Folder to create recall-kit-NAME/ in.")] = Path("."),
) -> None:
    """Write a working plugin package (pyproject, module, README, passing tests) to start from."""
    from recall_kit.scaffold import create_plugin

    root = create_plugin(name, kind, directory)
    typer.echo(f"Created {root}")
    typer.echo(f"Next: cd {root} && pip install -e '.[test]' && pytest")


_commands_registered = False


def get_app() -> typer.Typer:
    """The app with every plugin's commands added (once)."""
    global _commands_registered
    if not _commands_registered:
        from recall_kit.plugins import load_plugins

        _commands_registered = True
        from recall_kit.plugins import add_plugin_commands

        load_plugins()
        add_plugin_commands(app)
    return app


def main() -> None:
    import signal

    if sys.stdout is None:  # started with stdout closed: printing must fail (exit 2), not vanish
        sys.stdout = _ClosedStdout()
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the atomic writers remove their temporaries on the way out.
    signal.signal(signal.SIGTERM, _on_sigterm)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup keeps it ignored
        signal.signal(signal.SIGHUP, _on_sigterm)
    try:
        application = get_app()
    except RecallKitError as error:
        print(f"Error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        raise SystemExit(130) from None
    try:
        application()
    except (SystemExit, KeyboardInterrupt):
        raise
    except OSError as error:  # outside a command (`--version` with stdout closed)
        print(f"Error: {_describe_os_error(error)}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception:  # --debug let it through: the traceback, but still no verdict (2, never 1)
        import traceback

        traceback.print_exc()
        raise SystemExit(2) from None
