"""Commands that run systems on a dataset: eval, ablate, sweep."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start, and would otherwise compile each annotation string again.

from pathlib import Path
from typing import Annotated, Any

import typer

from recall_kit.cli.options import (
    AddressOption,
    BootstrapOption,
    DatasetOption,
    ExecutorOption,
    ForceRunOption,
    JudgedOnlyOption,
    KOption,
    LatencySampleOption,
    MaxFailedOption,
    MetricsOption,
    OutDirOption,
    OutputOption,
    PrimaryOption,
    ProgressOption,
    RelevanceLevelOption,
    ReportOption,
    SystemFlags,
    dataset_files,
    emit_report,
    render_report,
    split_names,
    system_options,
    write_report,
)


@system_options(several_configs=True)
def eval_command(
    dataset: DatasetOption,
    system: SystemFlags,
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
    fail_on_sensitive: Annotated[bool, typer.Option("--fail-on-sensitive", help="Exit 1 when a live system returned a memory the dataset marks sensitive (a CI privacy check).")] = False,
    max_failed: MaxFailedOption = None,
) -> None:
    """Run a retriever (or a fused system) on a dataset and score it per stratum; with several
    --config files, every system (legs they share are searched once)."""
    from recall_kit.dataset import load_dataset
    from recall_kit.fileio import atomic_batch, check_outputs
    from recall_kit.measure.result_report import result_report
    from recall_kit.measure.run.failures import parse_max_failed
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.measure.systems.system import build_system

    accepted = parse_max_failed(max_failed)
    configs = list(system.configs)
    check_outputs({"--json": json_out, "--run": run_out, "--output": output}, folders={"--out-dir": out_dir},
                  inputs={**dataset_files(dataset), **{f"--config {path}": path for path in configs}})
    if len(configs) > 1 or out_dir is not None or executor != "local":
        results = _eval_systems(dataset, system, k, metrics, relevance_level, judged_only, json_out, run_out,
                                report, output, latency_sample, seed, progress, out_dir, executor, address,
                                accepted)
        _privacy_verdict(results, fail_on_sensitive)
        return
    spec = system.spec(system.config)
    built = build_system(spec)
    loaded = load_dataset(dataset)
    result = run_benchmark(
        built, loaded, k=k, metrics=split_names(metrics),
        latency_sample=None if latency_sample < 0 else latency_sample,
        show_progress=progress, seed=seed, relevance_level=relevance_level, judged_only=judged_only,
        max_failed=accepted,
    )
    shown = render_report(result_report(result, per_query=per_query), report)  # before any file: all or nothing
    with atomic_batch():  # the JSON, the run and the report are all written, or none is
        if json_out is not None:
            result.save(json_out)
        if run_out is not None:
            result.write_run(run_out, tag=spec.retriever)
        if output is not None:
            write_report(shown, output)
    for written in (json_out, run_out, output):
        if written is not None:
            typer.echo(f"Wrote {written}", err=True)
    if output is None:
        write_report(shown)
    _privacy_verdict([result], fail_on_sensitive)


def _privacy_verdict(results: list[Any], fail: bool) -> None:
    """Say on stderr when a live system surfaced sensitive memories (a count and the queries, never
    text); with `fail` (--fail-on-sensitive), that is an exit-1 verdict."""
    count = sum(result.sensitive_hits for result in results)
    if not count:
        return
    queries = list(dict.fromkeys(query for result in results for query in result.sensitive_queries()))
    shown = ", ".join(queries[:10]) + (f" and {len(queries) - 10} more" if len(queries) > 10 else "")
    noun = "memory" if count == 1 else "memories"
    typer.secho(f"PRIVACY: {count} sensitive {noun} surfaced on {len(queries)} "
                f"{'query' if len(queries) == 1 else 'queries'}: {shown}.", err=True, fg="red", bold=True)
    if fail:
        typer.echo(f"Failed: {count} sensitive {noun} surfaced (--fail-on-sensitive).", err=True)
        raise typer.Exit(1)


def _eval_systems(dataset: Path, system: SystemFlags, k: int, metrics: list[str] | None, relevance_level: int,
                  judged_only: bool, json_out: Path | None, run_out: Path | None, report: str,
                  output: Path | None, latency_sample: int, seed: int, progress: bool | None, out_dir: Path | None,
                  executor: str, address: str | None, max_failed: Any) -> list[Any]:
    """`eval` of several systems (one per --config, the flags over each), or of one through an executor."""
    from recall_kit.dataset import load_dataset
    from recall_kit.errors import OptionError
    from recall_kit.fileio import atomic_batch
    from recall_kit.measure.result_report import result_report
    from recall_kit.measure.run.distribute import run_systems
    from recall_kit.measure.run.executor import make_executor
    from recall_kit.measure.systems.system import build_system

    configs = list(system.configs)
    if len(configs) > 1 and (json_out is not None or run_out is not None):
        raise OptionError("--json and --run write one system's result; with several --config, --out-dir gets each.")
    if len(configs) > 1 and out_dir is None:
        raise OptionError("Several --config files: give --out-dir for their results (NAME.json each).")
    chosen = make_executor(executor, address)
    paths: list[Path | None] = [*configs] or [None]
    specs = [system.spec(path) for path in paths]
    names = [path.stem for path in configs] if configs else [spec.retriever for spec in specs]
    results = run_systems([(name, build_system(spec)) for name, spec in zip(names, specs, strict=True)],
                          load_dataset(dataset), k=k, metrics=split_names(metrics),
                          latency_sample=None if latency_sample < 0 else latency_sample, show_progress=progress,
                          seed=seed, relevance_level=relevance_level, judged_only=judged_only, executor=chosen,
                          out=out_dir, max_failed=max_failed)
    if out_dir is not None:
        typer.echo(f"Wrote {len(results)} result{'s' if len(results) > 1 else ''} to {out_dir}", err=True)
    shown = render_report(_joined_reports([result_report(result) for result in results]), report)
    with atomic_batch():
        if json_out is not None:
            results[0].save(json_out)
        if run_out is not None:
            results[0].write_run(run_out, tag=specs[0].retriever)
    for written in (json_out, run_out):
        if written is not None:
            typer.echo(f"Wrote {written}", err=True)
    write_report(shown, output)
    return list(results)


def _joined_reports(reports: list[Any]) -> Any:
    """One report of several systems' reports: their tables and notes in turn."""
    if len(reports) == 1:
        return reports[0]
    from recall_kit.types import Report

    return Report(title=" | ".join(r.title for r in reports), tables=[t for r in reports for t in r.tables],
                  notes=[n for r in reports for n in r.notes], data={"systems": [r.data for r in reports]},
                  charts=[c for r in reports for c in r.charts])


