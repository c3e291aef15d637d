"""Options several commands share, declared once so their names, help and checks agree, and the
helpers that read them (--metrics, --dataset, --report/--output)."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start, and would otherwise compile each annotation string again.

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from recall_kit.cli.completion import (
    complete_fusion,
    complete_metrics,
    complete_reporter,
    complete_retriever,
    complete_test,
    reporters_for,
)
from recall_kit.errors import OptionError, RecallKitError


def _check_reporter(ctx: typer.Context, value: str | None) -> str | None:
    """--report names a registered reporter that renders this command's report; checked before
    any work is done (ablate must not write its results and then refuse the format)."""
    import recall_kit.registry as registry

    if value is not None:
        registration = registry.reporters.get(value)  # one line listing the registered reporters, exit 2
        command = ctx.info_name
        if value not in reporters_for(command):
            raise OptionError(f"--report {value} renders {' and '.join(registration.obj.commands)}'s reports, "
                              f"not {command}'s: use {', '.join(reporters_for(command))}.")
    return value


def _check_latency_sample(value: int) -> int:
    if value < -1:
        raise OptionError(f"--latency-sample {value} is not a query count: give N >= 0, or -1 for all queries.")
    return value


# Options that several commands share, defined once so their names, help and checks agree.
DatasetOption = Annotated[Path, typer.Option("--dataset", "-d", metavar="PATH", help="Dataset folder (corpus.jsonl, queries.jsonl, qrels.jsonl), or example:memories (shipped).")]
RetrieverOption = Annotated[str | None, typer.Option("--retriever", "-r", metavar="SPEC", autocompletion=complete_retriever, help="Legs joined by '+': fts5, fts5+dense, pkg.module:Class. Required, unless --config gives [system] retriever.")]
FusionOption = Annotated[list[str] | None, typer.Option("--fusion", "-f", metavar="NAME", autocompletion=complete_fusion, help="Fusion step; repeat to chain (--fusion rrf --fusion exact-bonus).")]
WeightsOption = Annotated[list[str] | None, typer.Option("--weights", "-w", metavar="LIST", help="Leg weights, comma-separated: fts5=1,dense=0.5; repeat to add legs (-w fts5=1 -w dense=0.5).")]
OptionOption = Annotated[list[str] | None, typer.Option("--option", "-o", metavar="NAME.KEY=VALUE", help="An option of a leg or fusion: dense.model=PATH, rrf.k=60; repeat.")]
ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", metavar="PATH", help="TOML experiment file; flags override it.")]
#: eval's --config: repeatable, one system per file.
ConfigsOption = Annotated[list[Path] | None, typer.Option("--config", "-c", metavar="PATH", help="TOML experiment file; flags override it. Repeat to evaluate several systems (each result in --out-dir).")]
KOption = Annotated[int, typer.Option("--k", "-k", metavar="INTEGER", help="Ranking depth scored; raised to the largest metric cutoff asked (recall@100 scores at 100).")]
MetricsOption = Annotated[list[str] | None, typer.Option("--metrics", "-m", metavar="LIST", autocompletion=complete_metrics, help="Metrics, comma-separated: recall@10,ndcg@10,mrr; trec_eval and ir_measures names work too (ndcg_cut_10, nDCG@10).")]
RelevanceLevelOption = Annotated[int, typer.Option("--relevance-level", "-l", metavar="INTEGER", help="Grades >= this count as relevant for binary metrics (trec_eval -l).")]
JudgedOnlyOption = Annotated[bool, typer.Option("--judged-only", "-J", help="Drop unjudged ids from each ranking before scoring (trec_eval -J).")]
PrimaryOption = Annotated[list[str] | None, typer.Option("--primary", metavar="LIST", autocompletion=complete_metrics, help="Decision metrics, comma-separated: Holm runs over their all-queries rows; the rest is exploratory (default: the first metric compared).")]
#: One spelling for resamples everywhere (study.toml's `resamples`); --bootstrap is the old one, hidden.
BootstrapOption = Annotated[int, typer.Option("--resamples", "--bootstrap", metavar="INTEGER", help="Bootstrap and randomisation resamples.")]
ConcurrencyOption = Annotated[int | None, typer.Option("--concurrency", metavar="N", min=1, help="Model calls in flight (default 16); a model that runs in this process takes one at a time.")]
ReportOption = Annotated[str, typer.Option("--report", metavar="NAME", callback=_check_reporter, autocompletion=complete_reporter, help="Output format: a reporter name.")]
TestOption = Annotated[str, typer.Option("--test", metavar="NAME", autocompletion=complete_test, help="The p-value's test: randomisation, bootstrap, t-test, wilcoxon or tukey.")]
OutputOption = Annotated[Path | None, typer.Option("--output", metavar="PATH", help="Write the report to this file instead of stdout.")]
LatencySampleOption = Annotated[int, typer.Option("--latency-sample", metavar="INTEGER", callback=_check_latency_sample, help="Queries timed one at a time (0: none, -1: all).")]
#: ablate and sweep write one result file per variant into a folder; `--out`, its old spelling, is
#: hidden and noted (cli/style.py OLD_SPELLINGS): `--out` is now a data file (pool, judge, label).
OutDirOption = Annotated[Path, typer.Option("--out-dir", "--out", metavar="DIR", help="Folder for every variant's result JSON and a summary JSON.")]
ProgressOption = Annotated[bool | None, typer.Option("--progress/--no-progress", help="Progress on stderr: a live line on a terminal, a plain line every 10 s otherwise (RECALL_KIT_PROGRESS_INTERVAL).")]
ForceRunOption = Annotated[bool, typer.Option("--force", help="Replace another run's files in --out-dir (refused without it).")]
ExecutorOption = Annotated[str, typer.Option("--executor", metavar="NAME", help="Where the leg searches and scoring run: local (this process) or ray (a Ray cluster; pip install 'recall-kit[ray]').")]
MaxFailedOption = Annotated[str | None, typer.Option("--max-failed", metavar="N", help="Accept up to N queries whose search failed on a live system (a count, or a share such as 5%); recorded in the result, which compare and gate then refuse. Default: none (exit 2, no result).")]
AddressOption = Annotated[str | None, typer.Option("--address", metavar="ADDRESS", help="The Ray cluster for --executor ray (ray://HOST:10001; default: RAY_ADDRESS, else one started on this machine).")]


@dataclass(frozen=True)
class SystemFlags:
    """The flags that name the system under test (--retriever, --fusion, --weights, --option,
    --config), as one value: a command takes them all through `system_options`."""

    retriever: str | None = None
    fusion: list[str] | None = None
    #: Each --weights given (repeated: their legs together; a leg named twice is refused).
    weights: list[str] | None = None
    option: list[str] | None = None
    configs: tuple[Path, ...] = ()

    @property
    def config(self) -> Path | None:
        """The --config file of a command that takes one."""
        return self.configs[0] if self.configs else None

    def spec(self, config: Path | None) -> Any:
        """The SystemSpec: `config`'s [system] (when given), these flags over it."""
        from recall_kit.errors import SpecError
        from recall_kit.measure.systems.system import (
            SystemSpec,
            load_config,
            merge_specs,
            parse_option_assignments,
            parse_weights,
        )

        base = load_config(config) if config else None
        if self.retriever is None and base is None:
            raise SpecError("Missing --retriever (or --config with [system] retriever).")
        override = SystemSpec(retriever=self.retriever or "", fusions=list(self.fusion or []),
                              weights=parse_weights(",".join(self.weights) if self.weights else None),
                              options=parse_option_assignments(self.option or []))
        return merge_specs(base, override)


