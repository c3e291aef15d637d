"""`score -q` written a chunk of queries at a time (issue 52): the table, trec_eval's lines and the
JSON are byte for byte what the whole-document renderings give, on values chosen to test each
column's width (NaN, infinities, -0.0, negatives, large counts), and the per-query values are never
held as rows or as one document."""

from __future__ import annotations

import math
import random

import numpy as np
import orjson
import pytest

from recall_kit.decide import score
from recall_kit.decide.score import ScoredRun, ScoredRuns, score_files
from recall_kit.fileio import JsonChunks, _write_json
from recall_kit.reporting import trec_eval as trec_eval_report
from recall_kit.reporting.formats import StreamedTable, TableReporter, _simple_table
from recall_kit.reporting.trec_eval import TrecEvalMeasure, TrecEvalRun, _line, trec_eval_text
from recall_kit.testing import invoke_cli
from recall_kit.types import Report, ReportTable

SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, -0.00001, 0.99996, -12.5, 123456.78912, 1e-9]
NAMES = ["map", "num_ret", "ndcg@10", "recall@100"]


def _scored(seed: int, query_ids: list[str]) -> ScoredRuns:
    rng = random.Random(seed)
    values = {}
    for name in NAMES:
        if name == "num_ret":  # a count: shown whole
            values[name] = np.array([float(rng.choice([0, 7, 100, 123456])) for _ in query_ids])
        else:
            values[name] = np.array([rng.choice(SPECIAL) if rng.random() < 0.3 else rng.random() for _ in query_ids])
    with np.errstate(all="ignore"), __import__("warnings").catch_warnings(action="ignore"):
        overall = {name: float(np.nanmean(array)) if name != "num_ret" else float(array.sum()) for name, array in values.items()}
    run = ScoredRun("run.txt", "run.txt", query_ids, values, overall)
    return ScoredRuns([run], NAMES, "qrels.txt", labels={"ndcg@10": "ndcg_cut_10"})


def _whole(report: Report) -> Report:
    """The same report with every table holding its rows: what the table reporter drew before."""
    tables = [ReportTable(table.title, table.headers, table.rows, table.notes) for table in report.tables]
    return Report(title=report.title, tables=tables, notes=report.notes)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("width", [30, 200])  # a row per query and measure; a row of measures per query
def test_the_streamed_table_is_the_whole_tables_drawing_byte_for_byte(seed, width, monkeypatch):
    rng = random.Random(seed)
    query_ids = [rng.choice(["q", "", "topic-"]) + str(rng.randint(0, 10 ** rng.randint(1, 6))) for _ in range(rng.randint(1, 30))]
    query_ids = list(dict.fromkeys(query_ids))
    monkeypatch.setattr(score, "_chunks", lambda count: (slice(i, i + 4) for i in range(0, count, 4)))
    scored = _scored(seed, query_ids)
    scored.warnings.append("a warning")
    report = scored.report(per_query=True, width=width)
    streamed = [table for table in report.tables if isinstance(table, StreamedTable)]
    assert len(streamed) == 1
    for table in streamed:
        assert "\n".join(table.lines()) == _simple_table(ReportTable(table.title, table.headers, table.rows))
    assert TableReporter().render(report) == TableReporter().render(_whole(report))


def test_a_query_id_the_fast_drawing_does_not_take_leaves_the_table_to_whole_rows():
    scored = _scored(1, ["q1", "café"])
    report = scored.report(per_query=True, width=30)
    assert not any(isinstance(table, StreamedTable) for table in report.tables)


def test_trec_eval_lines_in_chunks_are_the_lines_one_by_one(monkeypatch):
    monkeypatch.setattr(trec_eval_report, "QUERIES_PER_CHUNK", 3)
    scored = _scored(3, [f"q{i}" for i in range(11)])
    (run,) = scored.runs
    measures = [TrecEvalMeasure(name, name, whole=name == "num_ret", per_query=True) for name in NAMES]
    measures.append(TrecEvalMeasure("map", "gm_map", whole=False, per_query=False))
    expected = "".join(_line(m.shown, qid, run.values[m.name][i], m.whole) for i, qid in enumerate(run.query_ids)
                       for m in measures if m.per_query)
    expected += "".join(_line(m.shown, "all", run.overall[m.name], m.whole) for m in measures)
    assert trec_eval_text([TrecEvalRun(None, run.query_ids, run.values, run.overall)], measures, True) == expected


