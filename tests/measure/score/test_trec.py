"""TREC run and qrels files: round trips, error lines, and trec_eval's ranking order."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import pytrec_eval

from recall_kit.errors import DatasetError
from recall_kit.measure.score.trec import read_qrels, read_qrels_table, read_run, read_run_table, write_qrels, write_run
from recall_kit.types import Hit, sort_hits


def test_run_round_trip(tmp_path):
    rankings = {
        "q1": [Hit("d3", 2.5), Hit("d1", 1.0), Hit("d7", 1e-9)],
        "q2": [Hit("x", -0.1), Hit("y", -0.30000000000000004)],
    }
    path = tmp_path / "run.trec"
    write_run(path, rankings, tag="bm25")
    assert path.read_text().splitlines()[0] == "q1 Q0 d3 1 2.5 bm25"
    assert read_run(path) == rankings  # scores read back exactly


def test_qrels_round_trip(tmp_path):
    qrels = {"q1": {"d1": 2, "d2": 0, "d3": -1}, "7": {"137": 1}}
    path = tmp_path / "qrels.txt"
    write_qrels(path, qrels)
    assert path.read_text().splitlines()[0] == "q1 0 d1 2"
    assert read_qrels(path) == qrels


def test_read_run_orders_as_trec_eval_ignoring_the_rank_column(tmp_path):
    path = tmp_path / "run.trec"
    # Ranks say a, b, c, d; scores say otherwise. Ties (b, c, d at 1.0) go by docno descending.
    path.write_text(
        "q1 Q0 b 1 1.0 t\n"
        "q1 Q0 a 2 0.5 t\n"
        "q1 Q0 d 3 1.0 t\n"
        "q1\tQ0\tc\t4\t1\tt\n"  # tabs, and an integer score
        "q1 Q0 e 5 3e0 t\n"
        "\n"
    )
    assert [hit.id for hit in read_run(path)["q1"]] == ["e", "d", "c", "b", "a"]


def test_tie_order_equals_trec_eval(tmp_path):
    # Only "b" is relevant; where it lands decides recip_rank, in trec_eval and here.
    qrels = {"q": {"b": 1}}
    scores = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 2.0, "e": 0.0}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate({"q": scores})
    ranking = sort_hits([Hit(doc, score) for doc, score in scores.items()])
    assert [hit.id for hit in ranking] == ["d", "c", "b", "a", "e"]
    assert trec["q"]["recip_rank"] == 1 / 3


def test_scores_equal_in_float32_tie_as_in_trec_eval(tmp_path):
    # trec_eval keeps scores as C floats: 1.0 and 1.0 + 1e-9 tie and go by docno ("b" > "a").
    qrels = {"q": {"a": 1}}
    scores = {"a": 1.0 + 1e-9, "b": 1.0}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate({"q": scores})
    assert trec["q"]["recip_rank"] == 0.5
    hits = [Hit(doc, score) for doc, score in scores.items()]
    assert [hit.id for hit in sort_hits(hits)] == ["b", "a"]
    assert sort_hits(hits)[1].score == 1.0 + 1e-9  # the full score is kept
    path = tmp_path / "run.trec"
    write_run(path, {"q": hits}, tag="t")
    assert [hit.id for hit in read_run(path)["q"]] == ["b", "a"]


@pytest.mark.parametrize("seed", range(20))
def test_top_hits_is_sort_hits_cut_to_k(seed):
    # top_hits (argpartition + lexsort on an id rank) against sort_hits over Hit objects: ties
    # at float32 precision (1.0 vs 1.0 + 1e-9), -0.0 and 0.0, values past float32's range, ids
    # that sort differently as strings and as numbers, and a subset of candidates.
    import numpy as np

    from recall_kit.types import id_ranks, top_hits

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    ids = [str(i) for i in rng.permutation(n * 3)[:n]]
    pool = np.array([1.0, 1.0 + 1e-9, 0.5, -0.0, 0.0, -1.0, 1e39, -1e39, 0.25 + 1e-12, 0.25])
    scores = np.where(rng.random(n) < 0.6, rng.choice(pool, n), rng.normal(size=n))
    if seed % 2:
        with np.errstate(over="ignore"):
            scores = scores.astype(np.float32)
    rank = id_ranks(ids)
    candidates = np.flatnonzero(rng.random(n) < 0.5)
    for k in (1, 2, 5, 10, n - 1, n, n + 3):
        expected = sort_hits([Hit(ids[i], float(scores[i])) for i in range(n)])[:k]
        got = top_hits(scores, ids, k, rank)
        assert got == expected and [type(hit.score) for hit in got] == [float] * len(got)
        assert top_hits(scores, ids, k) == expected  # the rank computed when not given
        subset = sort_hits([Hit(ids[i], float(scores[i])) for i in candidates])[:k]
        assert top_hits(scores[candidates], ids, k, rank, candidates=candidates) == subset
    assert top_hits(scores, ids, 0, rank) == [] and top_hits(scores[:0], ids, 3, rank, candidates=candidates[:0]) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n", r"run.trec:2: expected 6 columns .*got 5"),
        ("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 high t\n", "run.trec:3: score .* is not a number: write ASCII digits"),
        ("q1 Q0 d1 1 nan t\n", "run.trec:1: score is NaN"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "run.trec:2: document 'd1' appears twice"),
    ],
)
def test_run_error_lines(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(DatasetError, match=message):
        read_run(path)


def test_same_document_in_two_queries_is_fine(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\n")
    assert set(read_run(path)) == {"q1", "q2"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", "qrels.txt:2: expected 4 columns"),
        ("q1 0 d1 1\nq1 0 d2 yes\n", "qrels.txt:2: relevance 'yes' is not an integer"),
        ("q1 0 d1 1\nq1 0 d1 2\n", "qrels.txt:2: document 'd1' is judged twice"),
    ],
)
def test_qrels_error_lines(tmp_path, text, message):
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    with pytest.raises(DatasetError, match=message):
        read_qrels(path)


def test_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="cannot read"):
        read_run(tmp_path / "nope.trec")


def test_write_run_is_atomic(tmp_path):
    path = tmp_path / "run.trec"
    write_run(path, {"q1": [Hit("d1", 1.0)]}, tag="old")
    with pytest.raises(DatasetError, match="whitespace"):
        write_run(path, {"q1": [Hit("d1", 1.0)], "q2": [Hit("bad id", 0.5)]}, tag="new")
    assert path.read_text() == "q1 Q0 d1 1 1.0 old\n"  # the old file is untouched
    assert os.listdir(tmp_path) == ["run.trec"]  # no temporary file left behind


def test_write_run_refuses_bad_tag(tmp_path):
    with pytest.raises(DatasetError):
        write_run(tmp_path / "run.trec", {}, tag="two words")


# trec_eval's own test suite reads these (test/qrels.test.with-comments, test/results.trunc).
def test_qrels_comment_lines_and_decimal_grades_read_as_trec_eval(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("# judged by hand\nq1 0 d1 3.0\n  # indented comment\nq1 0 d2 0\n\nq2 0 d9 1.7\n")
    # trec_eval reads a grade with atol(): the integer part.
    assert read_qrels(path) == {"q1": {"d1": 3, "d2": 0}, "q2": {"d9": 1}}


def test_run_fields_after_the_tag_and_comments_are_ignored(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("# a run\nq1 Q0 d1 1 0.5 tag extra fields\nq1 Q0 d2 2 0.9 tag\n")
    assert [hit.id for hit in read_run(path)["q1"]] == ["d2", "d1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2 1e2\n", "qrels.txt:2: relevance '1e2' is not an integer"),
        ("q1 0 d1 1\nq1 0 d2 1 extra\n", "qrels.txt:2: expected 4 columns"),
        ("# fine\nq1 0 d1 1\nq1 0 d2 .\n", "qrels.txt:3: relevance '.' is not an integer"),
    ],
)
def test_genuinely_malformed_qrels_still_refused(tmp_path, text, message):
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    with pytest.raises(DatasetError, match=message):
        read_qrels(path)


def test_tables_equal_the_exact_readers(tmp_path):
    """The fast array reader and the line-by-line reader give the same rows for a regular file."""
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels.txt"
    lines = [f"q{q} Q0 doc{d} {d + 1} {score} t" for q in range(3) for d, score in
             enumerate(["1.5", "-0.25", "3e2", "0.1000000000000000055511", "-0", "12", "7.", ".5"])]
    run_path.write_text("\n".join(lines))  # no final newline
    qrels_path.write_text("q0\t0\tdoc1\t2\nq1 0 doc9 0\nq2 0 doc3 -1\n")
    run, qrels = read_run_table(run_path), read_qrels_table(qrels_path)
    assert run.values.dtype.kind == "f" and qrels.values.dtype.kind == "i"
    rows = sorted(zip(run.query_ids.tolist(), run.doc_ids.tolist(), run.values.tolist()))
    exact = sorted((q.encode(), h.id.encode(), h.score) for q, hits in read_run(run_path).items() for h in hits)
    assert rows == exact  # bit for bit: float() and the vectorised parser agree
    assert sorted(zip(qrels.query_ids.tolist(), qrels.doc_ids.tolist(), qrels.values.tolist())) == sorted(
        (q.encode(), d.encode(), g) for q, judged in read_qrels(qrels_path).items() for d, g in judged.items())


def test_parse_floats_is_float_bit_for_bit():
    import random

    import numpy as np

    from recall_kit.measure.score.trec import _parse_floats

    rng = random.Random(7)
    texts = ["-0", "0.", "5.", ".5", "-.25", "1e5", "-1E-3", "inf", "-inf", "00012.50",
             "123456789012345", "1234567890123456", "0.30000000000000004"]
    texts += [repr(rng.uniform(-1e3, 1e3)) for _ in range(500)]
    texts += [f"{rng.uniform(-50, 50):.{rng.randrange(0, 10)}f}" for _ in range(500)]
    values = _parse_floats(np.array([text.encode() for text in texts]))
    for text, value in zip(texts, values.tolist()):
        assert (value, math.copysign(1, value)) == (float(text), math.copysign(1, float(text))), text


def test_non_utf8_bytes_are_refused_with_the_line(tmp_path):
    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d\xff 2 0.4 t\n")
    with pytest.raises(DatasetError, match=r"run.trec:2: not UTF-8"):
        read_run_table(path)
    empty = tmp_path / "empty.trec"
    empty.write_bytes(b"")
    assert len(read_run_table(empty).doc_ids) == 0 and read_run(empty) == {}


def test_fast_and_exact_readers_refuse_the_same_grades(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1_0\n")  # int() would take it; trec_eval's atol reads 1, we refuse it
    with pytest.raises(DatasetError, match="qrels.txt:1: relevance '1_0' is not an integer"):
        read_qrels_table(path)
    path.write_text("q1 0 d1 +2\nq1 0 d2 -1\n")
    assert read_qrels_table(path).values.tolist() == [2, -1]


@pytest.mark.parametrize("score", ["1_0", "\u0661\u0660", "\uff11", "0x10", "1.5abc", "1e", "."])
def test_scores_trec_eval_reads_differently_are_refused_by_both_readers(tmp_path, score):
    # float() reads "1_0" and "١٠" as 10 where trec_eval's atof reads 1 (and 0): the ranking
    # would change silently. "0x10" atof reads as 16, "1.5abc" as 1.5; float() refuses both.
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d1 1 5 t\nq1 Q0 d2 2 {score} t\n", encoding="utf-8")
    for reader in (read_run, read_run_table):
        with pytest.raises(DatasetError, match=r"run.trec:2: score .* is not a number: write ASCII digits"):
            reader(path)


def test_scores_in_c_syntax_read_alike_in_both_readers(tmp_path):
    path = tmp_path / "run.trec"
    texts = ["+3", "-2.5e1", "1E2", ".5", "5.", "inf", "-Infinity", "1234567890123456789"]
    path.write_text("".join(f"q1 Q0 d{i} 1 {text} t\n" for i, text in enumerate(texts)))
    table = read_run_table(path)
    assert sorted(table.values.tolist()) == sorted(float(text) for text in texts)
    assert sorted(hit.score for hit in read_run(path)["q1"]) == sorted(float(text) for text in texts)


@pytest.mark.parametrize("grade", ["1_0", "\u0661", "1e2", "0x1"])
def test_grades_trec_eval_reads_differently_are_refused(tmp_path, grade):
    path = tmp_path / "qrels.txt"
    path.write_text(f"q1 0 d0 1\nq1 0 d1 {grade}\n", encoding="utf-8")
    for reader in (read_qrels, read_qrels_table):
        with pytest.raises(DatasetError, match=r"qrels.txt:2: relevance .* is not an integer"):
            reader(path)


@pytest.mark.parametrize("name", ["run.trec", "qrels.txt"])
def test_a_byte_order_mark_is_refused_by_every_trec_reader(tmp_path, name):
    # With the BOM the first query id would be "\ufeffq1": a different query, different numbers.
    path = tmp_path / name
    line = "q1 Q0 d1 1 0.5 t\n" if name == "run.trec" else "q1 0 d1 1\n"
    path.write_bytes(b"\xef\xbb\xbf" + line.encode())
    readers = (read_run, read_run_table) if name == "run.trec" else (read_qrels, read_qrels_table)
    for reader in readers:
        with pytest.raises(DatasetError, match=rf"{name}:1: begins with a UTF-8 byte order mark"):
            reader(path)


def test_scores_read_as_words_are_float_bit_for_bit():
    # Scores of up to 8 characters are parsed eight bytes at a time; longer ones and other
    # syntax fall back to _parse_floats: every one must equal float(), sign of zero included.
    import random

    import numpy as np

    from recall_kit.measure.score.trec import _column_words, _parse_score_words

    rng = random.Random(11)
    texts = ["0", "-0", "0.", "-0.", ".5", "-.5", "7", "12345678", "-1234567", "9999999.",
             "0.000001", "-0.00001", "1.5", "0.984375", "00000001", "1e5", "+3", "inf",
             "123456789", "-12.3456789", "0.30000000000000004"]
    texts += [f"{rng.uniform(-99, 99):.{rng.randrange(0, 6)}f}"[:8].rstrip(".") or "0" for _ in range(2000)]
    texts += [repr(rng.uniform(-1e3, 1e3)) for _ in range(200)]
    raw = "".join(f"{text}\n" for text in texts).encode()
    words = np.zeros(len(raw) // 8 + 3, dtype=">u8")
    words.view(np.uint8)[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 10)
    starts = np.concatenate([[0], ends[:-1] + 1])
    values = _parse_score_words(_column_words(words, starts, ends - starts), ends - starts)
    for text, value in zip(texts, values.tolist()):
        assert (value, math.copysign(1, value)) == (float(text), math.copysign(1, float(text))), text


def test_a_large_file_read_in_parts_equals_one_part_and_the_exact_reader(tmp_path, monkeypatch):
    # Above PARALLEL_BYTES a file is cut at line ends and read by threads: same rows, same order;
    # a refused score in the last part still names its line.
    from recall_kit.measure.score import trec

    path = tmp_path / "run.trec"
    lines = [f"q{q % 7} Q0 d{(q * 37 + d) % 101}x{q} {d + 1} {(q * d) % 17 / 4} t"
             for q in range(60) for d in range(9)]
    path.write_text("\n".join(lines) + "\n")
    whole = trec.read_run_table(path)
    monkeypatch.setattr(trec, "PARALLEL_BYTES", 512)
    monkeypatch.setattr(trec.os, "sched_getaffinity", lambda pid: range(4), raising=False)
    parts = trec.read_run_table(path)
    for name in ("query_ids", "doc_ids", "values"):
        assert getattr(parts, name).tolist() == getattr(whole, name).tolist()
    exact = sorted((q.encode(), h.id.encode(), h.score) for q, hits in read_run(path).items() for h in hits)
    assert sorted(zip(parts.query_ids.tolist(), parts.doc_ids.tolist(), parts.values.tolist())) == exact
    path.write_text("\n".join(lines[:-1] + ["q1 Q0 dz 9 1_0 t"]) + "\n")
    with pytest.raises(DatasetError, match=rf"run.trec:{len(lines)}: score '1_0' is not a number"):
        trec.read_run_table(path)


def test_short_fields_at_the_end_of_a_file_with_long_ones_read_alike(tmp_path):
    # Fields are read in as many 8-byte words as the column's longest: a short field near the
    # end of the file must not read past it (an IndexError once).
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a-document-id-of-thirty-bytes 1 0.5 t\nq1 Q0 d 2 0.25 t\nq2 Q0 e 1 1 t\n")
    table = read_run_table(path)
    exact = sorted((q.encode(), h.id.encode(), h.score) for q, hits in read_run(path).items() for h in hits)
    assert sorted(zip(table.query_ids.tolist(), table.doc_ids.tolist(), table.values.tolist())) == exact


def test_a_nul_byte_in_an_id_is_refused_by_both_readers(tmp_path: Path) -> None:
    """Issue 72 (fuzzing): numpy's bytes arrays dropped a trailing NUL, so the fast reader read id "",
    the exact one "\\x00" (and trec_eval's C strings end there): refused, naming the line."""
    from recall_kit.errors import DatasetError
    from recall_kit.measure.score.trec import read_qrels_table, read_run, read_run_table

    run = tmp_path / "run.txt"
    run.write_bytes(b"q Q0 a 1 1.0 t\nq Q0 b\x00 2 0.5 t\n")
    for reader in (read_run, read_run_table):
        with pytest.raises(DatasetError, match=r"run.txt:2: holds a NUL byte"):
            reader(run)
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(b"\x00 0 a 1\n")
    with pytest.raises(DatasetError, match=r"qrels.txt:1: holds a NUL byte"):
        read_qrels_table(qrels)