def system_options(*, several_configs: bool = False) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Declare --retriever, --fusion, --weights, --option and --config (repeatable with
    `several_configs`) on a command, in that order, where its `system: SystemFlags` parameter
    stands; the command gets them as that one SystemFlags."""
    declared: dict[str, Any] = {"retriever": RetrieverOption, "fusion": FusionOption, "weights": WeightsOption,
                                "option": OptionOption, "config": ConfigsOption if several_configs else ConfigOption}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        signature = inspect.signature(command)
        if "system" not in signature.parameters:
            raise TypeError(f"{command.__name__} takes no `system: SystemFlags` for system_options to fill")
        parameters: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            if parameter.name == "system":
                parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                                 annotation=annotation) for name, annotation in declared.items()]
            else:
                parameters.append(parameter.replace(annotation=hints[parameter.name]))

        @functools.wraps(command)
        def with_system(**given: Any) -> None:
            config = given.pop("config")
            configs = tuple(config or ()) if several_configs else (config,) if config is not None else ()
            flags = SystemFlags(given.pop("retriever"), given.pop("fusion"), given.pop("weights"),
                                given.pop("option"), configs)
            command(system=flags, **given)

        with_system.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
        with_system.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        return with_system

    return decorate


def split_names(values: list[str] | None, flag: str = "--metrics") -> list[str] | None:
    """Comma-separated names given with `flag` (repeatable) as one list; None when none were given."""
    if not values:
        return None
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    if not names:  # "-m ''" or "-m ,,": a mistake, not a request for the defaults
        raise OptionError(f"{values[0]!r} names no metric: name one (e.g. recall@10), or leave the option out for the defaults.")
    for value in values:  # "recall@10,,mrr": a name left out by mistake, not to be dropped silently
        if any(not part.strip() for part in value.split(",")):
            raise OptionError(f"{flag} {value!r} holds an empty metric name (two commas in a row, or one at an "
                              "end): write e.g. recall@10,mrr.")
    return names


def _in_batch() -> bool:
    from recall_kit.fileio import in_atomic_batch

    return in_atomic_batch()


def dataset_files(dataset: Path) -> dict[str, Path]:
    """The dataset's files as inputs no output may overwrite."""
    from recall_kit.dataset import CORPUS_FILE, QRELS_FILE, QUERIES_FILE

    return {"--dataset": dataset, **{f"--dataset's {name}": dataset / name
                                     for name in (CORPUS_FILE, QUERIES_FILE, QRELS_FILE)}}


