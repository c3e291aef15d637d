"""Commands that decide between results: score, compare, gate, agreement."""

# Annotations are evaluated here (no `from __future__ import annotations`): typer reads these
# signatures at every start, and would otherwise compile each annotation string again.

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recall_kit.cli.options import (
    BootstrapOption,
    JudgedOnlyOption,
    MetricsOption,
    OutputOption,
    PrimaryOption,
    RelevanceLevelOption,
    ReportOption,
    TestOption,
    emit_report,
    render_report,
    split_names,
    streaming_reporter,
    write_report,
)

if TYPE_CHECKING:
    from recall_kit.decide.ablate import Variant


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
    bootstrap: Annotated[int, typer.Option("--resamples", "--bootstrap", metavar="INTEGER", help="With several runs: bootstrap and randomisation resamples.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="With several runs: seed of the resampling.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write per-query and mean values (and the comparison) as JSON here.")] = None,
    report: ReportOption = "table",
    output: OutputOption = None,
    test: TestOption = "randomisation",
) -> None:
    """Score TREC run files against TREC qrels, as trec_eval does; with several runs, compare each
    with the first as 'compare' does (paired deltas, intervals, Holm-corrected p-values)."""
    from recall_kit.decide.score import score_files
    from recall_kit.fileio import check_outputs, write_large_json_atomic

    check_outputs({"--json": json_out, "--output": output}, inputs={"--qrels": qrels, **{f"--run {r}": r for r in run}})
    outcome = score_files(qrels, run, split_names(metrics), complete=complete, ties=ties,
                          relevance_level=relevance_level, judged_only=judged_only,
                          primary=split_names(primary, "--primary"), n_resamples=bootstrap, seed=seed, depth=max_depth,
                          test=test)
    stream = streaming_reporter(report) if per_query else None
    if stream is not None:  # every query's values written a chunk at a time (table, trec_eval), never held
        if json_out is not None:
            write_large_json_atomic(json_out, outcome.to_dict(streamed=True))
            typer.echo(f"Wrote {json_out}", err=True)
        stream(outcome.report(per_query=True), output)
        return
    shown = render_report(outcome.report(per_query=per_query), report)  # before any file: all or nothing
    if json_out is not None:
        write_large_json_atomic(json_out, outcome.to_dict(streamed=True))
        typer.echo(f"Wrote {json_out}", err=True)
    write_report(shown, output)


def compare_command(
    results: Annotated[list[Path], typer.Argument(help="Result JSON files from 'eval --json'; the first is the baseline.")],
    metrics: MetricsOption = None,
    primary: PrimaryOption = None,
    bootstrap: BootstrapOption = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the comparison JSON here.")] = None,
    report: ReportOption = "table",
    output: OutputOption = None,
    test: TestOption = "randomisation",
    names: Annotated[str | None, typer.Option("--names", help="Names for the results, comma-separated, one per file in order (default: each system's label).")] = None,
    primary_strata: Annotated[bool, typer.Option("--primary-strata", help="Put the primary metrics' per-stratum rows in the Holm family too (as recall-kit study does).")] = False,
    bounds: Annotated[Path | None, typer.Option("--bounds", metavar="QRELS", help="The qrels the results were scored with: also show what the unjudged ids in each top k could do to each delta and verdict (all relevant / none, 'can flip' or 'cannot flip').")] = None,
) -> None:
    """Compare result files of one dataset with the first: paired deltas, 95% bootstrap intervals,
    randomisation-test p-values (Holm within the primary family), wins/ties/losses, overall and
    per stratum."""
    from recall_kit.decide.compare import compare_files
    from recall_kit.decide.compare_report import comparison_report
    from recall_kit.fileio import check_outputs, write_json_atomic

    inputs = {f"result {p}": p for p in results} | ({"--bounds": bounds} if bounds is not None else {})
    check_outputs({"--json": json_out, "--output": output}, inputs=inputs)
    # An ablation's files (ablate --out-dir) are named as ablate names them, and the report leads
    # with ablate's verdict: the page and the terminal say the same first line.
    variants = _ablation_variants(results) if names is None else None
    comparison = compare_files(results, metrics=split_names(metrics), n_resamples=bootstrap, seed=seed,
                               primary=split_names(primary, "--primary"), test=test,
                               names=names.split(",") if names is not None else
                               [variant.name for variant in variants] if variants else None,
                               primary_strata=primary_strata)
    shown_report = comparison_report(comparison)
    if variants:
        from recall_kit.decide.ablate import Ablation

        shown_report.summary[:0] = Ablation(variants[0].name, variants, comparison).verdict()
    document = comparison.to_dict()
    if bounds is not None:
        from recall_kit.curate.agreement import read_judgments
        from recall_kit.decide.holes import bounds_of_comparison
        from recall_kit.decide.holes_report import bound_sentence, bounds_table
        from recall_kit.progress import progress_display

        with progress_display():
            found = bounds_of_comparison(comparison, read_judgments(bounds), source=f"--bounds {bounds}")
        shown_report.tables.append(bounds_table(found))
        shown_report.summary.extend(bound_sentence(b) for b in found if b.scope == "overall")
        document["bounds"] = [b.to_dict() for b in found]
        shown_report.data = document
    shown = render_report(shown_report, report)  # before any file: all or nothing
    if json_out is not None:
        write_json_atomic(json_out, document)
        typer.echo(f"Wrote {json_out}", err=True)
    write_report(shown, output)


def _ablation_variants(results: list[Path]) -> "list[Variant] | None":
    """The result files as an ablation's variants, when they are one (`ablation_variants`)."""
    from recall_kit.decide.ablate import Variant, ablation_variants
    from recall_kit.measure.result import load_results

    loaded = [result for _, result in load_results(results)]
    found = ablation_variants(loaded)
    return None if found is None else [Variant(name, kind, legs, result)
                                       for (name, kind, legs), result in zip(found, loaded, strict=True)]


def gate_command(
    accepted: Annotated[Path, typer.Option("--accepted", "--baseline", metavar="PATH", help="The accepted result JSON (committed).")],
    current: Annotated[Path, typer.Option("--current", metavar="PATH", help="The result JSON to check.")],
    max_drop: Annotated[float, typer.Option("--max-drop", help="Largest drop allowed per metric.")] = 0.02,
    relative: Annotated[bool, typer.Option("--relative", help="--max-drop is a share of the accepted value, not an absolute drop.")] = False,
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

    check_outputs({"--output": output}, inputs={"--accepted": accepted, "--current": current})
    outcome = run_gate(accepted, current, max_drop=max_drop, relative=relative, metrics=split_names(metrics),
                       latency_max_rise=latency_max_rise, latency_stat=latency_stat, significant=significant,
                       per_stratum=per_stratum, n_resamples=bootstrap, seed=seed)
    emit_report(outcome.report(), report, output)
    if not outcome.passed:
        raise typer.Exit(1)


def agreement_command(
    first: Annotated[Path, typer.Argument(metavar="A", help="A qrels file (e.g. a model judge's).")],
    second: Annotated[Path, typer.Argument(metavar="B", help="Another qrels file of the same pool (e.g. yours, on a sample).")],
    binary: Annotated[bool, typer.Option("--binary", help="Compare relevant (grade >= 1) vs not, instead of grades.")] = False,
    samples: Annotated[int, typer.Option("--resamples", "--samples", metavar="INTEGER", help="Bootstrap resamples for the intervals (0: none).")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", metavar="PATH", help="Also write the numbers as JSON here.")] = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", "-d", metavar="PATH", help="The dataset the pairs come from: B against A per stratum of its queries.")] = None,
) -> None:
    """How far two judges agree on the pairs both judged: Cohen's kappa, linearly weighted kappa,
    bootstrap intervals, the confusion matrix; and B's relevant / not calls against A's as the
    reference (a person's labels as A, a judge as B): kappa, sensitivity and specificity with
    intervals, per stratum with --dataset. Warns below 0.6. Ids and numbers only."""
    from recall_kit.curate.agreement import agreement_files
    from recall_kit.decide.stats import check_resamples
    from recall_kit.fileio import check_outputs, write_json_atomic

    check_resamples(samples, minimum=0)  # 10**12 would ask for terabytes
    check_outputs({"--json": json_out}, inputs={"A": first, "B": second})  # before the bootstrap
    result = agreement_files(first, second, dataset, binary=binary, samples=samples, seed=seed)
    for line in result.lines():
        typer.echo(line)
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if json_out is not None:
        write_json_atomic(json_out, result.to_dict())
        typer.echo(f"Wrote {json_out}", err=True)
