"""Commands that make and check the evidence: dataset ..., pool, judge."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start, and would otherwise compile each annotation string again.

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from recall_kit.cli.options import ConcurrencyOption, DatasetOption, ReportOption, emit_report
from recall_kit.cli.style import ClickStyleGroup
from recall_kit.errors import RecallKitError

dataset_app = typer.Typer(cls=ClickStyleGroup, help="Check, describe and convert datasets.",
                          no_args_is_help=True, rich_markup_mode=None)


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
    from recall_kit.curate.stats import dataset_stats
    from recall_kit.dataset import load_dataset

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

    def format_help(self, ctx: Any, formatter: Any) -> None:
        import recall_kit.registry as registry

        for param in self.params:  # FORMAT lists the importers registered, plugins' too (http, mcp)
            if param.name == "format_name" and isinstance(param, typer.core.TyperArgument):
                param.help = f"Importer: {', '.join(registry.importers.names())} (see 'recall-kit list importers')."
        super().format_help(ctx, formatter)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        import recall_kit.registry as registry

        super().format_epilog(ctx, formatter)
        names = registry.importers.names()
        given = [arg for arg in ctx.meta.get("import_args", []) if not arg.startswith("-")]
        if given and given[0] in names:
            names = [given[0]]
        for name in names:
            rows = importer_flags(registry.importers.get(name).obj.Options)
            with formatter.section(f"Options of the {name} importer (after OUT)"):
                if rows:
                    formatter.write_dl(rows)
                else:
                    formatter.write_text("none")


def importer_flags(options_class: type) -> list[tuple[str, str]]:
    """An importer's options as `dataset import --help` shows them: (flags, meaning [default]). A
    flag whose name is already a negation (`no_sensitive_col`) is that flag alone, not
    `--no-sensitive-col / --no-no-sensitive-col`."""
    from recall_kit.options import describe_options

    rows = []
    for field, type_text, default, meaning in describe_options(options_class):
        flag = "--" + field.replace("_", "-")
        if type_text == "bool":
            flag = flag if field.startswith("no_") else f"{flag} / --no-{field.replace('_', '-')}"
        else:
            flag += " " + {"str": "TEXT", "int": "INTEGER", "float": "FLOAT"}.get(type_text, f"[{type_text}]")
        shown = "none" if default in ("", None) else str(default).lower() if isinstance(default, bool) else default
        rows.append((flag, f"{meaning} [default: {shown}]".strip()))
    return rows


@dataset_app.command(
    "import", cls=_ImportCommand,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def dataset_import_command(
    ctx: typer.Context,
    format_name: Annotated[str, typer.Argument(metavar="FORMAT", help="Importer: a registered name (see 'recall-kit list importers').")],
    source: Annotated[Path, typer.Argument(metavar="SRC", help="The file or folder to import.")],
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Dataset folder to write (absent or empty).")],
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty OUT.")] = False,
) -> None:
    """Import a benchmark into a dataset folder. Importer options follow OUT: --split test, --id-col id."""
    import recall_kit.registry as registry
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
    lost = counts["not_representable"]
    if lost:
        typer.echo(f"warning: {format_name} cannot hold these fields, left out: "
                   + ", ".join(f"{name} ({count} rows)" for name, count in lost.items())
                   + ("; --format beir keeps them in its metadata." if format_name == "trec" else "."), err=True)
    typer.echo(f"Wrote {output}", err=True)


@dataset_app.command("split")
def dataset_split_command(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="Dataset folder, or example:memories.")],
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Folder to write (absent or empty): OUT/tuning, OUT/held-out.")],
    holdout: Annotated[float, typer.Option("--holdout", help="Share of queries held out, in (0, 1), as sweep --holdout.")] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split, as sweep --seed.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty OUT.")] = False,
) -> None:
    """Write the tuning and held-out halves that `sweep --holdout` makes, as two dataset folders:
    eval and compare a chosen system on the held-out half alone, per stratum, with intervals."""
    from recall_kit.curate.split import HELD_OUT, TUNING, split_dataset

    manifest = split_dataset(path, output, holdout, seed=seed, force=force)
    for side in (TUNING, HELD_OUT):
        typer.echo(f"{side}: {manifest['queries'][side]} queries")
    for stratum, counts in manifest["strata"].items():
        typer.echo(f"  {stratum}: {counts[TUNING]} / {counts[HELD_OUT]}")
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
    concurrency: ConcurrencyOption = None,
) -> None:
    """Generate queries and qrels from a corpus, appended to the dataset's strata (validated, atomic)."""
    from recall_kit.curate.generate import generate_into, parse_generator_requests, with_model_flags
    from recall_kit.measure.systems.system import parse_option_assignments

    _refuse_writing_example(path, out is None)
    requests = parse_generator_requests(exact, paraphrase, multihop, generator or [])
    options = with_model_flags(requests, parse_option_assignments(option or []), model, allow_remote, concurrency)
    summary = generate_into(path, requests, seed=seed, out=out, options=options)
    for line in summary.lines():
        typer.echo(line)


