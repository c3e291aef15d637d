"""How fts5 and bm25 build and query cost grows with corpus size (10k, 100k, 1M memories), and
their peak memory, each size and retriever measured in its own subprocess.

The corpus is bench_lexical.py's (seeded, Zipf vocabulary, 10-60 words a memory). Per size and
retriever a child process generates the corpus, builds the index, times single queries (p50,
p95) and the batch path (search_many, queries/s); the parent reads the child's peak resident
memory with resource.getrusage(RUSAGE_CHILDREN).ru_maxrss (corpus objects included: that is what
an eval holds too). The corpus alone is measured the same way, as the baseline.

    python benchmarks/bench_scale.py            # 10k, 100k, 1M
    python benchmarks/bench_scale.py --quick    # 10k, 100k

`--retrievers fts5,bm25,bm25s` picks what is measured; bm25s (recall-kit's tokens, its own sparse
index) is the alternative bm25's memory is compared with.

Bars (exit 1 when missed): peak memory at 1M under 8 GiB for each retriever, bm25's at most
1.5 GiB (issue 30); build time grows
no worse than linearly (x10 memories -> at most x15 build seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def child(retriever: str, memories: int, queries: int, seed: int) -> None:
    """Run in the subprocess: print one JSON line of timings."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from bench_lexical import make_corpus, make_queries

    started = time.perf_counter()
    corpus, vocabulary, zipf = make_corpus(memories, seed)
    texts = make_queries(corpus, vocabulary, zipf, queries, seed)
    out: dict[str, float] = {"generate_seconds": time.perf_counter() - started}
    if retriever == "bm25s":
        out.update(bm25s_child(corpus, texts))
    elif retriever != "corpus":
        if retriever == "fts5":
            from recall_kit_fts5 import FTS5Retriever as Class
        else:
            from recall_kit_bm25 import BM25Retriever as Class
        index = Class()
        started = time.perf_counter()
        index.build_index(corpus)
        out["build_seconds"] = time.perf_counter() - started
        out["size_bytes"] = float(index.index_size_bytes() or 0)
        index.search(texts[0], 10)
        times = []
        for text in texts[:200]:
            started = time.perf_counter()
            index.search(text, 10)
            times.append((time.perf_counter() - started) * 1000.0)
        out["p50_ms"] = float(np.percentile(times, 50))
        out["p95_ms"] = float(np.percentile(times, 95))
        started = time.perf_counter()
        index.search_many(texts, 10)
        out["batch_qps"] = len(texts) / (time.perf_counter() - started)
        index.close()
    print(json.dumps(out))


def bm25s_child(corpus: object, texts: list[str]) -> dict[str, float]:
    """bm25s (the alternative that keeps its index as a sparse matrix) on recall-kit's tokens:
    build, then single-query and batch timings, as the retrievers are timed."""
    import bm25s
    import numpy as np
    from recall_kit_bm25 import BM25Retriever

    tokens = BM25Retriever().tokens
    started = time.perf_counter()
    model = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
    model.index([tokens(memory.searchable_text) for memory in corpus], show_progress=False)  # type: ignore[attr-defined]
    out = {"build_seconds": time.perf_counter() - started, "size_bytes": 0.0}
    query_tokens = [tokens(text) for text in texts]
    times = []
    for query in query_tokens[:200]:
        started = time.perf_counter()
        model.retrieve([query], k=10, show_progress=False, n_threads=1)
        times.append((time.perf_counter() - started) * 1000.0)
    out["p50_ms"] = float(np.percentile(times, 50))
    out["p95_ms"] = float(np.percentile(times, 95))
    started = time.perf_counter()
    model.retrieve(query_tokens, k=10, show_progress=False, n_threads=1)
    out["batch_qps"] = len(texts) / (time.perf_counter() - started)
    return out


def wrap(argv: list[str]) -> None:
    """Run in a fresh intermediate process: start the child, then read the peak memory of its only
    child with RUSAGE_CHILDREN (exact per measurement: no earlier child is counted)."""
    done = subprocess.run([sys.executable, __file__, "--child", *argv], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(done.returncode)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["peak_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # KiB on Linux
    print(json.dumps(row))


def measure(retriever: str, memories: int, queries: int, seed: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--wrap", retriever, str(memories), str(queries), str(seed)],
                          check=False, capture_output=True, text=True, env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""})
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{retriever} at {memories} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--wrap":
        wrap(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k only")
    parser.add_argument("--sizes", type=str, default=None, help="comma-separated memory counts")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--retrievers", type=str, default="fts5,bm25,bm25s",
                        help="comma-separated, of fts5, bm25, bm25s (the alternative, peak memory compared)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])

    results: dict[tuple[str, int], dict[str, float]] = {}
    print(f"{'retriever':9s} {'memories':>10s} {'build s':>9s} {'index MiB':>10s} {'p50 ms':>8s} "
          f"{'p95 ms':>8s} {'batch q/s':>10s} {'peak MiB':>9s}")
    # One child at a time; per size the corpus alone first, the baseline for the retrievers' peaks.
    for size in sizes:
        for retriever in ("corpus", *args.retrievers.split(",")):
            row = measure(retriever, size, args.queries, args.seed)
            results[(retriever, size)] = row
            peak = f"{row['peak_mib']:9.0f}"
            if retriever == "corpus":
                print(f"{'(corpus)':9s} {size:10,d} {'':>9s} {'':>10s} {'':>8s} {'':>8s} {'':>10s} {peak}"
                      f"   generated in {row['generate_seconds']:.1f} s")
                continue
            print(f"{retriever:9s} {size:10,d} {row['build_seconds']:9.2f} {row['size_bytes'] / 2**20:10.1f} "
                  f"{row['p50_ms']:8.3f} {row['p95_ms']:8.3f} {row['batch_qps']:10,.0f} {peak}")
    for retriever in args.retrievers.split(","):
        for small, large in pairwise(sizes):
            a, b = results[(retriever, small)], results[(retriever, large)]
            growth = b["build_seconds"] / a["build_seconds"]
            print(f"{retriever} x{large // small} memories: build x{growth:.1f}, p50 x{b['p50_ms'] / a['p50_ms']:.1f}, "
                  f"batch q/s x{b['batch_qps'] / a['batch_qps']:.2f}, peak memory x{b['peak_mib'] / a['peak_mib']:.1f}")
            if retriever != "bm25s":  # the alternative's own growth is printed above, not a bar on recall-kit
                bar(f"{retriever} build growth {small // 1000}k->{large // 1000}k", growth,
                    f"<= {1.5 * large / small:.0f}", growth <= 1.5 * large / small)
        if 1_000_000 in sizes:
            peak = results[(retriever, 1_000_000)]["peak_mib"]
            bar(f"{retriever} peak MiB at 1M", peak, "< 8192", peak < 8192)
    if 1_000_000 in sizes and "bm25" in args.retrievers.split(","):
        peak = results[("bm25", 1_000_000)]["peak_mib"]
        bar("bm25 peak MiB at 1M (issue 30)", peak, "<= 1536", peak <= 1536)
        if "bm25s" in args.retrievers.split(","):
            other = results[("bm25s", 1_000_000)]["peak_mib"]
            corpus = results[("corpus", 1_000_000)]["peak_mib"]
            print(f"bm25 / bm25s peak memory at 1M: {peak / other:.2f} (above the corpus alone: "
                  f"{(peak - corpus) / max(other - corpus, 1):.2f})")
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