def emit_report(report: Any, reporter_name: str, output: Path | None = None) -> None:
    """Render `report` with the named reporter; print it, or write it atomically to `output`."""
    write_report(render_report(report, reporter_name), output)


def render_report(report: Any, reporter_name: str) -> str:
    """`report` rendered by the named reporter: a command that also writes files renders first,
    so a reporter that raises leaves nothing written (all or nothing)."""
    import recall_kit.registry as registry

    registration = registry.reporters.get(reporter_name)
    reporter = registration.call("__init__", registration.obj)
    return str(registration.call("render", reporter.render, report))


def streaming_reporter(reporter_name: str) -> Callable[[Any, Path | None], None] | None:
    """For a reporter that writes a report piece by piece (a `write(report, stream)` method, as
    table and trec_eval have: `score -q`'s every query is never held as text), a function that
    writes a report with it, printed or atomically to `output`; None for any other reporter."""
    import sys

    import recall_kit.registry as registry

    registration = registry.reporters.get(reporter_name)
    reporter = registration.call("__init__", registration.obj)
    write = getattr(reporter, "write", None)
    if not callable(write):
        return None

    def stream_report(report: Any, output: Path | None) -> None:
        from recall_kit.fileio import atomic_open

        if output is None:
            stdout = _Echo(sys.stdout)  # the reporter's own prints go to stderr while it runs (Registration.call)
            try:
                registration.call("write", write, report, stdout)
            except RecallKitError:
                if stdout.closed_by_reader:  # `| head`: not the reporter's failure (exit 141, quietly)
                    raise BrokenPipeError from None
                raise
            return
        with atomic_open(output) as stream:
            registration.call("write", write, report, stream)
        if not _in_batch():
            typer.echo(f"Wrote {output}", err=True)

    return stream_report


class _Echo:
    """A text stream over `typer.echo` to a given stream (its encoding handling, a flush a piece)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        #: Whether a write found the stream's reader gone (`| head`).
        self.closed_by_reader = False

    def write(self, text: str) -> None:
        try:
            typer.echo(text, file=self._stream, nl=False)
        except BrokenPipeError:
            self.closed_by_reader = True
            raise


def write_report(text: str, output: Path | None = None) -> None:
    """A rendered report: printed, or written atomically to `output`."""
    from recall_kit.fileio import write_text_atomic

    if output is None:
        typer.echo(text, nl=False)
    else:
        write_text_atomic(output, text)
        if not _in_batch():
            typer.echo(f"Wrote {output}", err=True)
