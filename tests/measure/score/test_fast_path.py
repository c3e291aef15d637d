"""`recall-kit score`'s fast paths (word reader, threads, one sort per query) against the general
ones, on generated files full of ties: every output byte the same."""

from __future__ import annotations

import json
import random

import pytest

from recall_kit.decide.score import score_files
from recall_kit.measure.score import join, trec

METRICS = ["recall@10", "recall@100", "ndcg@10", "mrr", "map", "precision@5", "num_rel_ret", "Rprec"]


def _write(tmp_path, shuffled: bool):
    rng = random.Random(5)
    run_lines, qrels_lines = [], []
    for q in range(40):
        docs = rng.sample(range(3000), rng.randint(1, 60))
        scores = sorted((rng.randint(0, 8) / 4 for _ in docs), reverse=True)  # many ties
        if shuffled:
            rng.shuffle(scores)
        run_lines += [f"q{q} Q0 {'dx' if d % 3 else 'D'}{d} {r} {s!r} t" for r, (d, s) in enumerate(zip(docs, scores), 1)]
        judged = rng.sample(docs, min(len(docs), rng.randint(0, 6))) + [rng.randrange(3000, 3100)]
        qrels_lines += [f"q{q} 0 {'dx' if d % 3 else 'D'}{d} {rng.randint(-1, 3)}" for d in dict.fromkeys(judged)]
    qrels_lines += ["q99 0 dx1 1"]  # a query the run lacks (-c scores it)
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("\n".join(run_lines) + "\n")
    qrels.write_text("\n".join(qrels_lines) + "\n")
    return run, qrels


def _outputs(run, qrels, **options):
    report = score_files(qrels, [run], METRICS, **options).report(per_query=True)
    return [table.rows for table in report.tables], report.notes, json.dumps(report.data)


@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("options", [{}, {"ties": "float64"}, {"complete": True, "relevance_level": 2},
                                     {"judged_only": True, "depth": 7}])
def test_fast_paths_print_what_the_general_paths_print(tmp_path, monkeypatch, shuffled, options):
    run, qrels = _write(tmp_path, shuffled)
    fast = _outputs(run, qrels, **options)
    monkeypatch.setattr(trec, "PARALLEL_BYTES", 256)  # the reader in parts, by threads
    monkeypatch.setattr(trec.os, "sched_getaffinity", lambda pid: range(3), raising=False)
    monkeypatch.setattr(join, "_CELLS_PER_STEP", 64)  # queries ordered and looked up in pieces, by threads
    assert _outputs(run, qrels, **options) == fast
    monkeypatch.setattr(join, "_order_in_blocks", lambda *args: None)  # one sort of every line
    monkeypatch.setattr(trec, "_fast_table", lambda *args, **kwargs: None)  # the exact line-by-line reader
    assert _outputs(run, qrels, **options) == fast


def test_a_query_in_two_blocks_and_a_repeated_document_take_the_general_path(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 b 1\n")
    run.write_text("q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq1 Q0 c 2 2 t\n")
    assert score_files(qrels, [run], ["mrr"]).runs[0].per_query("mrr")["q1"] == 0.5
    run.write_text("q1 Q0 a 1 1 t\nq1 Q0 a 2 0.5 t\n")
    with pytest.raises(Exception, match=r"run.txt:2: document 'a' appears twice"):
        score_files(qrels, [run], ["mrr"])


@pytest.mark.parametrize("options", [{}, {"complete": True}, {"judged_only": True}, {"depth": 5}])
def test_equally_deep_rankings_laid_out_directly_score_as_the_in_memory_path(tmp_path, options):
    # Every query ranked 20 deep and judged: `judge_tables` lays the lines out as they are.
    from recall_kit.decide.score import compare

    rng = random.Random(11)
    run_lines, qrels_lines, run_dict, qrels_dict = [], [], {}, {}
    for q in range(30):
        docs = rng.sample(range(500), 20)
        scores = sorted((rng.randint(0, 6) / 2 for _ in docs), reverse=True)
        run_lines += [f"q{q} Q0 d{d} {r} {s!r} t" for r, (d, s) in enumerate(zip(docs, scores), 1)]
        run_dict[f"q{q}"] = {f"d{d}": s for d, s in zip(docs, scores)}
        judged = {f"d{d}": rng.randint(0, 2) for d in rng.sample(docs, 4) + [rng.randrange(500, 600)]}
        qrels_lines += [f"q{q} 0 {doc} {grade}" for doc, grade in judged.items()]
        qrels_dict[f"q{q}"] = judged
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("\n".join(run_lines) + "\n")
    qrels.write_text("\n".join(qrels_lines) + "\n")
    from_files = score_files(qrels, [run], METRICS, **options).runs[0]
    in_memory = compare(qrels_dict, {"run.txt": run_dict}, METRICS, **options).runs[0]
    assert from_files.query_ids == in_memory.query_ids
    for name in from_files.values:
        assert from_files.values[name].tolist() == in_memory.values[name].tolist(), name


def test_the_reports_data_is_built_when_read_and_equals_to_dict(tmp_path):
    from recall_kit.reporting.formats import TableReporter

    run, qrels = _write(tmp_path, shuffled=False)
    scored = score_files(qrels, [run], METRICS)
    report = scored.report()
    TableReporter().render(report)
    assert report._data_of is not None  # the table did not need it
    assert report.data == scored.to_dict()
    assert report._data_of is None
