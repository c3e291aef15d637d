"""Benchmark recall-kit-dense: embedding throughput of the plugin against calling
SentenceTransformer.encode directly on the same texts (same model object, batch size and
normalisation), and the latency of single-query search.

    python benchmarks/bench_dense.py [--texts 2000] [--batch-size 64] [--repeats 2] [--backend auto]

The plugin runs on `--backend` (`dense.backend`: auto, the default, is ONNX Runtime on a CPU;
torch is sentence-transformers, the same model object as the direct side); the direct side is
always sentence-transformers' `encode`, and the two sides' vectors must agree to 1e-5.

Exits 1 when the plugin's embedding overhead exceeds --max-overhead percent (default 10).
The texts are synthetic (seeded), so nothing private is read; the embedding cache is off.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

import numpy as np
from recall_kit_dense.retriever import DenseRetriever

from recall_kit.types import Corpus, Memory

WORDS = ["meeting", "dentist", "garden", "invoice", "flight", "sister", "coffee", "marathon", "printer", "passport", "recipe", "oven", "budget", "guitar", "school", "lease", "insurance", "doctor", "birthday", "holiday", "train", "ticket", "project", "deadline", "manager", "report", "server", "backup", "password", "laptop", "kitchen", "paint", "window", "plumber", "appointment", "groceries", "bakery", "tomato", "running", "knee", "physio", "weekend", "cabin", "lake", "camera", "battery", "charger", "moved", "booked", "cancelled", "prefers", "remember", "every", "monday", "friday", "morning", "evening", "before", "after", "the", "a", "of", "to", "and", "in", "on", "for", "with", "at", "from", "my", "our", "their", "is", "was", "will", "be", "needs", "should"]


def synthetic_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 60))) + "." for _ in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="Passes over all the texts.")
    parser.add_argument("--slice", type=int, default=250, help="Texts per interleaved pair.")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-overhead", type=float, default=10.0, help="Percent.")
    parser.add_argument("--backend", default="auto", choices=["auto", "onnx", "torch"], help="the plugin's dense.backend")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads for the whole run (default: torch's choice).")
    args = parser.parse_args()
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)

    texts = synthetic_texts(args.texts, seed=7)
    from recall_kit_dense.models import load_model, resolve_model

    options = DenseRetriever.Options(batch_size=args.batch_size, cache=False, device=args.device,
                                     fields=("content",), backend=args.backend)  # type: ignore[arg-type]
    retriever = DenseRetriever(options)
    # sentence-transformers' model: on torch, the very object the plugin encodes with.
    model = load_model(resolve_model(options.model), args.device).model

    # The two sides are timed in interleaved pairs over slices of the texts (which side goes
    # first alternates), so a change in machine load hits both alike. Each plugin slice is a
    # full build_index (texts from memories, the truncation count, the matrix), so per-build
    # costs are counted once per slice: more often than in one real build.
    slices = [texts[start:start + args.slice] for start in range(0, len(texts), args.slice)]
    corpora = [Corpus([Memory(str(start + i), text) for i, text in enumerate(part)])
               for start, part in zip(range(0, len(texts), args.slice), slices, strict=True)]

    def direct(index: int) -> np.ndarray:
        return model.encode(slices[index], batch_size=args.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    def plugin(index: int) -> np.ndarray:
        retriever.build_index(corpora[index])
        assert retriever.embeddings is not None
        return retriever.embeddings

    sides = [("direct", direct), ("plugin", plugin)]
    model.encode(texts[: args.batch_size], batch_size=args.batch_size)  # warm-up
    timings: dict[str, list[float]] = {name: [0.0] * args.repeats for name, _ in sides}
    pair = 0
    for repeat in range(args.repeats):
        for index in range(len(slices)):
            order = sides[pair % len(sides):] + sides[:pair % len(sides)]  # each side takes each turn
            pair += 1
            outputs = {}
            for name, function in order:
                started = time.perf_counter()
                outputs[name] = function(index)
                timings[name][repeat] += time.perf_counter() - started
            if not np.allclose(outputs["direct"], outputs["plugin"], atol=1e-5):
                print("plugin and direct embeddings differ", file=sys.stderr)
                return 2
    direct_seconds, plugin_seconds = sum(timings["direct"]), sum(timings["plugin"])
    direct_rate = args.texts * args.repeats / direct_seconds
    plugin_rate = args.texts * args.repeats / plugin_seconds
    overhead = (plugin_seconds / direct_seconds - 1.0) * 100.0

    queries = synthetic_texts(args.queries, seed=11)
    retriever.build_index(Corpus([Memory(str(i), text) for i, text in enumerate(texts)]))
    retriever.search(queries[0], args.k)  # warm-up
    latencies = []
    for query in queries:
        started = time.perf_counter()
        retriever.search(query, args.k)
        latencies.append((time.perf_counter() - started) * 1000.0)
    started = time.perf_counter()
    retriever.search_many(queries, args.k)
    batch_rate = len(queries) / (time.perf_counter() - started)

    import torch

    print(f"texts={args.texts} batch_size={args.batch_size} device={args.device} "
          f"torch_threads={torch.get_num_threads()} "
          f"model=all-MiniLM-L6-v2 passes={args.repeats} slice={args.slice} (interleaved pairs)")
    print(f"direct SentenceTransformer.encode : {direct_rate:8.1f} texts/s  "
          f"({', '.join(f'{t:.2f}s' for t in timings['direct'])})")
    print(f"plugin build_index ({retriever.index_stats()['backend']:5s})        : {plugin_rate:8.1f} texts/s  "
          f"({', '.join(f'{t:.2f}s' for t in timings['plugin'])})")
    print(f"plugin overhead                   : {overhead:+.1f}% (limit {args.max_overhead:.0f}%)")
    print(f"single-query search over {args.texts} memories, k={args.k}: "
          f"p50 {statistics.median(latencies):.2f} ms, p95 {np.percentile(latencies, 95):.2f} ms "
          f"({len(latencies)} queries)")
    print(f"search_many batch: {batch_rate:.1f} queries/s")
    if overhead > args.max_overhead:
        print(f"FAIL: plugin overhead {overhead:.1f}% exceeds {args.max_overhead:.0f}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