@system_options()
def ablate_command(
    dataset: DatasetOption,
    system: SystemFlags,
    out: Annotated[Path | None, OutDirOption.__metadata__[0]] = None,
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
    brief: Annotated[bool, typer.Option("--brief", help="Show the ablation table and each leg's contribution only (every comparison is still in --out-dir, when given).")] = False,
    force: ForceRunOption = False,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    max_failed: MaxFailedOption = None,
) -> None:
    """Score every single leg, every leave-one-out and the full system (one search per leg), and
    compare each with the full system; with --out-dir, every variant's result is written there."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.fileio import check_outputs
    from recall_kit.measure.run.executor import make_executor
    from recall_kit.measure.run.failures import parse_max_failed

    accepted = parse_max_failed(max_failed)

    check_outputs({"--output": output}, folders={"--out-dir": out}, inputs={**dataset_files(dataset), "--config": system.config})
    spec = system.spec(system.config)
    ablation = run_ablation(spec, load_dataset(dataset), k=k, metrics=split_names(metrics), out=out,
                            n_resamples=bootstrap, seed=seed,
                            latency_sample=None if latency_sample < 0 else latency_sample, show_progress=progress,
                            primary=split_names(primary, "--primary"), relevance_level=relevance_level, judged_only=judged_only,
                            force=force, executor=make_executor(executor, address), max_failed=accepted)
    if out is not None:
        typer.echo(f"Wrote {len(ablation.variants)} results and ablation.json to {out}", err=True)
    emit_report(ablation.report(brief=brief), report, output)


@system_options()
def sweep_command(
    dataset: DatasetOption,
    grid: Annotated[list[str], typer.Option("--grid", "-g", help="LEG=v1,v2 (weights) or NAME.KEY=v1,v2 (options); repeat.")],
    target: Annotated[str, typer.Option("--target", "-t", help="The metric to maximise, e.g. ndcg@10.")],
    system: SystemFlags,
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
    relevance_level: RelevanceLevelOption = 1,
    judged_only: JudgedOnlyOption = False,
    max_failed: MaxFailedOption = None,
) -> None:
    """Grid-search leg weights and options on one target metric; with --holdout, choose on one half
    of the queries and report the choice, against the default, on the other."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.sweep import run_sweep
    from recall_kit.fileio import check_outputs
    from recall_kit.measure.run.executor import make_executor
    from recall_kit.measure.run.failures import parse_max_failed

    accepted = parse_max_failed(max_failed)

    check_outputs({"--output": output}, folders={"--out-dir": out}, inputs={**dataset_files(dataset), "--config": system.config})
    spec = system.spec(system.config)
    sweep = run_sweep(spec, load_dataset(dataset), grid, target, k=k, metrics=split_names(metrics),
                      holdout=holdout, seed=seed, out=out, n_resamples=bootstrap,
                      latency_sample=None if latency_sample < 0 else latency_sample, show_progress=progress,
                      stratum=stratum, force=force, executor=make_executor(executor, address),
                      guards=split_names(guard, "--guard"), relevance_level=relevance_level, judged_only=judged_only,
                      max_failed=accepted)
    if out is not None:
        typer.echo(f"Wrote {len(sweep.points) + 1} results and sweep.json to {out}", err=True)
    emit_report(sweep.report(), report, output)
