"""trec_eval's own output, `measure \\t query \\t value` lines, for `score --report trec_eval`: its
column width, its number formats and its layout, so that a script reading trec_eval's output reads
recall-kit's unchanged. Which name each measure prints under and in what order is decided where the
runs are scored (`recall_kit.decide.score`); this module only writes the lines."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

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


#: Queries whose lines are made at a time: the text of a few thousand queries is held, never a run's.
QUERIES_PER_CHUNK = 2000


def trec_eval_text(runs: Sequence[TrecEvalRun], measures: Sequence[TrecEvalMeasure], per_query: bool) -> str:
    """trec_eval's output for each run in turn (trec_eval itself takes one run a call), the
    `measures` in the order given: with `per_query` (``-q``) every query's lines first, then the
    ``all`` lines."""
    return "".join(trec_eval_chunks(runs, measures, per_query))


def trec_eval_chunks(runs: Sequence[TrecEvalRun], measures: Sequence[TrecEvalMeasure],
                     per_query: bool) -> Iterator[str]:
    """`trec_eval_text` in pieces of `QUERIES_PER_CHUNK` queries' lines: what `score -q --report
    trec_eval` streams. Each query's lines come from one template (its measures' names padded
    once), the values formatted a column at a time."""
    for run in runs:
        if per_query:
            shown = [m for m in measures if m.per_query]
            template = "".join(f"{m.shown:<22}".replace("{", "{{").replace("}", "}}") + f"\t{{0}}\t{{{k + 1}}}\n"
                               for k, m in enumerate(shown))
            for first in range(0, len(run.query_ids), QUERIES_PER_CHUNK):
                part = slice(first, first + QUERIES_PER_CHUNK)
                columns = [_formatted(run.values[m.name][part], m.whole) for m in shown]
                yield "".join(map(template.format, run.query_ids[part], *columns))
        if run.runid is not None:
            yield f"{'runid':<22}\tall\t{run.runid}\n"
        yield "".join(_line(m.shown, "all", run.overall[m.name], m.whole) for m in measures)


def _formatted(values: np.ndarray, whole: bool) -> list[str]:
    """Values as `_line` prints them, a column at a time (the loop over values in C)."""
    import numpy as np

    numbers = np.asarray(values, dtype=np.float64).tolist()
    return list(map(str, map(int, numbers))) if whole else list(map("{:6.4f}".format, numbers))


class TrecEvalReporter(Reporter):
    """trec_eval's own output lines (`score` only)."""

    description = "trec_eval's own output lines: measure, query, value (score only)"
    commands = ("score",)

    def render(self, report: Report) -> str:
        return "".join(self._chunks(report))

    def write(self, report: Report, stream: IO[str]) -> None:
        """`render`'s text written to `stream` a chunk of queries at a time."""
        for chunk in self._chunks(report):
            stream.write(chunk)

    @staticmethod
    def _chunks(report: Report) -> Iterator[str]:
        chunks = getattr(report, "trec_eval_chunks", None)
        if chunks is None:
            raise OptionError("The trec_eval report is for 'recall-kit score' (scores of TREC runs): "
                              "use table, markdown, csv, json or html here.")
        return iter(chunks())
