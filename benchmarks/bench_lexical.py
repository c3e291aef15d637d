"""Benchmark the lexical retrievers (fts5 in both modes, bm25) on a synthetic memory corpus.

Builds a seeded corpus (Zipf-distributed vocabulary, 10-60 words a memory), then measures index
build time and single-query latency (p50/p95) for fts5 (mode=bm25 and mode=production) and bm25,
and compares bm25's batch path (`search_many`) with calling rank-bm25's `get_scores` directly on
the same tokens, checking that both give the same top 10 on a sample of queries.

    python benchmarks/bench_lexical.py              # 100,000 memories
    python benchmarks/bench_lexical.py --quick      # 10,000 memories
    python benchmarks/bench_lexical.py --memories 50000 --queries 500
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from recall_kit import Corpus, Hit, Memory, sort_hits

CATEGORIES = ["person", "preference", "project", "health", "travel", "finance", "home", "work",
              "family", "hobby", "food", "tech"]
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "da", "fu", "go", "hi", "ja",
             "ke", "po", "qui", "ze", "xa", "wy", "tor", "len", "mar", "sin", "dal", "ver"]


def make_vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """`size` distinct pseudo-words of 2-4 syllables."""
    words: dict[str, None] = {}
    while len(words) < size:
        count = int(rng.integers(2, 5))
        words["".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), count))] = None
    return list(words)


def make_corpus(memories: int, seed: int) -> tuple[Corpus, list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    vocabulary = make_vocabulary(50_000, rng)
    ranks = np.arange(1, len(vocabulary) + 1)
    zipf = 1.0 / ranks**1.07
    zipf /= zipf.sum()
    lengths = rng.integers(10, 61, memories)
    tokens = rng.choice(len(vocabulary), size=int(lengths.sum()), p=zipf)
    tags = vocabulary[2000:2200]
    keywords = rng.choice(len(vocabulary), size=(memories, 3), p=zipf)
    rows = []
    offset = 0
    for i, length in enumerate(lengths.tolist()):
        words = [vocabulary[t] for t in tokens[offset:offset + length]]
        offset += length
        rows.append(Memory(
            id=str(i + 1),
            content=" ".join(words),
            category=CATEGORIES[int(rng.integers(len(CATEGORIES)))],
            tags=tuple(tags[j] for j in rng.integers(0, len(tags), int(rng.integers(1, 4)))),
            expanded_keywords=" ".join(vocabulary[j] for j in keywords[i]),
            importance=round(float(rng.random()), 2),
        ))
    return Corpus(rows), vocabulary, zipf


def make_queries(corpus: Corpus, vocabulary: list[str], zipf: np.ndarray, count: int,
                 seed: int) -> list[str]:
    """Half copy 2-4 consecutive words of a random memory, half draw 2-5 words from the Zipf law."""
    rng = np.random.default_rng(seed + 1)
    cumulative = np.cumsum(zipf)
    queries = []
    for i in range(count):
        if i % 2 == 0:
            words = corpus[int(rng.integers(len(corpus)))].content.split()
            size = int(rng.integers(2, 5))
            start = int(rng.integers(0, max(1, len(words) - size)))
            queries.append(" ".join(words[start:start + size]))
        else:
            picks = np.minimum(np.searchsorted(cumulative, rng.random(int(rng.integers(2, 6)))),
                               len(vocabulary) - 1)
            queries.append(" ".join(vocabulary[j] for j in picks))
    return queries


def percentiles(milliseconds: list[float]) -> str:
    array = np.asarray(milliseconds)
    return f"p50 {np.percentile(array, 50):8.3f} ms   p95 {np.percentile(array, 95):8.3f} ms"


def timed_searches(retriever, queries: list[str], k: int) -> list[float]:
    retriever.search(queries[0], k)  # warm caches
    times = []
    for query in queries:
        started = time.perf_counter()
        retriever.search(query, k)
        times.append((time.perf_counter() - started) * 1000.0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 memories")
    parser.add_argument("--queries", type=int, default=1000, help="queries for latency and batch")
    parser.add_argument("--reference-queries", type=int, default=50,
                        help="queries run through rank-bm25's get_scores (it is slow)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    memories = 10_000 if args.quick else args.memories
    k = args.k

    from recall_kit_bm25 import BM25Retriever
    from recall_kit_bm25.retriever import make_reference
    from recall_kit_fts5 import FTS5Retriever

    print(f"recall-kit lexical benchmark: {memories:,} memories, {args.queries} queries, k={k}, "
          f"seed {args.seed}; Python {platform.python_version()}, {platform.machine()}")
    started = time.perf_counter()
    corpus, vocabulary, zipf = make_corpus(memories, args.seed)
    queries = make_queries(corpus, vocabulary, zipf, args.queries, args.seed)
    tokens_total = sum(len(m.searchable_text.split()) for m in corpus)
    print(f"corpus: {len(corpus):,} memories, {tokens_total / len(corpus):.1f} words a memory "
          f"(generated in {time.perf_counter() - started:.1f} s)\n")

    latency_queries = queries[: min(len(queries), 300)]
    for mode in ("bm25", "production"):
        retriever = FTS5Retriever(FTS5Retriever.Options(mode=mode))
        started = time.perf_counter()
        retriever.build_index(corpus)
        build = time.perf_counter() - started
        times = timed_searches(retriever, latency_queries, k)
        print(f"fts5 mode={mode:<10} build {build:7.2f} s   index {retriever.index_size_bytes() / 2**20:7.1f} MiB"
              f"   {percentiles(times)}  ({len(times)} queries)")
        retriever.close()

    bm25 = BM25Retriever()
    started = time.perf_counter()
    bm25.build_index(corpus)
    build = time.perf_counter() - started
    times = timed_searches(bm25, latency_queries, k)
    print(f"bm25 okapi            build {build:7.2f} s   index {bm25.index_size_bytes() / 2**20:7.1f} MiB"
          f"   {percentiles(times)}  ({len(times)} queries)")

    started = time.perf_counter()
    batch = bm25.search_many(queries, k)
    batch_seconds = time.perf_counter() - started
    batch_qps = len(queries) / batch_seconds
    print(f"bm25 search_many      {len(queries)} queries in {batch_seconds:.3f} s: {batch_qps:,.0f} queries/s")

    # rank-bm25 directly, on the very same tokens.
    documents = [bm25.tokens(memory.searchable_text) for memory in corpus]
    started = time.perf_counter()
    reference = make_reference(documents, bm25.parameters)
    reference_build = time.perf_counter() - started
    sample = queries[: args.reference_queries]
    ids = corpus.ids
    started = time.perf_counter()
    all_scores = [reference.get_scores(bm25.tokens(query)) for query in sample]
    reference_seconds = time.perf_counter() - started
    reference_qps = len(sample) / reference_seconds
    print(f"rank-bm25 get_scores  build {reference_build:7.2f} s   {len(sample)} queries in "
          f"{reference_seconds:.2f} s: {reference_qps:,.1f} queries/s")
    print(f"ratio: bm25 search_many is {batch_qps / reference_qps:,.0f}x rank-bm25's get_scores "
          "(queries/s, same tokens, same scores)")

    for query, scores, ours in zip(sample, all_scores, batch, strict=False):
        tokens = set(bm25.tokens(query))
        expected = sort_hits([Hit(ids[i], float(scores[i])) for i in range(len(ids))
                              if scores[i] != 0 and tokens & set(documents[i])])[:k]
        assert ours == expected, "bm25 and rank-bm25 disagree on a top 10"
    print(f"checked: identical top {k} (ids and float scores) on {len(sample)} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
