"""`recall-kit score ... --per-query | head -1`: the reader stops early, and recall-kit exits 141
quietly, as a Unix tool killed by SIGPIPE does (issue 60: a streaming reporter's BrokenPipeError
was called the reporter's failure, exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_score_per_query_into_a_reader_that_stops_after_one_line_exits_141_quietly(tmp_path: Path) -> None:
    run, qrels = tmp_path / "a.run", tmp_path / "q.trec"
    queries = range(3000)  # far past a pipe's buffer: the write always finds the reader gone
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d} r\n" for q in queries for d in range(10)), encoding="utf-8")
    qrels.write_text("".join(f"q{q} 0 d{q % 7} 1\n" for q in queries), encoding="utf-8")
    for _ in range(3):
        process = subprocess.Popen([sys.executable, "-m", "recall_kit", "score", "--run", str(run), "--qrels",
                                    str(qrels), "--per-query"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline()
        process.stdout.close()  # `| head -1`
        err = process.stderr.read().decode()
        assert process.wait(timeout=120) == 141, err
        assert err == ""
