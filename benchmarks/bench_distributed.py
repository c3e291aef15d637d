"""A sweep run serially against the same sweep on Ray with 2 workers on this machine.

The dataset is synthetic (bench_lexical.py's seeded Zipf corpus, written as a dataset folder): 50,000
memories by default, and queries that copy 2-4 consecutive words of one memory, which is their one
relevant memory. The sweep is of bm25+fts5 (rrf) over leg options that re-index: bm25 k1 x b x
stemming and fts5 tokenizer x mode x content weight, 16 distinct leg configurations (8 per leg)
and 64 settings to fuse and score. Both runs write every result file; the files must be equal
apart from timings.

    python benchmarks/bench_distributed.py                    # 50,000 memories, 300 queries
    python benchmarks/bench_distributed.py --memories 5000    # a quick look

Bars (exit 1 when missed): Ray's wall time is at least 1.6x faster than the serial run's; every
result equals the serial one apart from timings. Each run's task times (leg searches, scoring) are
printed, so docs/scale.md's projection to N nodes can be redone from them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MISSED: list[str] = []
GRID = ["bm25.k1=1.2,1.5", "bm25.b=0.5,0.75", "bm25.stemming=false,true",
        "fts5.tokenizer=unicode61,porter", "fts5.mode=bm25,production", "fts5.content_weight=1,2"]
TIMINGS = {"latency", "latency_ms", "wall_seconds", "time", "build_seconds", "search_seconds",
           "fusion_seconds", "queries_per_second"}


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def write_dataset(folder: Path, memories: int, queries: int, seed: int) -> None:
    """corpus.jsonl, queries.jsonl and qrels.jsonl of a seeded synthetic set."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from bench_lexical import make_corpus

    corpus, _, _ = make_corpus(memories, seed)
    rng = np.random.default_rng(seed + 7)
    with (folder / "corpus.jsonl").open("w") as out:
        for memory in corpus:
            out.write(json.dumps({"id": memory.id, "content": memory.content, "category": memory.category,
                                  "tags": ",".join(memory.tags), "expanded_keywords": memory.expanded_keywords,
                                  "importance": memory.importance}) + "\n")
    rows = list(corpus)
    with (folder / "queries.jsonl").open("w") as text_out, (folder / "qrels.jsonl").open("w") as qrels_out:
        for number in range(queries):
            memory = rows[int(rng.integers(len(rows)))]
            words = memory.content.split()
            size = int(rng.integers(2, 5))
            start = int(rng.integers(0, max(1, len(words) - size)))
            query_id = f"q{number:04d}"
            stratum = "short" if size == 2 else "long"
            text_out.write(json.dumps({"query_id": query_id, "text": " ".join(words[start:start + size]),
                                       "stratum": stratum}) + "\n")
            qrels_out.write(json.dumps({"query_id": query_id, "relevant_ids": [memory.id]}) + "\n")


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def folder_results(folder: Path) -> dict[str, Any]:
    return {path.name: without_timings(json.loads(path.read_text())) for path in sorted(folder.glob("*.json"))}


def run(dataset_folder: Path, out: Path, executor: Any) -> tuple[float, Any]:
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.sweep import run_sweep
    from recall_kit.measure.systems.system import SystemSpec

    dataset = load_dataset(dataset_folder)  # serial in both runs: counted in both
    started = time.perf_counter()
    sweep = run_sweep(SystemSpec("bm25+fts5", ["rrf"]), dataset, GRID, "mrr@10", k=10,
                      metrics=["recall@10", "mrr@10"], out=out, n_resamples=200, latency_sample=0,
                      show_progress=False, executor=executor)
    return time.perf_counter() - started, sweep


def task_seconds(sweep: Any) -> tuple[list[float], list[float]]:
    """Per distinct leg configuration its index build seconds, and per setting its fusion-and-scoring
    seconds (the result's wall time, which excludes the shared leg searches)."""
    builds: dict[str, float] = {}
    for point in [sweep.default, *sweep.points]:
        for leg in point.result.system.legs:
            key = json.dumps([leg.name, leg.options], sort_keys=True)
            builds[key] = point.result.index.legs[leg.name].build_seconds
    scoring = [point.result.wall_seconds for point in [sweep.default, *sweep.points]]
    return list(builds.values()), scoring


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import ray

    from recall_kit.measure.run.executor import RayExecutor

    print(f"machine: {os.cpu_count()} CPUs, load {Path('/proc/loadavg').read_text().split()[:3]}")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "data").mkdir()
        started = time.perf_counter()
        write_dataset(root / "data", args.memories, args.queries, args.seed)
        print(f"dataset: {args.memories:,} memories, {args.queries} queries ({time.perf_counter() - started:.1f} s)")

        serial_seconds, serial = run(root / "data", root / "serial", None)
        builds, scoring = task_seconds(serial)
        print(f"serial: {serial_seconds:.1f} s; {serial.leg_searches} leg searches, {len(scoring)} settings; "
              f"leg index builds {sum(builds):.1f} s in all (mean {sum(builds) / len(builds):.2f} s, max "
              f"{max(builds):.2f} s); fusion and scoring {sum(scoring):.1f} s in all (mean "
              f"{sum(scoring) / len(scoring):.2f} s); the rest (leg searches' queries, the driver) "
              f"{serial_seconds - sum(builds) - sum(scoring):.1f} s")

        started = time.perf_counter()
        ray.init(num_cpus=args.workers, num_gpus=0, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        start_seconds = time.perf_counter() - started
        ray_seconds, _ = run(root / "data", root / "ray", RayExecutor())
        ray.shutdown()
        print(f"ray ({args.workers} workers): {ray_seconds:.1f} s (+ {start_seconds:.1f} s to start the local cluster)")
        print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")

        speedup = serial_seconds / ray_seconds
        bar(f"distributed sweep speed-up, {args.workers} Ray workers vs serial, "
            f"{args.memories:,} memories, {serial.leg_searches} leg settings", speedup, ">= 1.6x", speedup >= 1.6)
        same = folder_results(root / "serial") == folder_results(root / "ray")
        bar("distributed sweep results equal to serial (apart from timings)", float(same), "1", same)
    sys.exit(1 if MISSED else 0)


if __name__ == "__main__":
    main()
