"""Where fts5 `mode=bm25` spends its time on a large corpus: bm25() per matching row, the join,
or matching itself. No bar: it explains finding 7 of CHANGELOG.md (performance history).

On bench_lexical.py's corpus (seeded, Zipf vocabulary) of `--memories` memories, for `--queries`
queries (OR of the query's words, as `mode=bm25` runs them), the p50 of:

* full:  the retriever's own statement (bm25() for every match, join to memories, sort, LIMIT k)
* rank:  bm25() for every match and the sort, without the join (`ORDER BY score LIMIT 2k`)
* count: matching only (`count(*)`)

    python benchmarks/bench_fts5_cost.py [--memories 100000] [--queries 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="10,000 memories")
    args = parser.parse_args()
    from bench_lexical import make_corpus, make_queries
    from recall_kit_fts5 import FTS5Retriever

    memories = 10_000 if args.quick else args.memories
    corpus, vocabulary, zipf = make_corpus(memories, args.seed)
    texts = make_queries(corpus, vocabulary, zipf, args.queries, args.seed)
    retriever = FTS5Retriever()
    retriever.build_index(corpus)
    connection = retriever._connection
    weights = retriever._weights()
    marks = ", ".join("?" for _ in weights)
    statements = {
        "full": (f"SELECT m.doc_id, -bm25(memories_fts, {marks}) AS score FROM memories_fts JOIN memories AS m"
                 " ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ? ORDER BY score DESC, m.doc_id DESC LIMIT ?",
                 True),
        "rank": (f"SELECT rowid, -bm25(memories_fts, {marks}) AS score FROM memories_fts"
                 " WHERE memories_fts MATCH ? ORDER BY score DESC LIMIT ?", True),
        "count": ("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", False),
    }
    times: dict[str, list[float]] = {name: [] for name in statements}
    for text in texts:
        phrases = retriever.phrases(text)
        if not phrases:
            continue
        match = " OR ".join(phrases)
        for name, (sql, ranked) in statements.items():
            parameters = (*weights, match, 20) if ranked else (match,)
            started = time.perf_counter()
            connection.execute(sql, parameters).fetchall()
            times[name].append(time.perf_counter() - started)
    print(f"fts5 mode=bm25, {memories:,} memories, {len(times['full'])} queries")
    for name, values in times.items():
        print(f"  {name:6s} p50 {statistics.median(values) * 1000:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
