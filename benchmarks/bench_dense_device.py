"""`dense.device=cuda` against the CPU: corpus embedding throughput, and the same recall.

Runs `recall-kit eval -r dense` on each dataset once per device (and per batch size asked for on
the GPU), each as a whole process with its own empty embedding cache (RECALL_KIT_CACHE points at a
fresh folder), so every run embeds the whole corpus and its queries: the throughput is what a user
waits for on a first run. From each result: the dense leg's build seconds and, of those, the
seconds embedding the corpus (`embed_seconds`, without the model load: memories per second), the batch search, the single-query p50, recall@5/@10, nDCG@10 and MRR. Each
GPU run is compared with the CPU run query by query: how many queries' top-10 ids (in order) and
metric values differ. The same memory texts are then embedded in this process on both devices
through the plugin, and the largest difference between the two sets of unit vectors is printed.

    python benchmarks/bench_dense_device.py [--dataset DIR ...] [--gpu cuda]
        [--gpu-batch-sizes 64,256] [--latency-sample 200] [--compare-texts 5000]

Bars (exit 1 when one is missed): GPU corpus embedding at least as fast as the CPU's (memories
per second, same batch size); recall@10 on the GPU within 0.005 of the CPU's on every dataset.
Exits 0 with a line saying so when torch sees no GPU (nothing measured).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from bench_eval import run

from recall_kit import BenchmarkResult, load_result

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}", flush=True)
    if not ok:
        MISSED.append(name)


def evaluate(dataset: Path, device: str, batch_size: int, sample: int, folder: Path) -> tuple[BenchmarkResult, float]:
    """One cold `eval -r dense` on `device` as its own process: (result, process wall seconds)."""
    label = f"{len(list(folder.iterdir()))}-{device.replace(':', '')}-b{batch_size}"
    cache = folder / f"cache-{label}"  # a fresh one per run: every run embeds the corpus
    env = {**os.environ, "RECALL_KIT_CACHE": str(cache), "RECALL_KIT_LOAD_PLUGINS": "recall-kit-dense"}
    out = folder / f"{label}.json"
    command = [sys.executable, "-m", "recall_kit", "eval", "--dataset", str(dataset), "--retriever", "dense",
               "-o", f"dense.device={device}", "-o", f"dense.batch_size={batch_size}",
               "-m", ",".join(METRICS), "-k", "10", "--latency-sample", str(sample),
               "--json", str(out), "--no-progress"]
    wall = run(command, env)  # bench_eval's: the process's wall time; its stderr and exit on a failure
    return load_result(out), wall


def describe(name: str, result: BenchmarkResult, wall: float) -> float:
    """Print one run's line; returns its corpus embedding rate (memories per second)."""
    leg = result.index.legs["dense"]
    memories = int(leg.stats.get("embedded_memories") or 0)
    seconds = float(leg.stats.get("embed_seconds") or 0.0)
    rate = memories / seconds if seconds else float("nan")
    means = "  ".join(f"{metric} {result.mean(metric):.4f}" for metric in METRICS)
    print(f"  {name:12s} process {wall:7.1f} s  build {leg.build_seconds:7.2f} s, of which embedding "
          f"{memories:,} memories {seconds:7.2f} s = {rate:8.1f}/s  batch search {result.throughput.search_seconds or 0.0:6.2f} s  "
          f"single-query p50 {result.latency.stat('p50'):6.2f} ms  {means}", flush=True)
    return rate


def agreement(base: BenchmarkResult, other: BenchmarkResult) -> str:
    """How many queries' top-10 rankings and metric values differ between two runs."""
    left, right = base.rankings(), other.rankings()
    ranked = sum(1 for query in left if left[query][:10] != right.get(query, [])[:10])
    parts = [f"top-10 differs on {ranked} of {len(left)} queries"]
    for metric in METRICS:
        a, b = base.per_query(metric), other.per_query(metric)
        moved = sum(1 for query in a if abs(a[query] - b[query]) > 1e-12)
        parts.append(f"{metric} moved on {moved}")
    return "; ".join(parts)


