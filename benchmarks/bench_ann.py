"""Exact dense search (numpy, what `dense` does with index=exact) against ANN indexes (hnswlib
HNSW, faiss IVF-Flat) on random normalised float32 vectors: speed and recall@10 against exact.

Vectors: N x 384 unit float32 rows in N/50 clusters around random unit centres (cosine to the
centre ~0.7; iid random vectors have no meaningful top 10). Queries: a random stored vector plus
Gaussian noise of norm ~0.3, renormalised, so each query has a true neighbourhood. Exact top 10 is a matrix product plus argpartition,
in blocks of queries; single-query latency is one query at a time, the hot path of `search`.

    python benchmarks/bench_ann.py              # 1,000,000 vectors
    python benchmarks/bench_ann.py --quick      # 100,000 vectors
    python benchmarks/bench_ann.py --only hnswlib   # one ANN library (a 1M build takes many minutes)

hnswlib is built with the dense plugin's defaults (M 16, ef_construction 200; `--m`,
`--ef-construction`); its ef and faiss's nprobe are chosen here: the smallest of a doubling sweep (ef 64-1024,
nprobe 32-512) whose recall@10 on the first half of the queries reaches --target (0.95); the
speed-ups are reported at that setting.

Bars (exit 1 when missed): each ANN's recall@10 >= --target (0.95) against exact; HNSW
single-query p50 at least 10x faster than exact.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def exact_top_k(matrix: np.ndarray, queries: np.ndarray, k: int, block: int = 64) -> np.ndarray:
    out = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), block):
        scores = queries[start:start + block] @ matrix.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1)
        out[start:start + block] = np.take_along_axis(part, order, axis=1)
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(a.tolist()) & set(b.tolist())) / len(b) for a, b in zip(found, truth, strict=True)]))


def single_latency(search, queries: np.ndarray) -> float:
    times = []
    for query in queries:
        started = time.perf_counter()
        search(query[None, :])
        times.append((time.perf_counter() - started) * 1000.0)
    return float(np.median(times))


def choose(settings: list[int], search, queries: np.ndarray, truth: np.ndarray, target: float) -> tuple[int, list[str]]:
    """The smallest setting (hnswlib's ef, faiss's nprobe) whose recall@10 on the tuning half of
    the queries reaches `target`, else the largest tried; with one line per setting tried."""
    tried = []
    for setting in settings:
        labels = search(setting, queries)
        rec = recall(labels, truth)
        tried.append(f"{setting}: {rec:.3f}")
        if rec >= target:
            return setting, tried
    return settings[-1], tried


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 vectors")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--latency-queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--m", type=int, default=16, help="hnswlib M (the dense plugin's ann_m default)")
    parser.add_argument("--ef-construction", type=int, default=200,
                        help="hnswlib ef_construction (the dense plugin's ann_ef_construction default)")
    parser.add_argument("--only", choices=("hnswlib", "faiss"), help="run one ANN library, not both")
    parser.add_argument("--exact-latency-queries", type=int, default=10,
                        help="queries timed one at a time for exact (each scans every vector)")
    parser.add_argument("--target", type=float, default=0.95,
                        help="recall@10 the ef / nprobe sweep aims for (chosen on half the queries)")
    args = parser.parse_args()
    n = 100_000 if args.quick else args.vectors
    k = 10
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    # Random unit centres, each with ~50 members around it (member.centre ~ 0.7): embeddings of a
    # real corpus cluster by topic; iid random vectors have no meaningful top 10 to recall.
    centres = rng.standard_normal((max(1, n // 50), args.dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    matrix = np.empty((n, args.dim), dtype=np.float32)
    for start in range(0, n, 100_000):  # in slices: no float64 copy of the whole matrix
        size = min(100_000, n - start)
        chunk = centres[rng.integers(0, len(centres), size)]
        chunk += rng.standard_normal((size, args.dim), dtype=np.float32) / np.sqrt(args.dim)
        matrix[start:start + size] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    picks = rng.integers(0, n, args.queries)
    queries = matrix[picks] + rng.standard_normal((args.queries, args.dim), dtype=np.float32) * (0.3 / np.sqrt(args.dim))
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    print(f"dense search: {n:,} x {args.dim} float32 ({matrix.nbytes / 2**30:.2f} GiB), "
          f"{args.queries} queries, k={k} (made in {time.perf_counter() - started:.1f} s)")
    latency_queries = queries[: args.latency_queries]
    # ef and nprobe are chosen on the first half of the queries; recall is reported on all.
    tune = len(queries) // 2

    started = time.perf_counter()
    truth = exact_top_k(matrix, queries, k)
    exact_qps = len(queries) / (time.perf_counter() - started)
    exact_p50 = single_latency(lambda q: exact_top_k(matrix, q, k), latency_queries[: args.exact_latency_queries])
    rows = [("numpy exact", 0.0, exact_qps, exact_p50, 1.0)]

    try:
        import hnswlib
        if args.only == "faiss":
            hnswlib = None
    except ImportError:
        hnswlib = None
        print("hnswlib not installed: skipped (pip install hnswlib)")
    if hnswlib is not None:
        index = hnswlib.Index(space="ip", dim=args.dim)
        started = time.perf_counter()
        index.init_index(max_elements=n, M=args.m, ef_construction=args.ef_construction, random_seed=args.seed)
        index.add_items(matrix, np.arange(n))
        build = time.perf_counter() - started

        def hnsw_search(ef: int, batch: np.ndarray) -> np.ndarray:
            index.set_ef(ef)
            return index.knn_query(batch, k=k)[0]

        ef, tried = choose([64, 128, 256, 512, 1024], hnsw_search, queries[:tune], truth[:tune], args.target)
        print(f"hnswlib ef sweep (recall@10 on {tune} tuning queries): {', '.join(tried)} -> ef {ef}")
        index.set_ef(ef)
        started = time.perf_counter()
        labels, _ = index.knn_query(queries, k=k)
        qps = len(queries) / (time.perf_counter() - started)
        p50 = single_latency(lambda q: index.knn_query(q, k=k), latency_queries)
        rows.append((f"hnswlib M{args.m} efc{args.ef_construction} ef{ef}", build, qps, p50, recall(labels, truth)))
        del index

    try:
        import faiss
        if args.only == "hnswlib":
            faiss = None
    except ImportError:
        faiss = None
        print("faiss not installed: skipped (pip install faiss-cpu)")
    if faiss is not None:
        nlist = max(16, int(4 * np.sqrt(n)))
        quantizer = faiss.IndexFlatIP(args.dim)
        index = faiss.IndexIVFFlat(quantizer, args.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        started = time.perf_counter()
        train = matrix[rng.choice(n, min(n, 40 * nlist), replace=False)]
        index.train(train)
        index.add(matrix)
        build = time.perf_counter() - started

        def ivf_search(nprobe: int, batch: np.ndarray) -> np.ndarray:
            index.nprobe = nprobe
            return index.search(batch, k)[1]

        nprobe, tried = choose([32, 64, 128, 256, 512], ivf_search, queries[:tune], truth[:tune], args.target)
        print(f"faiss nprobe sweep (recall@10 on {tune} tuning queries): {', '.join(tried)} -> nprobe {nprobe}")
        index.nprobe = nprobe
        started = time.perf_counter()
        _, labels = index.search(queries, k)
        qps = len(queries) / (time.perf_counter() - started)
        p50 = single_latency(lambda q: index.search(q, k), latency_queries)
        rows.append((f"faiss IVF{nlist} nprobe{nprobe}", build, qps, p50, recall(labels, truth)))

    print(f"{'':26s} {'build s':>9s} {'batch q/s':>11s} {'1-query p50 ms':>15s} {'recall@10':>10s}")
    for name, build, qps, p50, rec in rows:
        print(f"{name:26s} {build:9.1f} {qps:11,.0f} {p50:15.3f} {rec:10.3f}")
    for name, _, qps, p50, rec in rows[1:]:
        print(f"{name}: {exact_p50 / p50:.0f}x exact's single-query p50, {qps / exact_qps:.1f}x its batch q/s")
        bar(f"{name.split()[0]} recall@10 vs exact", rec, f">= {args.target:g}", rec >= args.target)
        if name.startswith("hnswlib"):
            bar("hnswlib speed-up over exact (1-query p50)", exact_p50 / p50, ">= 10", exact_p50 / p50 >= 10)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