@pytest.mark.parametrize("several", [False, True])
def test_the_json_in_chunks_is_one_orjson_document(several, tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(9) for d in range(4)))
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {1 / (d + 1)!r} t\n" for q in range(9) for d in range(6)))
    runs = [run, tmp_path / "other.txt"] if several else [run]
    if several:
        runs[1].write_text(run.read_text().replace("d1 ", "d9 "))
    scored = score_files(qrels, runs, ["map", "ndcg@10", "num_ret"], n_resamples=50)
    whole = orjson.dumps(scored.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    for run_scored in scored.runs:  # chunks of 2 queries
        object.__setattr__(run_scored, "query_chunks", lambda size=2000, r=run_scored: ScoredRun.query_chunks(r, 2))
    pieces: list[bytes] = []
    _write_json(pieces.append, scored.to_dict(streamed=True), 0)
    assert b"".join(pieces) == whole
    assert isinstance(scored.to_dict(streamed=True)["runs" if several else "queries"], list if several else JsonChunks)


def test_score_q_writes_each_output_a_chunk_of_queries_at_a_time(tmp_path, monkeypatch):
    # 50 queries, chunks of 7: no table is ever asked for its rows, no run for its whole document.
    run, qrels, out = tmp_path / "run.txt", tmp_path / "qrels.txt", tmp_path / "out.json"
    qrels.write_text("".join(f"q{q} 0 d{d} 1\n" for q in range(50) for d in range(0, 9, 2)))
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d} t\n" for q in range(50) for d in range(9)))
    expected = {report: invoke_cli(["score", "--qrels", str(qrels), "--run", str(run), "-m", "all_trec", "-q",
                                    "--report", report]).output for report in ("table", "trec_eval")}

    def no_rows(self):
        raise AssertionError("the streamed table was asked for its rows")

    def no_whole_document(self):
        assert self.n_queries <= 7, "every query's values held as one document"
        return whole_queries(self)

    whole_queries = ScoredRun.queries
    monkeypatch.setattr(StreamedTable, "rows", property(no_rows))
    monkeypatch.setattr(ScoredRun, "queries", no_whole_document)
    monkeypatch.setattr(ScoredRun, "query_chunks", lambda self, size=2000: _chunked(self, 7))
    monkeypatch.setattr(score, "_chunks", lambda count: (slice(i, i + 7) for i in range(0, count, 7)))
    monkeypatch.setattr(trec_eval_report, "QUERIES_PER_CHUNK", 7)
    for report in ("table", "trec_eval"):
        done = invoke_cli(["score", "--qrels", str(qrels), "--run", str(run), "-m", "all_trec", "-q",
                           "--report", report, "--json", str(out)])
        assert done.exit_code == 0, done.output
        assert done.output.replace(f"Wrote {out}\n", "") == expected[report]
        document = orjson.loads(out.read_bytes())
        assert len(document["queries"]) == 50 and document["overall"]["n"] == 50


def _chunked(run: ScoredRun, size: int):
    for first in range(0, run.n_queries, size):
        part = ScoredRun(run.label, run.source, run.query_ids[first:first + size],
                         {name: values[first:first + size] for name, values in run.values.items()}, {})
        yield part.queries()


def test_score_q_output_file_is_written_whole_or_not_at_all(tmp_path):
    run, qrels, out = tmp_path / "run.txt", tmp_path / "qrels.txt", tmp_path / "report.txt"
    qrels.write_text("q1 0 a 1\nq2 0 b 1\n")
    run.write_text("q1 Q0 a 1 1 t\nq2 Q0 c 1 1 t\n")
    printed = invoke_cli(["score", "--qrels", str(qrels), "--run", str(run), "-m", "map,P_5", "-q"])
    done = invoke_cli(["score", "--qrels", str(qrels), "--run", str(run), "-m", "map,P_5", "-q", "--output", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_text() == printed.output
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")] == []