def vector_difference(dataset: Path, gpu: str, count: int) -> str:
    """Embed the dataset's first `count` memory texts through the plugin on the CPU and on `gpu`."""
    import numpy as np
    from recall_kit_dense.retriever import DenseRetriever

    from recall_kit import load_dataset
    from recall_kit.types import Corpus

    corpus = load_dataset(dataset).corpus
    sample = Corpus(list(corpus)[:count])
    matrices = []
    for device in ("cpu", gpu):
        retriever = DenseRetriever(DenseRetriever.Options(device=device, cache=False))
        retriever.build_index(sample)
        assert retriever.embeddings is not None
        matrices.append(np.array(retriever.embeddings))
    cpu, other = matrices
    cosine = (cpu * other).sum(axis=1)
    return (f"{len(sample):,} memories embedded on both: largest |difference| {np.abs(cpu - other).max():.2e}, "
            f"smallest cosine {cosine.min():.8f}")


def _sizes(text: str) -> list[int]:
    """`--gpu-batch-sizes`: whole numbers of at least 1, comma-separated (argparse names a bad one)."""
    try:
        sizes = [int(size) for size in text.split(",") if size.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers") from None
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: batch sizes must be at least 1")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, action="append",
                        help="a dataset folder; repeat for more (default: examples/memories)")
    parser.add_argument("--gpu", default="cuda", help="the device compared with cpu (cuda, cuda:N, mps)")
    parser.add_argument("--batch-size", type=int, default=64, help="the plugin's default, on both devices")
    parser.add_argument("--gpu-batch-sizes", type=_sizes, default=[], help="more batch sizes tried on the GPU, e.g. 256,1024")
    parser.add_argument("--latency-sample", type=int, default=200, help="queries timed alone per run")
    parser.add_argument("--compare-texts", type=int, default=5000, help="memories embedded on both in-process")
    args = parser.parse_args()
    import torch

    if args.gpu.startswith("cuda") and not torch.cuda.is_available():
        print(f"torch {torch.__version__} sees no CUDA GPU: nothing measured (dense.device=cuda untested here)")
        return 0
    name = torch.cuda.get_device_name(0) if args.gpu.startswith("cuda") else args.gpu
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs (torch {torch.get_num_threads()} threads), load average {load:.2f}; "
          f"torch {torch.__version__}; GPU: {name}", flush=True)
    extra = args.gpu_batch_sizes
    datasets = args.dataset or [ROOT / "examples" / "memories"]
    with tempfile.TemporaryDirectory() as scratch:
        for dataset in datasets:
            print(f"{dataset}:", flush=True)
            cpu, wall = evaluate(dataset, "cpu", args.batch_size, args.latency_sample, Path(scratch))
            cpu_rate = describe(f"cpu b{args.batch_size}", cpu, wall)
            for size in [args.batch_size, *extra]:
                result, wall = evaluate(dataset, args.gpu, size, args.latency_sample, Path(scratch))
                rate = describe(f"{args.gpu} b{size}", result, wall)
                print(f"    against cpu b{args.batch_size}: {rate / cpu_rate:.2f}x the embedding rate; "
                      f"{agreement(cpu, result)}", flush=True)
                if size == args.batch_size:
                    bar(f"{dataset.name}: corpus embedding {args.gpu} / cpu, batch {size}", rate / cpu_rate,
                        ">= 1", rate >= cpu_rate)
                    gap = abs(result.mean("recall@10") - cpu.mean("recall@10"))
                    bar(f"{dataset.name}: |recall@10 {args.gpu} - cpu|", gap, "<= 0.005", gap <= 0.005)
            print(f"    {vector_difference(dataset, args.gpu, args.compare_texts)}", flush=True)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
