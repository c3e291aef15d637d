"""`recall-kit judge --model` against an OpenAI-compatible server on 127.0.0.1: calls in flight.

The server (recall_kit_llm.testing.OpenAICompatibleServer, in this process) answers every chat
request after `--delay` seconds (200 ms), as a hosted model does; the judge reaches it through
llm's own OpenAI plugin (extra-openai-models.yaml with an `api_base`, in a temporary
LLM_USER_PATH), each run a whole `recall-kit judge` process with an empty cache:

1. `--concurrency 1`;
2. the default concurrency;
3. the default concurrency with every 10th request answered 429 (Retry-After 0.2 s).

`--pairs` (1,000) pairs of the shipped example dataset (100 queries x 10 memories). Printed: each
run's wall time, the ratio 1 / 2, the 429s served, and whether the three judgments files are
byte-identical. Only loopback traffic; every run makes a bounded number of requests.

    python benchmarks/bench_model_calls.py [--pairs 1000] [--delay 0.2]

Bars (exit 1 when missed): default concurrency >= 8x faster than --concurrency 1; the three
judgments files identical; every pair judged in the rate-limited run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MISSED: list[str] = []
SPEEDUP_BAR = 8.0


def bar(name: str, value: float, target: str, ok: bool) -> None:
    """One machine-readable line that run_all.py summarises."""
    print(f"BAR {name}: {value:.4g} (target {target}) {'PASS' if ok else 'FAIL'}")
    if not ok:
        MISSED.append(name)


def write_pool(folder: Path, pairs: int) -> tuple[Path, Path]:
    from recall_kit.dataset import load_dataset
    from recall_kit.testing import example_datasets

    data = example_datasets()["memories"]
    dataset = load_dataset(data)  # its memories as the judge sees them (no is_sensitive row)
    ids = list(dataset.corpus.ids)
    qids = [query.query_id for query in dataset.queries]
    per_query = 10
    rows, left = [], pairs
    for i, qid in enumerate(qids):
        if left <= 0:
            break
        take = min(per_query, left)
        rows.append({"query_id": qid, "doc_ids": [ids[(i * 7 + j) % len(ids)] for j in range(take)]})
        left -= take
    if left > 0:
        raise SystemExit(f"--pairs {pairs}: the example dataset gives at most {len(qids) * per_query}")
    pool = folder / "pool.jsonl"
    pool.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return pool, data


def judge(pool: Path, data: Path, out: Path, home: Path, concurrency: int | None) -> tuple[float, str]:
    env = {**os.environ, "LLM_USER_PATH": str(home), "RECALL_KIT_CACHE": str(out.parent / "cache"),
           "RECALL_KIT_PROGRESS_INTERVAL": "3600"}
    env.pop("OPENAI_API_KEY", None)
    command = [sys.executable, "-m", "recall_kit", "judge", str(pool), "-d", str(data), "--out", str(out),
               "--model", "bench-server", "--allow-remote", "-o", "llm.retry_wait=0.1"]
    if concurrency is not None:
        command += ["--concurrency", str(concurrency)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=3600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"judge failed ({done.returncode})")
    return elapsed, done.stderr


def main() -> int:
    from recall_kit_llm.calls import DEFAULT_CONCURRENCY
    from recall_kit_llm.testing import OpenAICompatibleServer, configure_llm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per answer")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}; {args.pairs} judgments, {args.delay * 1000:.0f} ms "
          f"a call; default concurrency {DEFAULT_CONCURRENCY}")
    with tempfile.TemporaryDirectory(prefix="recall-kit-bench-calls-") as temp:
        folder = Path(temp)
        pool, data = write_pool(folder, args.pairs)
        runs = {"concurrency 1": (1, None), "default": (None, None),
                "default, 10% answered 429": (None, lambda number: number % 10 == 0)}
        seconds: dict[str, float] = {}
        files: dict[str, bytes] = {}
        for name, (concurrency, limit) in runs.items():
            with OpenAICompatibleServer(delay=args.delay, rate_limit=limit, retry_after=0.2) as server:
                home = folder / f"home-{len(seconds)}"
                configure_llm(home, server.url, model_id="bench-server")
                out = folder / f"run-{len(seconds)}" / "qrels.jsonl"
                seconds[name], stderr = judge(pool, data, out, home, concurrency)
                files[name] = out.read_bytes()
                graded = sum(len(json.loads(line)["relevance"]) for line in files[name].decode().splitlines())
                cost = [line for line in stderr.splitlines() if line.startswith("judge:")]
                print(f"{name:28s} {seconds[name]:8.2f} s  {server.requests} requests, {server.rate_limited} "
                      f"answered 429, at most {server.most_in_flight} in flight, {graded} judgments")
                for line in cost:
                    print(f"    {line}")
                if limit is not None:
                    bar("rate-limited run: every pair judged", graded, f"== {args.pairs}", graded == args.pairs)
        ratio = seconds["concurrency 1"] / seconds["default"]
        bar("judge --concurrency 1 / default concurrency (wall time)", ratio, f">= {SPEEDUP_BAR}", ratio >= SPEEDUP_BAR)
        same = len(set(files.values())) == 1
        bar("judgments files byte-identical (1, default, with 429s)", float(same), "== 1", same)
    return 1 if MISSED else 0


if __name__ == "__main__":
    sys.exit(main())
