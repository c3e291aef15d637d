"""fts5 `mode=bm25` single-query latency, `ranking=numpy` against `ranking=sqlite`, in one process.

On `recall-kit dataset synth`'s data (the set bench_eval.py times the hybrid on: 6,000 memories,
2,000 queries by default), one fts5 retriever of each ranking is built over the same corpus; then
every query is searched by both, alternating which goes first, each call timed on its own (the
query's tokenization is cached after the first call, as it is in an eval's timed pass, so both
are timed warm). Every answer must be identical (ids, order, float scores); the build time of
each and the numpy ranking's arrays are printed too.

    python benchmarks/bench_fts5_ranking.py [--memories 6000] [--queries 2000]

Bar (exit 1 when missed): identical answers, and numpy p50 <= 0.25x sqlite's p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=6000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=100, help="hits per query (an eval's depth)")
    parser.add_argument("--quick", action="store_true", help="500 queries")
    args = parser.parse_args()
    from recall_kit_fts5 import FTS5Retriever

    from recall_kit import load_dataset
    from recall_kit.curate.synth import write_synthetic_dataset

    queries = 500 if args.quick else args.queries
    with tempfile.TemporaryDirectory(prefix="recall-kit-bench-fts5-") as folder:
        write_synthetic_dataset(folder, args.memories, queries, args.seed)
        dataset = load_dataset(folder)
    texts = [query.text for query in dataset.queries]
    built: dict[str, FTS5Retriever] = {}
    for ranking in ("sqlite", "numpy"):
        started = time.perf_counter()
        built[ranking] = FTS5Retriever(FTS5Retriever.Options(ranking=ranking))
        built[ranking].build_index(dataset.corpus)
        print(f"build ranking={ranking}: {time.perf_counter() - started:.3f} s")
    statistics_bytes = built["numpy"]._statistics.nbytes() if built["numpy"]._statistics else 0
    print(f"numpy ranking arrays: {statistics_bytes / 2**20:.1f} MiB")
    for retriever in built.values():  # tokenization cached, as in an eval's timed pass
        retriever.search_many(texts, args.k)
    times: dict[str, list[float]] = {"sqlite": [], "numpy": []}
    different = 0
    for index, text in enumerate(texts):
        order = ("sqlite", "numpy") if index % 2 == 0 else ("numpy", "sqlite")
        answers = {}
        for ranking in order:
            started = time.perf_counter()
            answers[ranking] = built[ranking].search(text, args.k)
            times[ranking].append((time.perf_counter() - started) * 1000.0)
        different += answers["numpy"] != answers["sqlite"]
    load = os.getloadavg()[0]
    print(f"fts5 mode=bm25, {len(dataset.corpus):,} memories, {len(texts):,} queries, k={args.k}, "
          f"load average {load:.2f}")
    for ranking, values in times.items():
        print(f"  ranking={ranking:6s} p50 {statistics.median(values):7.3f} ms  "
              f"p95 {percentile(values, 0.95):7.3f} ms  mean {statistics.fmean(values):7.3f} ms")
    ratio = statistics.median(times["numpy"]) / statistics.median(times["sqlite"])
    print(f"  numpy / sqlite p50: {ratio:.3f}; answers differing: {different} of {len(texts)}")
    missed = different > 0 or ratio > 0.25
    print(f"BAR fts5 numpy/sqlite p50: {ratio:.4g} (target <= 0.25, identical) {'FAIL' if missed else 'PASS'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
