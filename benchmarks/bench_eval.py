"""End-to-end evaluation cost: `recall-kit eval` of fts5+bm25+dense+graph --fusion rrf on a
synthetic dataset, with a warm embedding cache; the share of the wall time that is not the
retrievers' own work; and the hybrid's single-query latency.

The dense leg embeds queries with `-o dense.backend=onnx` when onnxruntime is installed
(`--dense-backend torch` for the torch path), one intra-op thread for single queries.

Steps: `recall-kit dataset synth` (6,000 memories, 2,000 queries), one eval to warm the
embedding cache (RECALL_KIT_CACHE points at a temporary folder), then the timed eval. From its
result JSON:

    retriever work = index build_seconds + search_seconds (batch) + sum of the legs' single-query
                     latencies (latency_ms.legs.<leg>.mean * n) + each leg's untimed first query
                     (latency_ms.legs.<leg>.first_query_ms: the dense leg starts its ONNX session
                     there, ~0.2-0.5 s of the leg's own work)
    overhead       = wall_seconds - retriever work   (fusion, scoring, attribution, checks)

The process wall time (start-up, dataset load and JSON writing included) is printed too.

    python benchmarks/bench_eval.py [--memories 6000] [--queries 2000] [--profile out.prof] [-o fts5.ranking=sqlite]

Bars (exit 1 when missed): overhead share < 10% of wall_seconds; hybrid p50 < 8 ms, p95 < 15 ms
(issue 30; the fts5 leg ranks with `fts5.ranking=numpy`, its default).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recall_kit import load_result

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = "recall-kit-fts5,recall-kit-bm25,recall-kit-dense,recall-kit-graph,recall-kit-fusion"
SYSTEM = "fts5+bm25+dense+graph"
MISSED: list[str] = []


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def run(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"command failed ({done.returncode}): {' '.join(command[:6])} ...")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=6000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="same sizes (the bar is stated at them)")
    parser.add_argument("--profile", type=Path, help="also cProfile the timed eval into this file")
    parser.add_argument("--cache", type=Path, help="embedding cache folder to keep (default: a temporary one)")
    parser.add_argument("--dense-backend", choices=("auto", "torch", "onnx"), default="auto",
                        help="the dense leg's query path (auto: onnx when onnxruntime is installed)")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="one more leg option for both evals (e.g. fts5.ranking=sqlite: the old fts5 path)")
    args = parser.parse_args()
    backend = args.dense_backend
    if backend == "auto":
        try:
            import onnxruntime  # noqa: F401

            backend = "onnx"
        except ImportError:
            backend = "torch"

    with tempfile.TemporaryDirectory(prefix="recall-kit-bench-eval-") as temporary:
        folder = Path(temporary)
        env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": PLUGINS, "RECALL_KIT_CACHE": str(args.cache or folder / "cache")}
        python = sys.executable
        data = folder / "data"
        run([python, "-m", "recall_kit", "dataset", "synth", str(data), "--memories", str(args.memories),
             "--queries", str(args.queries), "--seed", str(args.seed)], env)
        eval_command = [python, "-m", "recall_kit", "eval", "--dataset", str(data), "--retriever", SYSTEM,
                        "--fusion", "rrf", "--no-progress", "--report", "json", "-o", f"dense.backend={backend}",
                        *[part for option in args.option for part in ("-o", option)]]
        cold = run([*eval_command, "--json", str(folder / "cold.json"), "--output", str(folder / "r0")], env)
        timed = eval_command
        if args.profile:
            timed = [python, "-m", "cProfile", "-o", str(args.profile), "-m", "recall_kit", *eval_command[3:]]
        process = run([*timed, "--json", str(folder / "warm.json"), "--output", str(folder / "r1")], env)
        result = load_result(folder / "warm.json")

    wall = result.wall_seconds
    build = result.index.build_seconds or 0.0
    search = result.throughput.search_seconds or 0.0
    legs_latency = result.latency.legs
    single = sum(leg.stat("mean") * leg.n for leg in legs_latency.values()) / 1000.0
    first = sum(leg.first_query_ms or 0.0 for leg in legs_latency.values()) / 1000.0
    work = build + search + single + first
    overhead = wall - work
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"dense query path: {backend}, 1 intra-op thread (dense.threads); load average {load:.2f} at the end"
          + (f"; options {' '.join(args.option)}" if args.option else ""))
    print(f"eval {SYSTEM} --fusion rrf: {result.dataset.memories} memories, "
          f"{result.dataset.queries} queries; cold-cache run {cold:.1f} s (process)")
    print(f"warm run: process {process:.2f} s, wall_seconds {wall:.2f} s")
    print(f"  index build   {build:7.2f} s  " + ", ".join(
        f"{name} {leg.build_seconds:.2f}" for name, leg in result.index.legs.items()))
    print(f"  batch search  {search:7.2f} s")
    print(f"  single-query  {single:7.2f} s  ({next(iter(legs_latency.values())).n} queries x legs)")
    print(f"  first queries {first:7.2f} s  (untimed cold starts: " + ", ".join(
        f"{name} {(leg.first_query_ms or 0.0) / 1000.0:.2f}" for name, leg in legs_latency.items()) + ")")
    print(f"  fusion        {result.throughput.fusion_seconds or 0.0:7.2f} s (part of the overhead)")
    print(f"  overhead      {overhead:7.2f} s  = {overhead / wall:.1%} of wall_seconds")
    print(f"  outside wall_seconds (start-up, load, JSON): {process - wall:.2f} s")
    latency = result.latency
    print(f"hybrid single-query latency: p50 {latency.stat('p50'):.2f} ms, p95 {latency.stat('p95'):.2f} ms, "
          f"p99 {latency.stat('p99'):.2f} ms (n={latency.n})")
    for name, leg in legs_latency.items():
        print(f"  {name:6s} p50 {leg.stat('p50'):7.2f} ms  p99 {leg.stat('p99'):7.2f} ms")
    means = {stratum: result.means(stratum) for stratum in [None, *result.strata]}
    print("recall@10 overall " + f"{means[None].get('recall@10', float('nan')):.3f}; per stratum " + ", ".join(
        f"{s} {means[s].get('recall@10', float('nan')):.3f}" for s in result.strata))
    bar("eval overhead share", overhead / wall, "< 0.10", overhead / wall < 0.10)
    bar("hybrid latency p50 ms", latency.stat("p50"), "< 8", latency.stat("p50") < 8)
    bar("hybrid latency p95 ms", latency.stat("p95"), "< 15", latency.stat("p95") < 15)
    print(f"(hybrid latency p99 {latency.stat('p99'):.2f} ms: reported, no bar)")
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
