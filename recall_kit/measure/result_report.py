"""Presenting one result (`eval`'s report): the metrics per stratum, costs, leg attribution, hits
outside the corpus, per-query values, charts and provenance. It computes nothing: the numbers come
from the BenchmarkResult (result.py), as compare_report.py presents a comparison."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from recall_kit.measure.result import BenchmarkResult
from recall_kit.measure.result_sections import PRIVACY_PREFIX, LatencyStats
from recall_kit.reporting.formats import format_table
from recall_kit.types import Chart, Report, ReportTable


def _format(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return value


def _or_unknown(value: Any) -> Any:
    return "?" if value is None else value


def _entries_text(entries: Sequence[tuple[str, str, str]]) -> str:
    """Option entries as one line: ``dense.model=x; fusion rrf.k=60``."""
    return "; ".join(f"{part}.{key}={value}" for part, key, value in entries)


def scoring_notes(result: BenchmarkResult) -> list[str]:
    """What a reader must know about how relevance was scored, when it is not the default."""
    notes = []
    if result.relevance_level != 1:
        notes.append(f"relevant: grade >= {result.relevance_level} (trec_eval -l)")
    if result.judged_only:
        notes.append("judged only: unjudged ids were dropped from each ranking (trec_eval -J)")
    return notes


def provenance(result: BenchmarkResult, hidden: Collection[tuple[str, str, str]] = ()) -> list[tuple[str, str]]:
    """What `result` measured, for a report's header: dataset, fingerprint, the versions and
    platform it ran on, when, and the system's options (less the `hidden` ones)."""
    memories = "?" if result.dataset.memories is None else result.dataset.memories
    rows = [("dataset", f"{result.dataset.display_name} ({memories} memories, {len(result.queries)} queries), "
                        f"fingerprint {(result.fingerprint or '?')[:12]}")]
    manifest = result.manifest
    versions = ", ".join([f"recall-kit {manifest.recall_kit or '?'}",
                          *(f"{name} {version or '?'}" for name, version in manifest.plugins.items())])
    rows.append(("software", f"{versions}; Python {_or_unknown(manifest.python)} on {_or_unknown(manifest.platform)}"))
    rows.append(("run at", f"{_or_unknown(manifest.time)} (seed {_or_unknown(manifest.seed)}, k {result.k})"))
    rows.append((f"system {result.label}", result.system.settings(hidden)))
    return rows


def metrics_table(result: BenchmarkResult) -> ReportTable:
    """The mean of each metric, overall and per stratum, with the query counts."""
    names = result.metric_names
    rows = [["overall", result.n_queries, *(_format(result.mean(m)) for m in names)]]
    for stratum in result.strata:
        rows.append([stratum, result.stratum_size(stratum), *(_format(result.mean(m, stratum)) for m in names)])
    whole = [name for name in names if "@" not in name]
    notes = []
    if whole:
        # A metric without a cutoff reads the whole ranking, and the ranking is the top k.
        notes.append(f"{', '.join(whole)}: computed over the top {result.k} (the scored depth k).")
    notes += scoring_notes(result)
    return ReportTable(title=f"{result.label} on {result.dataset.name}",
                       headers=["stratum", "n", *names], rows=rows, notes=notes)


def per_query_table(result: BenchmarkResult) -> ReportTable:
    """Each query's metric values, in the result's query order (trec_eval ``-q``)."""
    names = result.metric_names
    rows = [[query.query_id, query.stratum, *(_format(query.metrics[m]) for m in names)]
            for query in result.queries]
    return ReportTable(title=f"{result.label}: per query", headers=["query", "stratum", *names], rows=rows)


def _milliseconds(stats: LatencyStats) -> list[Any]:
    # With --latency-sample 0 nothing was timed: say so rather than print 0.0000 ms.
    if not stats.measured:
        return ["not measured"] * 3
    return [_format(stats.stat(key)) for key in ("p50", "p95", "p99")]


def cost_table(result: BenchmarkResult) -> ReportTable:
    """Each leg's (and the system's) latency percentiles, build time and index size."""
    latency = result.latency
    index = result.index
    rows = []
    for name, leg in index.legs.items():
        rows.append([name, *_milliseconds(latency.leg(name)), _format(leg.build_seconds),
                     leg.size_bytes if leg.size_bytes is not None else "n/a"])
    if len(index.legs) > 1:
        rows.append(["system", *_milliseconds(latency), _format(index.build_seconds),
                     index.size_bytes if index.size_bytes is not None else "n/a"])
    qps = result.throughput.queries_per_second
    timed = (f"single-query latency over {latency.n} queries" if latency.measured
             else "single-query latency not measured (--latency-sample 0)")
    notes = [f"{timed}; batch throughput {qps} queries/s{_throughput_measures(result)}"]
    for name, stats in latency.legs.items():
        if stats.wait is not None and stats.wait.measured and stats.overhead is not None:
            # a leg that waits on an outside system
            notes.append(f"{name}: p50 {_format(stats.wait.stat('p50'))} ms waiting on the system it calls, "
                         f"{_format(stats.overhead.stat('p50'))} ms client overhead")
    return ReportTable(
        title="Cost",
        headers=["leg", "p50 ms", "p95 ms", "p99 ms", "build s", "index bytes"],
        rows=rows,
        notes=notes,
    )


