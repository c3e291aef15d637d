"""trec_eval's own output, `measure \\t query \\t value` lines, for `score --report trec_eval`: its
measure names, its column width, its order and its number formats, so that a script reading
trec_eval's output reads recall-kit's unchanged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from recall_kit.errors import OptionError
from recall_kit.measure.metric_names import TREC_EVAL_PRINT_ORDER, MetricSpec, resolve_metrics, trec_eval_name
from recall_kit.types import Report, Reporter


@dataclass(frozen=True)
class TrecEvalRun:
    """One scored run as trec_eval prints it: the run's tag (its `runid` line, None when no measure
    set holding runid was asked), the queries in trec_eval's order, per-query values and the
    summary of each metric (recall-kit's names)."""

    runid: str | None
    query_ids: Sequence[str]
    values: Mapping[str, np.ndarray]
    overall: Mapping[str, float]


def _line(name: str, query: str, value: float, whole: bool) -> str:
    # trec_eval: printf("%-22s\t%s\t%6.4f\n") for values, "%ld" for counts (a C cast: truncation).
    return f"{name:<22}\t{query}\t{int(value) if whole else format(value, '6.4f')}\n"


def _ordered(specs: Sequence[MetricSpec]) -> list[tuple[MetricSpec, str]]:
    """Each metric with the name trec_eval prints, in trec_eval's order (its measures.c table;
    within a family, the order asked); measures trec_eval lacks keep recall-kit's name, last."""
    rank = {family: i for i, family in enumerate(TREC_EVAL_PRINT_ORDER)}
    keyed = []
    for position, spec in enumerate(specs):
        names = trec_eval_name(spec)
        family, shown = names if names is not None else ("", spec.name)
        keyed.append(((rank.get(family, len(rank)), position), spec, shown))
    return [(spec, shown) for _, spec, shown in sorted(keyed, key=lambda item: item[0])]


def trec_eval_text(runs: Sequence[TrecEvalRun], per_query: bool) -> str:
    """trec_eval's output for each run in turn (trec_eval itself takes one run a call): with
    `per_query` (``-q``) every query's lines first, then the ``all`` lines. As trec_eval, no
    per-query line for num_q or the geometric means (gm_map, gm_bpref), whose per-query values are
    logs; counts (num_ret, num_rel, ...) print as whole numbers."""
    parts: list[str] = []
    for run in runs:
        specs = resolve_metrics(list(run.values))
        ordered = _ordered(specs)
        if per_query:
            columns = {spec.name: np.asarray(run.values[spec.name], dtype=np.float64).tolist() for spec, _ in ordered}
            shown_per_query = [(spec, shown) for spec, shown in ordered
                               if spec.metric.summary == "mean" or (spec.metric.summary == "sum" and spec.metric.name != "num_q")]
            for i, query_id in enumerate(run.query_ids):
                parts.extend(_line(shown, query_id, columns[spec.name][i], spec.metric.summary == "sum")
                             for spec, shown in shown_per_query)
        if run.runid is not None:
            parts.append(f"{'runid':<22}\tall\t{run.runid}\n")
        parts.extend(_line(shown, "all", run.overall[spec.name], spec.metric.summary == "sum") for spec, shown in ordered)
    return "".join(parts)


class TrecEvalReporter(Reporter):
    """trec_eval's own output lines (`score` only)."""

    description = "trec_eval's own output lines: measure, query, value (score only)"

    def render(self, report: Report) -> str:
        text = getattr(report, "trec_eval_text", None)
        if text is None:
            raise OptionError("The trec_eval report is for 'recall-kit score' (scores of TREC runs): "
                              "use table, markdown, csv, json or html here.")
        return str(text())
