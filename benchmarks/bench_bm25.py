"""BM25 queries per second: recall-kit's bm25 leg against rank-bm25 and bm25s, same tokens, same run.

The corpus and queries are bench_lexical.py's (seeded, Zipf vocabulary, 10-60 words a memory).
All three libraries get the very same token lists (recall-kit's tokenizer output), so what is
compared is the scoring and top-k, not tokenization:

* recall-kit: `BM25Retriever.search_many(texts, 10)` (tokenizes inside; that cost is included).
* rank-bm25: `BM25Okapi.get_scores(tokens)` + argpartition top 10 (a sample: it is slow).
* bm25s: `BM25(method="robertson").retrieve([tokens...], k=10)` single-threaded (n_threads=1).

    python benchmarks/bench_bm25.py            # 100,000 memories
    python benchmarks/bench_bm25.py --quick    # 20,000 memories

Bars (exit 1 when missed): recall-kit >= 1x rank-bm25's queries/s; recall-kit >= 0.2x bm25s's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lexical import make_corpus, make_queries

MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="20,000 memories")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--reference-queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    memories = 20_000 if args.quick else args.memories
    k = 10

    import bm25s
    from recall_kit_bm25 import BM25Retriever
    from recall_kit_bm25.retriever import make_reference

    corpus, vocabulary, zipf = make_corpus(memories, args.seed)
    queries = make_queries(corpus, vocabulary, zipf, args.queries, args.seed)
    print(f"bm25 throughput: {len(corpus):,} memories, {len(queries)} queries, k={k}")

    ours = BM25Retriever()
    started = time.perf_counter()
    ours.build_index(corpus)
    ours_build = time.perf_counter() - started
    ours.search_many(queries[:20], k)  # warm
    started = time.perf_counter()
    ours.search_many(queries, k)
    ours_qps = len(queries) / (time.perf_counter() - started)

    documents = [ours.tokens(memory.searchable_text) for memory in corpus]
    query_tokens = [ours.tokens(query) for query in queries]

    started = time.perf_counter()
    reference = make_reference(documents, ours.parameters)
    reference_build = time.perf_counter() - started
    sample = query_tokens[: args.reference_queries]
    started = time.perf_counter()
    for tokens in sample:
        scores = reference.get_scores(tokens)
        top = np.argpartition(-scores, k)[:k]
        top[np.argsort(-scores[top])]
    reference_qps = len(sample) / (time.perf_counter() - started)

    model = bm25s.BM25(k1=ours.parameters.k1, b=ours.parameters.b, method="robertson")
    started = time.perf_counter()
    model.index(documents, show_progress=False)
    bm25s_build = time.perf_counter() - started
    # bm25s drops query tokens it has never seen; an all-unknown query is still a query.
    model.retrieve(query_tokens[:20], k=k, show_progress=False, n_threads=1)
    started = time.perf_counter()
    model.retrieve(query_tokens, k=k, show_progress=False, n_threads=1)
    bm25s_qps = len(query_tokens) / (time.perf_counter() - started)

    print(f"{'':12s} {'build s':>9s} {'queries/s':>11s}")
    print(f"{'recall-kit':12s} {ours_build:9.2f} {ours_qps:11,.0f}")
    print(f"{'rank-bm25':12s} {reference_build:9.2f} {reference_qps:11,.1f}   ({len(sample)} queries)")
    print(f"{'bm25s':12s} {bm25s_build:9.2f} {bm25s_qps:11,.0f}")
    bar("bm25 qps / rank-bm25", ours_qps / reference_qps, ">= 1", ours_qps >= reference_qps)
    bar("bm25 qps / bm25s", ours_qps / bm25s_qps, ">= 0.2", ours_qps >= 0.2 * bm25s_qps)
    bar("bm25 build / bm25s build", ours_build / bm25s_build, "<= 5", ours_build <= 5 * bm25s_build)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