@dataset_app.command("lint")
def dataset_lint_command(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="Dataset folder.")],
    paraphrase_max_overlap: Annotated[float, typer.Option("--paraphrase-max-overlap", help="Largest word Jaccard allowed between a paraphrase query and a relevant memory.")] = 0.18,
    multihop_max_overlap: Annotated[float, typer.Option("--multihop-max-overlap", help="Largest word Jaccard allowed between a multi-hop query and any ONE of its relevant memories.")] = 0.35,
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

    settings = {"paraphrase_max_overlap": paraphrase_max_overlap, "multihop_max_overlap": multihop_max_overlap,
                "twin_threshold": twin_threshold,
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


def pool_command(
    results: Annotated[list[Path], typer.Argument(help="Result JSON files of one dataset.")],
    out: Annotated[Path, typer.Option("--out", "--output", metavar="PATH", help="Write the pool here (JSON lines, one per query), for judge or label.")],
    depth: Annotated[int, typer.Option("--depth", help="Pool each system's top DEPTH ids.")] = 10,
    dataset: Annotated[Path | None, typer.Option("--dataset", "-d", help="Dataset folder (default: the path in the results).")] = None,
    with_text: Annotated[bool, typer.Option("--with-text", help="Add query and memory text (needs --dataset).")] = False,
    report: ReportOption = "table",
) -> None:
    """Write the unjudged ids in the union of the systems' top DEPTH, per query, for judging."""
    from recall_kit.curate.pool import pool_files
    from recall_kit.fileio import check_outputs

    check_outputs({"--out": out}, inputs={f"result {p}": p for p in results})
    pool = pool_files(results, out, depth=depth, dataset_path=dataset, with_text=with_text)
    typer.echo(f"Wrote {out}", err=True)
    emit_report(pool.report(), report)


def judge_command(
    pool: Annotated[list[Path], typer.Argument(metavar="POOL", help="Pool file from 'recall-kit pool' (JSON lines: query_id, doc_ids); with --calibrate, the result files of the candidate systems.")],
    dataset: DatasetOption,
    out: Annotated[Path, typer.Option("--out", "--output", metavar="PATH", help="Merged qrels file to write (a .journal file is kept beside it).")],
    model: Annotated[str | None, typer.Option("--model", help="Grade with this model (its `llm` name) through a registered judge, not in the terminal.")] = None,
    judge_name: Annotated[str | None, typer.Option("--judge", metavar="NAME", help="The registered judge that grades (see 'recall-kit list judges').")] = None,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Let --model be a remote model: memory text leaves this machine.")] = False,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="NAME.KEY=VALUE for the judge: llm.retries=5.")] = None,
    concurrency: ConcurrencyOption = None,
    calibrate: Annotated[bool, typer.Option("--calibrate", help="Measure the judge against known labels instead: kappa with its interval, the confusion matrix, a verdict.")] = False,
    labels: Annotated[Path | None, typer.Option("--labels", metavar="PATH", help="With --calibrate: a person's judgments (qrels with 0s) as the labels, instead of the dataset's qrels taken as complete.")] = None,
    pairs: Annotated[int | None, typer.Option("--pairs", metavar="N", help="With --calibrate: sample N pairs (N/2 queries; default: every query).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="With --calibrate: seed of the sample and the bootstrap.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", metavar="PATH", help="With --calibrate: also write the numbers as JSON here.")] = None,
    depth: Annotated[int | None, typer.Option("--depth", metavar="N", help="With --calibrate: every pair of the systems' top N and the labelled relevant ones, instead of the balanced sample.")] = None,
) -> None:
    """Judge pooled candidates in the terminal, one at a time (0-3, s skip, q quit, ? help).
    Saved after every answer; run it again to resume. Shows memory text, locally, by necessity.
    With --judge NAME (or --model for a model judge), a registered judge grades every pair instead
    (its grades only go to --out; 'recall-kit list judges'). With --calibrate, the judge grades a
    balanced sample of labelled pairs (each query's relevant memory and the non-relevant one the
    systems rank highest; with --depth N, every pair of their top N and the relevant ones) and is
    measured against the labels: kappa, sensitivity and specificity, per stratum."""
    from recall_kit.curate.judge import build_judge, judge, judge_with

    if calibrate:
        from recall_kit.curate.calibrate import calibrate as run_calibration
        from recall_kit.curate.calibrate import write_calibration_json
        from recall_kit.fileio import check_outputs
        from recall_kit.measure.systems.system import parse_option_assignments

        if model is None and judge_name is None:
            raise RecallKitError("--calibrate measures a registered judge: pass --judge NAME "
                                 "('recall-kit list judges'), or --model NAME for a model judge.")
        if json_out is not None:
            check_outputs({"--json": json_out}, inputs={f"result {p}": p for p in pool})
        made = build_judge(judge_name, parse_option_assignments(option or []), model, allow_remote)
        found = run_calibration(made, dataset, pool, out, labels_path=labels, pairs=pairs, seed=seed,
                                show=lambda line: typer.echo(line, err=True), depth=depth)
        for line in found.lines():
            typer.echo(line)
        for warning in found.warnings:
            typer.echo(f"warning: {warning}", err=True)
        if json_out is not None:
            write_calibration_json(found, json_out)
        return
    if labels is not None or pairs is not None or json_out is not None or depth is not None:
        raise RecallKitError("--labels, --pairs, --depth and --json go with --calibrate.")
    if len(pool) != 1:
        raise RecallKitError(f"judge takes one POOL file, got {len(pool)} (several files go with --calibrate).")
    if model is not None or judge_name is not None:
        from recall_kit.measure.systems.system import parse_option_assignments

        made = build_judge(judge_name, parse_option_assignments(option or []), model, allow_remote, concurrency)
        counts = judge_with(made, pool[0], dataset, out, show=lambda line: typer.echo(line, err=True))
    else:
        counts = judge(pool[0], dataset, out)
    if counts["left"]:
        typer.echo(f"{counts['left']} pairs left: run the same command to go on.", err=True)