def _throughput_measures(result: BenchmarkResult) -> str:
    """What the batch throughput measured, for the legs that say how many of the batch's query
    embeddings came from a cache (`cached_query_embeddings`, dense's query cache): a cache read is
    not the model's speed."""
    said = {name: leg.stats["cached_query_embeddings"] for name, leg in result.index.legs.items()
            if isinstance(leg.stats.get("cached_query_embeddings"), int)}
    if not said:
        return ""
    cached = {name: count for name, count in said.items() if count > 0}
    if not cached:
        return " (cold: every query embedded)"
    legs = ", ".join(f"{name} {count} of {result.throughput.queries}" for name, count in cached.items())
    return (f" (with the query-embedding cache: {legs} read from it; "
            "-o dense.query_cache=false measures it cold)")


def attribution_table(result: BenchmarkResult) -> ReportTable | None:
    """What each leg contributed (systems of two legs or more; None otherwise)."""
    attribution = result.attribution
    if len(attribution) < 2:
        return None
    rows = [[name, v.relevant_in_top_k, v.relevant_only_this_leg, v.relevant_pushed_out, v.unique_in_top_k]
            for name, v in attribution.items()]
    k = result.k if result.attribution_depth is None else result.attribution_depth
    return ReportTable(
        title=f"What each leg contributed (measured at depth {k})",
        headers=["leg", f"relevant in top {k}", "relevant only it found", "relevant pushed out",
                 f"its own ids in top {k}"],
        rows=rows,
        notes=[f"a leg found a document when it ranked it in its own top {k}; "
               f"pushed out: relevant ids in the leg's own top {k} that the fused top {k} lost"],
    )


def outside_table(result: BenchmarkResult) -> ReportTable:
    """Each live leg's hits outside the corpus and, as a privacy finding, its sensitive hits."""
    rows = [[leg, found.hits, len(found.queries), found.sensitive_hits, len(found.sensitive)]
            for leg, found in result.outside_corpus.items()]
    notes = ["outside: ids the evaluated corpus does not hold, scored as unjudged, non-relevant hits"]
    return ReportTable(title="Hits outside the corpus (live legs)",
                       headers=["leg", "outside hits", "queries", "sensitive hits", "sensitive queries"],
                       rows=rows, notes=notes)


def result_charts(result: BenchmarkResult) -> list[Chart | dict[str, Any]]:
    """The metrics per stratum as bars, and the single-query latencies as a histogram."""
    bars = {stratum: {m: result.mean(m, None if stratum == "overall" else stratum) for m in result.metric_names}
            for stratum in ["overall", *result.strata]}
    return [Chart(kind="bar", title="Metrics per stratum", groups=bars),
            Chart(kind="histogram", title="Single-query latency (ms)", values=result.latencies())]


def result_report(result: BenchmarkResult, per_query: bool = False) -> Report:
    """The eval report: metrics per stratum, costs, leg attribution; with `per_query`, also
    each query's values (trec_eval ``-q``)."""
    tables = [metrics_table(result), cost_table(result)]
    if any(found.hits for found in result.outside_corpus.values()):  # not an all-zero table per live run
        tables.append(outside_table(result))
    attribution = attribution_table(result)
    if attribution is not None:
        tables.append(attribution)
    if per_query:
        tables.append(per_query_table(result))
    entries = result.system.option_entries()
    # The privacy finding is the command's one line on stderr (`eval`), not a note here too:
    # the outside table's sensitive columns carry its numbers.
    notes = [warning for warning in result.warnings if not warning.startswith(PRIVACY_PREFIX)]
    return Report(title=f"recall-kit eval: {result.label}", tables=tables,
                  notes=notes, data=result.to_dict(),
                  charts=result_charts(result), provenance=provenance(result, hidden=entries),
                  provenance_details=[("options", _entries_text(entries))] if entries else [])


def result_summary(result: BenchmarkResult) -> str:
    """The overall and per-stratum metrics as a plain-text table."""
    return format_table(metrics_table(result), "simple")
