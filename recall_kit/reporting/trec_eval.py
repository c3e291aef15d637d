"""trec_eval's own output, `measure \\t query \\t value` lines, for `score --report trec_eval`: its
column width, its number formats and its layout, so that a script reading trec_eval's output reads
recall-kit's unchanged. Which name each measure prints under and in what order is decided where the
runs are scored (`recall_kit.decide.score`); this module only writes the lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recall_kit.errors import OptionError
from recall_kit.types import Report, Reporter

if TYPE_CHECKING:  # registering the reporters (every command) imports no numpy
    import numpy as np


@dataclass(frozen=True)
class TrecEvalMeasure:
    """One measure as trec_eval prints it: recall-kit's name (the key of the values), the name
    printed, whether it prints as a whole number (counts: num_ret, ...) and whether it has
    per-query lines (not num_q, nor the geometric means gm_map and gm_bpref)."""

    name: str
    shown: str
    whole: bool
    per_query: bool


@dataclass(frozen=True)
class TrecEvalRun:
    """One scored run: its tag (the `runid` line; None when no measure set holding runid was
    asked), the queries in trec_eval's order, per-query values and each measure's summary."""

    runid: str | None
    query_ids: Sequence[str]
    values: Mapping[str, np.ndarray]
    overall: Mapping[str, float]


def _line(name: str, query: str, value: float, whole: bool) -> str:
    # trec_eval: printf("%-22s\t%s\t%6.4f\n") for values, "%ld" for counts (a C cast: truncation).
    return f"{name:<22}\t{query}\t{int(value) if whole else format(value, '6.4f')}\n"


def trec_eval_text(runs: Sequence[TrecEvalRun], measures: Sequence[TrecEvalMeasure], per_query: bool) -> str:
    """trec_eval's output for each run in turn (trec_eval itself takes one run a call), the
    `measures` in the order given: with `per_query` (``-q``) every query's lines first, then the
    ``all`` lines."""
    import numpy as np

    parts: list[str] = []
    for run in runs:
        if per_query:
            columns = {m.name: np.asarray(run.values[m.name], dtype=np.float64).tolist() for m in measures}
            for i, query_id in enumerate(run.query_ids):
                parts.extend(_line(m.shown, query_id, columns[m.name][i], m.whole) for m in measures if m.per_query)
        if run.runid is not None:
            parts.append(f"{'runid':<22}\tall\t{run.runid}\n")
        parts.extend(_line(m.shown, "all", run.overall[m.name], m.whole) for m in measures)
    return "".join(parts)


class TrecEvalReporter(Reporter):
    """trec_eval's own output lines (`score` only)."""

    description = "trec_eval's own output lines: measure, query, value (score only)"
    commands = ("score",)

    def render(self, report: Report) -> str:
        text = getattr(report, "trec_eval_text", None)
        if text is None:
            raise OptionError("The trec_eval report is for 'recall-kit score' (scores of TREC runs): "
                              "use table, markdown, csv, json or html here.")
        return str(text())
